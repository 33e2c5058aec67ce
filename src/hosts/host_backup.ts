/**
 * The backup of a host's file taken before `import --apply` rewires it, kept in toolgate's state (a private
 * folder per host and file: `<state>/hosts/HOST/<digest of the path>/`, holding the bytes and the path), so that
 * `import --undo HOST` puts the very bytes back. One backup per file: a file rewired already is not backed up
 * again (that would keep the rewired bytes as the "original").
 *
 * Not here: writing the host's file (`replace_file.ts`), the state folders (`state/state.ts`).
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { ensurePrivateDir } from "../state/private_dir.ts";
import { fnv1a64, stateRoot } from "../state/state.ts";
import type { HostId } from "./host_format.ts";

/** One kept backup: the file it is of, its bytes, its folder, and the bytes `--apply` wrote in their place. */
export interface HostBackup {
  readonly file: string;
  readonly bytes: Uint8Array;
  readonly dir: string;
  /** What `--apply` wrote (a file that differs now was changed since, and its changes are kept aside on undo). */
  readonly applied?: Uint8Array;
}

/** The folder of a host's backups. */
function hostDir(env: Readonly<Record<string, string>>, host: HostId): string {
  return join(stateRoot(env), "hosts", host);
}

/**
 * Keeps `bytes` as the backup of `file` (and `applied`, what is written in their place); `false` when one is kept
 * already (the file was rewired before).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { backupsOf, keepBackup } from "./host_backup.ts";
 * const env = { XDG_STATE_HOME: Deno.makeTempDirSync() };
 * assertEquals(keepBackup(env, "cursor", "/p/.cursor/mcp.json", new Uint8Array([1, 2])), true);
 * assertEquals(keepBackup(env, "cursor", "/p/.cursor/mcp.json", new Uint8Array([3])), false);
 * assertEquals(backupsOf(env, "cursor").map((backup) => [backup.file, [...backup.bytes]]), [["/p/.cursor/mcp.json", [1, 2]]]);
 * Deno.removeSync(env.XDG_STATE_HOME, { recursive: true });
 * ```
 */
export function keepBackup(
  env: Readonly<Record<string, string>>,
  host: HostId,
  file: string,
  bytes: Uint8Array,
  applied?: Uint8Array,
): boolean {
  const root = stateRoot(env);
  const dir = join(hostDir(env, host), fnv1a64(file));
  ensurePrivateDir(hostDir(env, host), root);
  try {
    Deno.mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) return false;
    throw error;
  }
  Deno.writeFileSync(join(dir, "original"), bytes, { createNew: true, mode: 0o600 });
  if (applied !== undefined) {
    Deno.writeFileSync(join(dir, "applied"), applied, { createNew: true, mode: 0o600 });
  }
  // The path last: a backup without it is not one (an interrupted apply is taken for none).
  Deno.writeTextFileSync(join(dir, "path"), file, { createNew: true, mode: 0o600 });
  return true;
}

/**
 * The backups kept of a host's files.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { backupsOf } from "./host_backup.ts";
 * assertEquals(backupsOf({ XDG_STATE_HOME: "/nonexistent" }, "codex"), []);
 * ```
 */
export function backupsOf(env: Readonly<Record<string, string>>, host: HostId): HostBackup[] {
  const found: HostBackup[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(hostDir(env, host))];
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return found;
    throw error;
  }
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const dir = join(hostDir(env, host), entry.name);
    if (!entry.isDirectory) continue;
    try {
      const file = Deno.readTextFileSync(join(dir, "path"));
      const bytes = Deno.readFileSync(join(dir, "original"));
      let applied: Uint8Array | undefined;
      try {
        applied = Deno.readFileSync(join(dir, "applied"));
      } catch {
        applied = undefined;
      }
      found.push({ file, bytes, dir, ...(applied === undefined ? {} : { applied }) });
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return found;
}

/**
 * Forgets a backup once its bytes are back (or were never used).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { backupsOf, dropBackup, keepBackup } from "./host_backup.ts";
 * const env = { XDG_STATE_HOME: Deno.makeTempDirSync() };
 * keepBackup(env, "codex", "/home/me/.codex/config.toml", new Uint8Array([1]));
 * dropBackup(backupsOf(env, "codex")[0]);
 * assertEquals(backupsOf(env, "codex"), []);
 * Deno.removeSync(env.XDG_STATE_HOME, { recursive: true });
 * ```
 */
export function dropBackup(backup: HostBackup): void {
  Deno.removeSync(backup.dir, { recursive: true });
}
