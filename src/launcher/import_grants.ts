/**
 * What `toolgate import` (and `init --from-mcp`) may touch, worked out before it starts: read every place a host
 * keeps its servers (for the project and HOME), the file named on the command line and the installed `toolgate`
 * command's places; write the project's `tools.json`, and, with `--apply HOST` or `--undo HOST`, that host's
 * files (each through the temporary file renamed over it).
 *
 * Not here: the rest of the launch plan (`launch_plan.ts`), the hosts' places (`hosts/host_files.ts`).
 *
 * @module
 */
import { join, resolve } from "../base/paths.ts";
import { hostFiles } from "../hosts/host_files.ts";
import { isHostId } from "../hosts/host_format.ts";
import { backupsOf } from "../hosts/host_backup.ts";
import { pendingName, undoneName, writtenPath } from "../hosts/replace_file.ts";
import { toolgateCandidates } from "../hosts/toolgate_command.ts";
import { MEMORY_DATA_FOLDER } from "../hosts/server_profile.ts";

/** The first word after the command that is no option or option value: `import`'s FILE. */
function namedFile(argv: readonly string[], values: ReadonlyMap<string, string>): string | undefined {
  const taking = new Set(["host", "apply", "undo", "cwd", "tools", "from-mcp"]);
  let seenCommand = false;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i];
    const match = /^--?([A-Za-z][A-Za-z0-9-]*)(=.*)?$/.exec(token);
    if (match) {
      if (taking.has(match[1]) && match[2] === undefined) i++;
      continue;
    }
    if (!seenCommand) {
      seenCommand = true;
      continue;
    }
    return token;
  }
  return values.get("from-mcp");
}

/**
 * The reads and writes of an import run.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { importGrants } from "./import_grants.ts";
 * const grants = importGrants(["import", "--apply", "cursor"], new Map([["apply", "cursor"]]), { HOME: "/nonexistent" }, "/srv/p", "/srv/p");
 * assertEquals(grants.write.includes("/srv/p/.cursor/mcp.json.toolgate-new"), true);
 * ```
 */
export function importGrants(
  argv: readonly string[],
  values: ReadonlyMap<string, string>,
  env: Readonly<Record<string, string>>,
  workspace: string,
  cwd: string,
): { read: string[]; write: string[] } {
  const places = hostFiles(workspace, env.HOME);
  const read = [...places.map((place) => place.file), ...toolgateCandidates(env)];
  const file = namedFile(argv, values);
  if (file !== undefined) read.push(resolve(cwd, file));
  const manifest = join(workspace, "tools.json");
  // The folder import makes for a memory server's data where the host set none (hosts/server_profile.ts).
  const write = [manifest, pendingName(manifest), join(workspace, MEMORY_DATA_FOLDER)];
  const apply = values.get("apply");
  if (apply !== undefined && isHostId(apply)) {
    const files = file === undefined
      ? places.filter((place) => place.host === apply).map((place) => place.file)
      : [resolve(cwd, file)];
    write.push(...files.flatMap((path) => [path, pendingName(path)]));
  }
  const undo = values.get("undo");
  if (undo !== undefined && isHostId(undo)) {
    try {
      write.push(
        ...backupsOf(env, undo).flatMap((backup) => [
          backup.file,
          pendingName(backup.file),
          undoneName(backup.file),
          pendingName(undoneName(backup.file)),
        ]),
      );
    } catch {
      // No state folder: the command says so.
    }
  }
  // A host's file that is a link is written where it points.
  const targets = write.filter((path) => !path.endsWith(".toolgate-new")).map(writtenPath)
    .filter((path) => !write.includes(path));
  write.push(...targets.flatMap((path) => [path, pendingName(path)]));
  return { read, write: [...new Set(write)] };
}
