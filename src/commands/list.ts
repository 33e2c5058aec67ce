/** The `list` command: the manifest's tools as OpenAI, Anthropic or MCP definitions, or their names. @module */
import { choiceOption, type Command, EXIT, expectPositionals } from "./cli.ts";
import { EXPORT_FORMATS, type ExportFormat, exportTools } from "../tool_definitions.ts";
import { loadForCommand } from "./load.ts";

/** `toolgate list` */
export const listCommand: Command = {
  name: "list",
  summary: "print the tool definitions",
  usage: "toolgate list [--format openai|anthropic|mcp|names]",
  options: {
    format: {
      type: "string",
      value: "FORMAT",
      help: "openai (default), anthropic, mcp, or names (one a line)",
    },
  },
  async run(parsed, io) {
    // A stray word is a mistake (a misspelled flag, a path without --tools), not something to ignore.
    expectPositionals(parsed, 0, "list");
    const format = choiceOption(parsed, "format", EXPORT_FORMATS, "openai", "list");
    const manifest = await loadForCommand(parsed, io);
    if (!manifest) return EXIT.failure;
    const exported = exportTools(manifest, format as ExportFormat);
    const body = format === "names"
      ? exported.map((name) => `${name}\n`).join("")
      : JSON.stringify(exported, null, 2) + "\n";
    await io.stdout(body);
    return EXIT.ok;
  },
};
