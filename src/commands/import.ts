/**
 * The `import` command: reads the MCP servers users keep in their hosts (Claude Desktop, Claude Code, Cursor, VS
 * Code, Codex, Windsurf, Gemini CLI), or in one file named on the command line, into the project's `tools.json`;
 * `--apply HOST` rewires the host to start each server through toolgate, `--undo HOST` puts it back. The option
 * table and help only: the work loads when the command runs (`import_run.ts`).
 *
 * Not here: the work (`import_run.ts`), each host's format (`hosts/`).
 *
 * @module
 */
import { type Command, type Io, type ParsedArgs, stringOption, UsageError } from "./cli.ts";
import { resolve } from "../base/paths.ts";
import { HOST_IDS, type HostId, isHostId } from "../hosts/host_format.ts";

const quote = (text: string): string => JSON.stringify(text);

function hostOption(parsed: ParsedArgs, name: string): HostId | undefined {
  const value = stringOption(parsed, name);
  if (value === undefined) return undefined;
  if (!isHostId(value)) {
    throw new UsageError(`--${name} must be one of ${HOST_IDS.join(", ")} (got ${quote(value)})`, "import");
  }
  return value;
}

/** The project folder: `--cwd`, else the current one, by its real path. */
function projectOf(parsed: ParsedArgs, io: Io): string {
  const given = resolve(io.cwd, stringOption(parsed, "cwd") ?? ".");
  try {
    return Deno.realPathSync(given);
  } catch {
    throw new UsageError(`--cwd ${quote(given)} is not a folder`, "import");
  }
}

/** `toolgate import [FILE] [--host HOST] [--apply HOST | --undo HOST]` */
export const importCommand: Command = {
  name: "import",
  summary: "import the MCP servers of your hosts (Claude, Cursor, VS Code, Codex, ...) into tools.json",
  usage: "toolgate import [FILE] [--host HOST] [--apply HOST | --undo HOST] [--cwd DIR]",
  options: {
    host: { type: "string", value: "HOST", help: `read only this host (${HOST_IDS.join(", ")})` },
    apply: {
      type: "string",
      value: "HOST",
      help:
        "import HOST's servers, then rewrite its configuration to start each through toolgate (backed up)",
    },
    undo: { type: "string", value: "HOST", help: "put back HOST's configuration as it was before --apply" },
    cwd: {
      type: "string",
      value: "DIR",
      help: "the project whose tools.json is written (default: this folder)",
    },
  },
  details: [
    "Without FILE, looks where each host keeps its servers: the project's .mcp.json (Claude Code),",
    ".cursor/mcp.json, .vscode/mcp.json, .codex/config.toml and .gemini/settings.json, and under HOME",
    "Claude Desktop's claude_desktop_config.json, ~/.claude.json (its servers and this project's),",
    "~/.cursor/mcp.json, VS Code's user mcp.json, ~/.codex/config.toml, ~/.codeium/windsurf/mcp_config.json",
    "and ~/.gemini/settings.json; says what it found per host; and adds the servers to tools.json's",
    '"mcpServers" (made if missing; a name there already is said and left as it is). FILE reads one file,',
    "its host told by its name or shape (or --host).",
    "Credentials (variables and headers that carry one, VS Code inputs) are not copied: the server names",
    "them as secrets, and `toolgate secrets set NAME` stores each. Each stdio server gets the profile its",
    "entry calls for: the folders and files it is given become its reads and writes, nothing else, and no",
    "network (a URL it is given is said). Edit permissions in tools.json to change it. A docker entry is",
    "left out: toolgate confines the server itself (use its npx, uvx or node form).",
    "A malformed file, or one that is no host's, is one line naming it and the position; nothing is written",
    "(exit 2).",
    "",
    "--apply HOST rewrites HOST's files so that each server starts `toolgate serve --cwd PROJECT --server",
    "NAME`: one entry per server, so the host keeps its names and its per-server switches (docs/import.md).",
    "The files are backed up in toolgate's state first; --undo HOST restores them byte for byte.",
  ].join("\n"),
  async run(parsed, io) {
    if (parsed.positionals.length > 1) {
      throw new UsageError(`import takes one FILE at most (got ${parsed.positionals.length})`, "import");
    }
    const undo = hostOption(parsed, "undo");
    const apply = hostOption(parsed, "apply");
    const only = hostOption(parsed, "host");
    if (undo !== undefined) {
      if (apply !== undefined || parsed.positionals.length > 0) {
        throw new UsageError("--undo takes no FILE and no --apply", "import");
      }
      return await (await import("./import_run.ts")).undoHost(undo, io);
    }
    const file = parsed.positionals[0];
    const { importServers } = await import("./import_run.ts");
    return await importServers({ file, host: apply ?? only, apply, project: projectOf(parsed, io) }, io);
  },
};
