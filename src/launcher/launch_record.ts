/**
 * The warm path's records: the launcher's decision for one command (the exact command line of the main runtime, and
 * the variables it adds), kept in toolgate's state (`<state>/launch`, a 0700 folder of 0600 files that the sandbox
 * never shows a tool) so that the installed command's shell front end can start that runtime directly the next
 * time, without a launcher runtime in front.
 *
 * A record is found by the digest of the inputs the shell can name itself (see {@linkcode keyDigest}): toolgate's
 * build, the runtime, the physical working folder, the {@linkcode LAUNCH_VARS} (set or not, and their values) and
 * the command line. It holds the files the decision read or looked for (the manifest and the folders searched for
 * one, the profiles, the trust record, the programs and what they need, the helper programs on PATH, the runtime
 * and the bundle), and a MAC keyed by a secret in the same folder over all of it together with what `stat -L` says
 * of those files at the moment of use: a file that changed, appeared or went away, a record edited or cut short, is
 * a miss, and the shell takes the cold path, which records the decision again.
 *
 * What the launcher read is traced while it plans ({@linkcode traceReads}), not listed by hand: a variable outside
 * {@linkcode LAUNCH_VARS}, the whole environment, a file the shell cannot check (under /proc, /sys, /dev), a file
 * changed within the last second (a change in the same tick would not show), or a run that picks a fresh
 * egress-proxy socket means no record: every later run of that command takes the cold path.
 *
 * @module
 */
import { isAbsolute, join, resolve } from "../base/paths.ts";
import { sha256Hex } from "../base/sha256_hex.ts";
import { ensurePrivateDir } from "../state/private_dir.ts";
import type { TracedReads } from "./read_trace.ts";

import { createNew, readPrivateText, writePrivateText } from "../state/private_file.ts";
import { stateRoot } from "../state/state.ts";

/** The record format's version, the first item of every key. */
export const LAUNCH_FORMAT = "toolgate-launch-3";

/**
 * The variables the launch decision may read, in the key's order: the shell front end puts each one (set or not,
 * and its value) into the key. A run whose launcher reads any other is never recorded.
 */
