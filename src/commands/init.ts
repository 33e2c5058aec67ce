/**
 * The `init` command: writes a working starter (a `tools.json` with one tool and its program) in the current
 * folder, or, `--from-mcp FILE`, a `tools.json` holding an MCP host's servers. It never overwrites a file.
 *
 * @module
 */
import { type Command, CommandFailure, EXIT, expectPositionals, stringOption, UsageError } from "./cli.ts";
import { dirname, join, resolve } from "../base/paths.ts";
import type { StarterFile } from "../manifest/starter.ts";

/** The folder already holds one of the files: nothing was written. Exit 1. */
function refuseExisting(paths: readonly string[]): never {
  const which = paths.length === 1 ? paths[0] : `${paths.slice(0, -1).join(", ")} and ${paths.at(-1)}`;
  throw new CommandFailure(
    `${which} already exist${
      paths.length === 1 ? "s" : ""
    }; init never overwrites a file, and wrote nothing ` +
      "(move it aside, or run init in an empty folder)",
  );
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Writes `files` under `root`, each created new (never through a link, never over a file): when any is there
 * already, nothing is written; when one appears meanwhile, those written are taken back.
 */
function writeNew(root: string, files: readonly StarterFile[]): void {
  const present = files.filter((file) => exists(join(root, file.path))).map((file) => file.path);
  if (present.length > 0) refuseExisting(present);
  const written: string[] = [];
  let current = "";
  try {
    for (const file of files) {
      current = file.path;
      const path = join(root, file.path);
      // Only the folders below `root`: the launcher grants write on the files init makes, not on the folder.
      if (dirname(path) !== root) Deno.mkdirSync(dirname(path), { recursive: true });
      Deno.writeTextFileSync(path, file.text, { createNew: true, mode: file.executable ? 0o755 : 0o644 });
      written.push(path);
      // The mode given at creation is cut by the umask; a program must be executable whatever the umask.
      if (file.executable) Deno.chmodSync(path, 0o755);
    }
  } catch (error) {
    for (const path of written) Deno.removeSync(path);
    if (error instanceof Deno.errors.AlreadyExists) refuseExisting([current]);
    throw error;
  }
}

/** `toolgate init [--from-mcp FILE]` */
export const initCommand: Command = {
  name: "init",
  summary: "write a starter tools.json and its tool in this folder (or import an MCP host's servers)",
  usage: "toolgate init [--from-mcp FILE]",
  options: {
    "from-mcp": {
      type: "string",
      value: "FILE",
      help: "write tools.json with the servers of an MCP host's configuration (claude_desktop_config.json)",
    },
  },
  details: [
    "Without options, writes tools.json with one tool (greet_person) and its program tools/bin/greet_person, a",
    "POSIX sh script that reads its JSON arguments on stdin and prints one JSON line; then try",
    '`toolgate lint --strict` and `toolgate call greet_person \'{"name":"Ada"}\'`.',
    "",
    'With --from-mcp FILE, writes tools.json with an "mcpServers" block in the same shape as the file\'s',
    "(command, args, env | url, headers) plus toolgate's permissions (none). Values of variables and headers",
    "that carry a credential are not copied: the server names them under secrets, and",
    "`toolgate secrets set NAME` stores each. Each server then runs in its own sandbox under its profile, its",
    "tools listed as mcp__SERVER__TOOL once `toolgate trust` pinned them (docs/gateway.md).",
    "",
    "init never overwrites a file: when one it would write exists, it names it, writes nothing and exits 1.",
  ].join("\n"),
  async run(parsed, io) {
    expectPositionals(parsed, 0, "init");
    const from = stringOption(parsed, "from-mcp");
    if (from === undefined) {
      const { starterFiles, STARTER_TOOL } = await import("../manifest/starter.ts");
      writeNew(io.cwd, starterFiles());
      await io.stdout(
        [
          `wrote tools.json and tools/bin/${STARTER_TOOL} in ${io.cwd}`,
          "next:",
          "  toolgate lint --strict",
          "  toolgate trust          # a tools.json found in a folder runs once you trust it",
          `  toolgate call ${STARTER_TOOL} '{"name":"Ada"}'`,
          "",
        ].join("\n"),
      );
      return EXIT.ok;
    }
    const source = resolve(io.cwd, from);
    let text: string;
    try {
      text = await Deno.readTextFile(source);
    } catch (error) {
      throw new UsageError(`cannot read ${source}: ${(error as Error).message}`, "init");
    }
    const { parseJsonc } = await import("../manifest/jsonc.ts");
    const parsedConfig = await parseJsonc(text, source);
    if (!parsedConfig.ok) throw new UsageError(parsedConfig.errors[0], "init");
    const { importMcpServers } = await import("../manifest/mcp_import.ts");
    let imported;
    try {
      imported = importMcpServers(parsedConfig.value);
    } catch (error) {
      throw new UsageError(`${source}: ${(error as Error).message}`, "init");
    }
    const manifest = { tools: [], mcpServers: imported.mcpServers };
    writeNew(io.cwd, [{
      path: "tools.json",
      text: JSON.stringify(manifest, null, 2) + "\n",
      executable: false,
    }]);
    const count = Object.keys(imported.mcpServers).length;
    const lines = [
      `wrote tools.json in ${io.cwd} with ${count} MCP server${count === 1 ? "" : "s"}: ${
        Object.keys(imported.mcpServers).join(", ")
      }`,
      ...imported.notes.map((note) => `  ${note}`),
      "each server runs in its own sandbox (permissions: none); its tools run once `toolgate trust` pinned them.",
    ];
    if (imported.secrets.length > 0) {
      lines.push(
        "store each credential once:",
        ...imported.secrets.map((name) => `  toolgate secrets set ${name}`),
      );
    }
    await io.stdout(lines.join("\n") + "\n");
    return EXIT.ok;
  },
};
