/** The `validate` command: checks every rule of the manifest and compiles every schema. @module */
import { type Command, EXIT, expectPositionals } from "../cli.ts";
import { loadForCommand, manifestPath } from "./load.ts";

/** `toolgate validate` */
export const validateCommand: Command = {
  name: "validate",
  summary: "check the manifest: every rule, every schema compiled",
  usage: "toolgate validate [--tools PATH]",
  options: {},
  details:
    "Prints one summary line when the manifest is valid; otherwise every error, one per line, on stderr.",
  async run(parsed, io) {
    // A stray word is a mistake (a misspelled flag, a path without --tools), not something to ignore.
    expectPositionals(parsed, 0, "validate");
    const manifest = await loadForCommand(parsed, io, { compileSchemas: true });
    if (!manifest) return EXIT.failure;
    const count = manifest.tools.length;
    await io.stdout(`${manifestPath(parsed, io)}: valid, ${count} tool${count === 1 ? "" : "s"}\n`);
    return EXIT.ok;
  },
};