export const LAUNCH_VARS: readonly string[] = [
  "PATH",
  "HOME",
  "XDG_STATE_HOME",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "INIT_CWD",
  "TOOLGATE_TOOLS",
  "TOOLGATE_CGROUP",
  "TOOLGATE_POOL_KEY_FILE",
  "OPENAI_BASE_URL",
  "OAI_BASE_URL",
  "OPENAI_API_BASE",
  "NATS_URL",
  "NATS_CREDS",
  "NATS_CREDS_FILE",
  "NATS_NKEY",
  "NATS_NKEY_FILE",
  "NATS_TLS_CERT",
  "NATS_TLS_KEY",
  "NATS_TLS_CA",
  // The OTLP endpoint's host is granted --allow-net when these name one.
  "OTEL_SDK_DISABLED",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/** What `stat -L -c` prints for each file, in the shell and in the launcher alike. */
export const STAT_FORMAT = "%n|%d|%i|%f|%u|%h|%s|%Y|%Z";

/**
 * What `stat -L -c` prints for a path whose content the decision never read (a folder resolved or searched, a
 * program looked for on PATH): which file it is and its mode, not its times, so that a workspace whose files change
 * keeps its record.
 */
export const IDENTITY_FORMAT = "%n|%d|%i|%f|%u";

/**
 * How recent a change to a file the decision read may be for the decision to be recorded: file times come from a
 * coarse clock (a tick of some milliseconds), so a change in the tick in which the file was read could look older
 * than the read. A second is many ticks.
 */
export const FRESH_MS = 1000;

/** The variables the shell front end passes to the launcher on a miss (and the launcher removes). */
export const WARM_ENV = {
  build: "TOOLGATE_LAUNCH_BUILD",
  runtime: "TOOLGATE_LAUNCH_DENO",
  dir: "TOOLGATE_LAUNCH_DIR",
} as const;

/** What the shell asks the launcher to record under. */
export interface WarmRequest {
  readonly build: string;
  readonly runtime: string;
  readonly dir: string;
}

/**
 * The warm-path request the shell front end passed, removed from the environment (the main runtime never sees
 * it); `undefined` when there is none or its folder is not toolgate's `<state>/launch`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { takeWarmRequest } from "./launch_record.ts";
 * const env: Record<string, string> = { HOME: "/home/me" };
 * assert.equal(takeWarmRequest(env), undefined); // the command was not started by the installed front end
 * ```
 */
export function takeWarmRequest(env: Record<string, string>, live = false): WarmRequest | undefined {
  const build = env[WARM_ENV.build];
  const runtime = env[WARM_ENV.runtime];
  const dir = env[WARM_ENV.dir];
  for (const name of Object.values(WARM_ENV)) {
    delete env[name];
    if (live) Deno.env.delete(name);
  }
  if (!build || !runtime || !dir) return undefined;
  let expected: string;
  try {
    expected = join(stateRoot(env), "launch");
  } catch {
    return undefined;
  }
  return resolve(dir) === expected ? { build, runtime, dir: expected } : undefined;
}

/** The key's items, in order: what the shell front end prints, each followed by a NUL, into `sha256sum`. */
export function keyItems(
  request: WarmRequest,
  cwd: string,
  env: Readonly<Record<string, string>>,
  argv: readonly string[],
): string[] {
  return [
    LAUNCH_FORMAT,
    request.build,
    request.runtime,
    cwd,
    ...LAUNCH_VARS.map((name) => env[name] === undefined ? "" : `=${env[name]}`),
    String(argv.length),
    ...argv,
  ];
}

const encoder = new TextEncoder();

function nulJoined(items: readonly string[]): Uint8Array {
  return encoder.encode(items.map((item) => `${item}\0`).join(""));
}

/**
 * The record's file name: the SHA-256 of the key's items, each followed by a NUL (as the shell computes it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keyDigest } from "./launch_record.ts";
 * const name = await keyDigest(["toolgate-launch-1", "call"]);
 * assert.match(name, /^[0-9a-f]{64}$/);
 * ```
 */
export function keyDigest(items: readonly string[]): Promise<string> {
  return sha256Hex(nulJoined(items));
}

/** The decision to record: the main runtime's whole command line, the variables added, what was read. */
export interface LaunchDecision {
  /** The runtime's path, then its arguments up to (and with) the entry; the user's arguments follow. */
  readonly prefix: readonly string[];
  /** Variables set for the main runtime besides the inherited ones. */
  readonly env: Readonly<Record<string, string>>;
  readonly reads: TracedReads;
  /** Files the decision depends on beside those read (the runtime, toolgate's code). */
  readonly extraPaths: readonly string[];
  /** When planning began (ms since the epoch): files changed since are too fresh to be trusted unchanged. */
  readonly plannedAt: number;
}

/**
 * The reason a decision cannot be recorded, or the record's lines (without the MAC) and the files to stat (`P`
 * lines: content; `I` lines: identity only).
 */
export function recordBody(
  decision: LaunchDecision,
  cwd: string,
  inherited: Readonly<Record<string, string>>,
): { ok: true; body: string; paths: string[]; looked: string[] } | { ok: false; reason: string } {
  const { reads } = decision;
  if (reads.unrecordable.length > 0) return { ok: false, reason: reads.unrecordable[0] };
  const known = new Set(LAUNCH_VARS);
  const unknown = [...reads.vars].filter((name) => !known.has(name));
  if (unknown.length > 0) return { ok: false, reason: `it reads ${unknown.join(", ")}` };
  const paths = [...new Set([...reads.paths, ...decision.extraPaths].map((path) => resolve(cwd, path)))]
    .sort();
  const looked = [...new Set([...reads.looked].map((path) => resolve(cwd, path)))]
    .filter((path) => !paths.includes(path)).sort();
  // What the shell reads line by line, or splits on newlines, must hold none; an empty argument would vanish.
  const plain = (text: string) => !text.includes("\n") && !text.includes("\0");
  for (const path of [...paths, ...looked]) {
    if (!isAbsolute(path) || !plain(path)) {
      return { ok: false, reason: `a path the shell cannot stat: ${path}` };
    }
    if (/^\/(proc|sys|dev)(\/|$)/.test(path)) return { ok: false, reason: `it reads ${path}` };
  }
  for (const arg of decision.prefix) {
    if (arg === "" || !plain(arg)) return { ok: false, reason: "an argument the shell cannot pass" };
  }
  const lines = decision.prefix.map((arg) => `A ${arg}`);
  for (const [name, value] of Object.entries(decision.env)) {
    if (value === inherited[name]) continue;
    if (!/^TOOLGATE_[A-Z_]+$/.test(name) || !plain(value)) return { ok: false, reason: `it sets ${name}` };
    lines.push(`E ${name}=${value}`);
  }
  lines.push(...paths.map((path) => `P ${path}`), ...looked.map((path) => `I ${path}`));
  return { ok: true, body: lines.map((line) => `${line}\n`).join(""), paths, looked };
}

/**
 * What `stat -L -c STAT_FORMAT` (`content`) or `IDENTITY_FORMAT` prints for `paths`, made here from the same stat(2)
 * fields (nothing for a file that is not there): the launcher starts no stat(1) of its own, which cost two
 * processes beside the main runtime's start on every cold run. `undefined` when a field is missing. A file's
 * change is seen in its ctime, which nobody can set back, in whole seconds: a record is never made of a file
 * changed within {@linkcode FRESH_MS} of planning, so any later change falls in a later second.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { statText } from "./launch_record.ts";
 * assert.equal(statText(["/nonexistent"], true), ""); // nothing for a file that is not there
 * ```
 */
export function statText(paths: readonly string[], content: boolean): string | undefined {
  let text = "";
  for (const path of paths) {
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(path);
    } catch {
      continue;
    }
    if (info.mode === null || info.mtime === null || info.ctime === null) return undefined;
    text += `${path}|${info.dev}|${info.ino}|${info.mode.toString(16)}|${info.uid}`;
    if (content) {
      const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
      text += `|${info.nlink}|${info.size}|${seconds(info.mtime)}|${seconds(info.ctime)}`;
    }
    text += "\n";
  }
  return text;
}

