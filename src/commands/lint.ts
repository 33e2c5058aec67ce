/**
 * The `lint` command: holds every tool of a valid manifest to the design rules for names, descriptions and
 * argument schemas (src/manifest/lint.ts), one line per finding; `--strict` makes a finding fail the run, for CI.
 *
 * @module
 */
import { type Command, EXIT, expectPositionals, flag, type Io } from "./cli.ts";
import type { Manifest } from "../manifest/manifest.ts";
import { loadForCommand, manifestPath } from "./load.ts";

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
 * import { reportLint } from "./lint.ts";
 * import { validateManifest } from "../manifest/manifest.ts";
 * import { processIo } from "./process_io.ts";
 * const loaded = validateManifest({ tools: [{ name: "helper", command: ["./tools/bin/h"] }] }, "/srv/tools.json");
 * if (loaded.ok) await reportLint(loaded.manifest, "/srv/tools.json", processIo(), true); // 1
 * ```
 */
export async function reportLint(manifest: Manifest, path: string, io: Io, strict: boolean): Promise<number> {
  // The rules load when a lint runs: no other command pays for them.
  const { formatFinding, lintSummary, lintTools } = await import("../manifest/lint.ts");
  const findings = lintTools(manifest.tools);
  const lines = [...findings.map(formatFinding), lintSummary(path, findings, manifest.tools.length)];
  await io.stdout(lines.join("\n") + "\n");
  return strict && findings.length > 0 ? EXIT.failure : EXIT.ok;
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
