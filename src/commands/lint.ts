/**
 * The `lint` command: holds every tool of a valid manifest to the design rules for names, descriptions and
 * argument schemas (src/manifest/lint.ts), one line per finding; `--strict` makes a finding fail the run, for CI.
 *
 * @module
 */
import { type Command, EXIT, expectPositionals, flag, type Io } from "./cli.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import { loadForCommand, manifestPath } from "./load.ts";
import type { PinSet } from "../manifest/pins.ts";
import { stateRoot } from "../state/state.ts";

/**
 * The `--strict` option, shared by `lint` and `validate`.
 *
 * @example
 * ```ts
 * import { STRICT_OPTION } from "./lint.ts";
 * const options = { strict: STRICT_OPTION };
 * ```
 */
export const STRICT_OPTION = {
  type: "boolean",
  help: "exit 1 when there is any finding (for CI)",
} as const;

/**
 * Prints the lint's findings and its summary line on stdout; the exit code is 1 with `strict` and a finding, else 0.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { reportLint } from "./lint.ts";
 * import { validateManifest } from "../manifest/manifest.ts";
 * import { processIo } from "./process_io.ts";
 * const loaded = validateManifest({ tools: [{ name: "helper", command: ["./tools/bin/h"] }] }, "/srv/tools.json");
 * assert.ok(loaded.ok);
 * assert.equal(await reportLint(loaded.manifest, "/srv/tools.json", processIo(), true), 1); // findings, and strict
 * ```
 */
export async function reportLint(manifest: Manifest, path: string, io: Io, strict: boolean): Promise<number> {
  // The rules load when a lint runs: no other command pays for them.
  const { formatFinding, lintSummary, lintTools, lintUpstream } = await import("../manifest/lint.ts");
  const pins = await pinsOf(manifest, io);
  const findings = [...lintTools(manifest.tools), ...lintUpstream(pins)];
  const count = manifest.tools.length +
    // A prompt's or resource's pin (`prompt:NAME`, `resource:URI`: manifest/offer_names.ts) is linted, not counted.
    Object.values(pins).reduce(
      (n, tools) => n + Object.keys(tools).filter((key) => !key.includes(":")).length,
      0,
    );
  const lines = [...findings.map(formatFinding), lintSummary(path, findings, count)];
  await io.stdout(lines.join("\n") + "\n");
  return strict && findings.length > 0 ? EXIT.failure : EXIT.ok;
}

/**
 * The manifest's MCP servers' tool definitions as the user pinned them (`toolgate trust`): lint reads them rather
 * than starting the servers. None without servers, pins or a state folder.
 */
async function pinsOf(manifest: Manifest, io: Io): Promise<PinSet> {
  if ((manifest.servers ?? []).length === 0) return {};
  const { readPins } = await import("../manifest/pins.ts");
  try {
    const pins = readPins(stateRoot(io.env), Deno.realPathSync(manifest.path));
    const names = new Set(manifest.servers!.map((server) => server.name));
    return Object.fromEntries(Object.entries(pins).filter(([server]) => names.has(server)));
  } catch (error) {
    await io.stderr(
      `toolgate: warning: the pinned MCP tool definitions cannot be read: ${(error as Error).message}\n`,
    );
    return {};
  }
}

/** `toolgate lint` */
export const lintCommand: Command = {
  name: "lint",
  summary: "check the tools against the design rules for names, descriptions and schemas",
  usage: "toolgate lint [--strict] [--tools PATH]",
  options: { strict: STRICT_OPTION },
  details: [
    'Prints one line per finding (tool[i] "NAME": RULE: message), then a summary line; the rules are in the',
    "lint table of docs/manifest.md. Exit 0 with or without findings, 1 with --strict and a finding or for an invalid manifest.",
  ].join("\n"),
  async run(parsed, io) {
    // A stray word is a mistake (a misspelled flag, a path without --tools), not something to ignore.
    expectPositionals(parsed, 0, "lint");
    const manifest = await loadForCommand(parsed, io, { compileSchemas: true });
    if (!manifest) return EXIT.failure;
    return await reportLint(manifest, manifestPath(parsed, io), io, flag(parsed, "strict"));
  },
};
