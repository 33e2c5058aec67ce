/** The `validate` command: checks every rule of the manifest and compiles every schema; `--lint` lints it too. @module */
import { type Command, EXIT, expectPositionals, flag } from "./cli.ts";
import { reportLint, STRICT_OPTION } from "./lint.ts";
import { loadForCommand, manifestPath } from "./load.ts";

/** `toolgate validate` */
export const validateCommand: Command = {
  name: "validate",
  summary: "check the manifest: every rule, every schema compiled, every program there",
  usage: "toolgate validate [--lint [--strict]] [--tools PATH]",
  options: {
    lint: { type: "boolean", help: "also check the tools against the design rules (as `toolgate lint`)" },
    strict: { ...STRICT_OPTION, help: "exit 1 when the lint has any finding (implies --lint)" },
  },
  details: [
    "Prints one summary line when the manifest is valid; otherwise every error, one per line, on stderr.",
    "Each tool's program must exist and be a regular executable file (inside ./tools/bin unless absolute).",
    "With --lint, the lint's findings and its summary line follow the first line.",
  ].join("\n"),
  async run(parsed, io) {
    // A stray word is a mistake (a misspelled flag, a path without --tools), not something to ignore.
    expectPositionals(parsed, 0, "validate");
    const manifest = await loadForCommand(parsed, io, { compileSchemas: true, checkPrograms: true });
    if (!manifest) return EXIT.failure;
    const path = manifestPath(parsed, io);
    const count = manifest.tools.length;
    await io.stdout(`${path}: valid, ${count} tool${count === 1 ? "" : "s"}\n`);
    const strict = flag(parsed, "strict");
    return flag(parsed, "lint") || strict ? await reportLint(manifest, path, io, strict) : EXIT.ok;
  },
};
