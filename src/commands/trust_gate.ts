/**
 * The trust gate of the commands that run tools (`call`, the agent loop, `serve`, `worker`): a manifest found in
 * the workspace or above it runs only once the user trusted that exact content. A new or changed one is announced
 * with what changed, and then either trusted by a `y` at the terminal or refused, naming `toolgate trust`.
 *
 * @module
 */
import { CommandFailure, type Io } from "./cli.ts";
import { terminalReadLine } from "../policy/ask.ts";
import { type ManifestLocation, needsTrust } from "../manifest/manifest_location.ts";
import { stateRoot } from "../state/state.ts";
import { type ManifestContent, NOT_COVERED, readManifestContent } from "../manifest/trust.ts";
import { describeChanges } from "../manifest/trust_changes.ts";
import { readTrustRecord, type TrustRecord, writeTrustRecord } from "../manifest/trust_record.ts";
import { keepDigests, readKnownDigests } from "../manifest/trust_digests.ts";

/**
 * A manifest whose tools do not run because the user has not trusted its content: `call` answers it with an
 * envelope, every other command with its one line and exit code 1.
 */
export class UntrustedManifest extends CommandFailure {
  constructor(message: string, readonly denied: boolean) {
    super(message);
    this.name = "UntrustedManifest";
  }
}

/** What the gate found: nothing to check (named by the user, or toolgate's own), or trusted content. */
export type GateResult = { readonly checked: false } | {
  readonly checked: true;
  readonly content: ManifestContent;
};

/**
 * What a refusal says changed in a trusted manifest: the programs, when only programs changed (which, and whose),
 * else the manifest and its first changes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { changedSubject } from "./trust_gate.ts";
 * assert.equal(
 *   changedSubject("/p/tools.json", ["~ t: program /p/tools/bin/t changed (sha256:1 -> sha256:2)"]),
 *   "the program /p/tools/bin/t of the tool t changed since the manifest /p/tools.json was trusted",
 * );
 * assert.equal(
 *   changedSubject("/p/tools.json", ["- removed a"]),
 *   "the manifest /p/tools.json changed since it was trusted (removed a)",
 * );
 * ```
 */
export function changedSubject(path: string, changes: readonly string[]): string {
  const programs = changes.map((line) => /^~ (.+): program (.+) changed \(/.exec(line));
  if (changes.length > 0 && programs.every((match) => match !== null)) {
    const named = programs.map((match) => `${match![2]} of the tool ${match![1]}`).join(", ");
    return `the program${
      programs.length === 1 ? "" : "s"
    } ${named} changed since the manifest ${path} was trusted`;
  }
  const shown = changes.slice(0, 3).map((line) => line.replace(/^[~+-] /, "")).join("; ");
  const more = changes.length > 3 ? `; and ${changes.length - 3} more` : "";
  return `the manifest ${path} changed since it was trusted${shown === "" ? "" : ` (${shown}${more})`}`;
}

/**
 * The announcement of an untrusted manifest: the header, then what changed (or every tool and server, with the
 * code each names, when new), then what trusting it cannot cover.
 */
export function announcement(
  path: string,
  record: TrustRecord | undefined,
  content: ManifestContent,
): string[] {
  const changes = describeChanges(record?.summary, content.summary).map((line) => `  ${line}`);
  const caveat = `  (${NOT_COVERED})`;
  if (record === undefined) {
    const count = content.summary.tools.length;
    return [
      `toolgate: ${path} is a manifest you have not trusted; its ${count} tool${
        count === 1 ? "" : "s"
      } would run:`,
      ...changes,
      caveat,
    ];
  }
  return [`toolgate: ${path} changed since you trusted it (${record.trustedAt}):`, ...changes, caveat];
}

/**
 * Passes a manifest that needs no trust, or whose content the user trusted; otherwise announces it on stderr and,
 * when `ask` and a person is at the terminal, asks; a `y` trusts it. Throws {@linkcode UntrustedManifest} when the
 * tools must not run. `workspace`: where the tools and servers run (a relative path their command lines name is
 * looked for there too).
 */
export async function passGate(
  location: ManifestLocation,
  io: Io,
  ask: boolean,
  workspace: string = io.cwd,
): Promise<GateResult> {
  if (!needsTrust(location)) return { checked: false };
  const state = stateRoot(io.env);
  let known: ReadonlyMap<string, string> = new Map();
  const content = await readManifestContent(location.path, (realPath) => {
    known = readKnownDigests(state, realPath);
    return known;
  }, { workspace });
  if (content === undefined) {
    throw new CommandFailure(`cannot read the manifest ${location.path}`);
  }
  const record = readTrustRecord(state, content.realPath);
  if (record?.digest === content.digest) {
    // Kept for trusted content only: an untrusted manifest leaves nothing in the state folder.
    keepDigests(state, content.realPath, known, content.digests);
    return { checked: true, content };
  }
  await io.stderr(announcement(location.path, record, content).join("\n") + "\n");
  const subject = record === undefined
    ? `the manifest ${location.path} is not trusted yet`
    : changedSubject(location.path, describeChanges(record.summary, content.summary));
  if (ask && io.interactive) {
    const line = await terminalReadLine(io.stderr)("Trust it and run its tools? [y/N]: ");
    if (line !== null && ["y", "yes"].includes(line.trim().toLowerCase())) {
      writeTrustRecord(state, content, new Date());
      await io.stderr(`toolgate: trusted ${location.path}\n`);
      return { checked: true, content };
    }
    throw new UntrustedManifest(`${subject}, and the user did not trust it: none of its tools ran`, true);
  }
  throw new UntrustedManifest(
    `${subject}, so none of its tools ran; check it, then run \`toolgate trust\` to trust it`,
    false,
  );
}
