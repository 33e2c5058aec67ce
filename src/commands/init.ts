/**
 * The `init` command: writes a working starter (a `tools.json` with one tool and its program) in the current
 * folder, and never overwrites a file; or, `--from-mcp FILE`, imports an MCP host's servers into the folder's
 * `tools.json`, as `toolgate import FILE` does (`import.ts`).
 *
 * @module
 */
import { type Command, CommandFailure, EXIT, expectPositionals, stringOption } from "./cli.ts";
import { dirname, join } from "../base/paths.ts";
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
    "init never overwrites a file: when one it would write exists, it names it, writes nothing and exits 1.",
    "",
    "With --from-mcp FILE, it is `toolgate import FILE` (see `toolgate import --help`): the servers of an MCP",
    "host's configuration go into tools.json's \"mcpServers\" (merged into one that is there), credentials as",
    "secret names, each with the profile its entry calls for (docs/import.md).",
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
    // The same thing as `toolgate import FILE`: one import, whichever door.
    const { importServers } = await import("./import_run.ts");
    return await importServers({ file: from, project: Deno.realPathSync(io.cwd) }, io);
  },
};