/** The folder's MAC key (64 hex digits), made on first use. */
function launchKey(dir: string): string {
  const path = join(dir, "key");
  const what = "the launch records' key";
  const existing = readPrivateText(path, what);
  if (existing !== undefined) return existing.trim();
  const key = crypto.getRandomValues(new Uint8Array(32)).toHex();
  const file = createNew(path, { read: true }, (file) => {
    file.writeSync(encoder.encode(`${key}\n`));
    file.syncSync();
  });
  if (file === undefined) return (readPrivateText(path, what) ?? "").trim();
  file.close();
  return key;
}

/**
 * The MAC of a record: the SHA-256 of the key's items, the secret, the body and what `stat` says of its files, then
 * the secret again, each of the first three followed by a NUL (as the shell computes it).
 */
export function recordMac(
  items: readonly string[],
  secret: string,
  body: string,
  stat: string,
): Promise<string> {
  return sha256Hex(
    encoder.encode(`${items.map((item) => `${item}\0`).join("")}${secret}\0${body}\0${stat}${secret}\0`),
  );
}

/**
 * Records `decision` for the command `argv` typed in `cwd` with `env`, if it can be; returns why not otherwise.
 * Never throws: a run that cannot be recorded is only a run that stays cold.
 */
export async function recordLaunch(
  request: WarmRequest,
  decision: LaunchDecision,
  cwd: string,
  env: Readonly<Record<string, string>>,
  argv: readonly string[],
): Promise<string | undefined> {
  try {
    const body = recordBody(decision, cwd, env);
    if (!body.ok) return body.reason;
    // A file changed in the same tick as (or after) it was read would look unchanged: such a run is not recorded.
    // Checked before the stat text is made, so a file changed between the two is caught by one or the other.
    for (const path of [...body.paths, ...body.looked]) {
      try {
        const info = Deno.statSync(path);
        const changed = Math.max(info.mtime?.getTime() ?? Infinity, info.ctime?.getTime() ?? Infinity);
        if (changed >= decision.plannedAt - FRESH_MS) return `${path} changed just now`;
      } catch {
        // Not there: its coming would show.
      }
    }
    const content = statText(body.paths, true);
    const identity = statText(body.looked, false);
    if (content === undefined || identity === undefined) return "a file's times or mode cannot be read";
    const stat = content + identity;
    ensurePrivateDir(request.dir, stateRoot(env));
    const items = keyItems(request, cwd, env, argv);
    const mac = await recordMac(items, launchKey(request.dir), body.body, stat);
    writePrivateText(join(request.dir, await keyDigest(items)), `${mac}\n${body.body}`);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
