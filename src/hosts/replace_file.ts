/**
 * Writes a file of the user's (a host's configuration, a project's `tools.json`) whole or not at all: the bytes go
 * to `FILE.toolgate-new` beside it, with the old file's mode, and are renamed over it, so that a host reading it
 * meanwhile sees the old bytes or the new ones, never half of them. A file that is a symbolic link (dotfiles kept
 * in a repository of their own) is written where the link points, and stays a link.
 *
 * Not here: toolgate's own private files (`state/private_file.ts`).
 *
 * @module
 */

/**
 * The temporary name a file is written through (the launcher grants writing it).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { pendingName } from "./replace_file.ts";
 * assertEquals(pendingName("/p/tools.json"), "/p/tools.json.toolgate-new");
 * ```
 */
export function pendingName(path: string): string {
  return `${path}.toolgate-new`;
}

/**
 * Where `import --undo` keeps what a host's file held when it was changed since `--apply`.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { undoneName } from "./replace_file.ts";
 * assertEquals(undoneName("/h/.cursor/mcp.json"), "/h/.cursor/mcp.json.toolgate-undone");
 * ```
 */
export function undoneName(path: string): string {
  return `${path}.toolgate-undone`;
}

/**
 * The file a write of `path` changes: where a symbolic link at `path` points (all the way), else `path`.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { writtenPath } from "./replace_file.ts";
 * assertEquals(writtenPath("/nonexistent/tools.json"), "/nonexistent/tools.json");
 * ```
 */
export function writtenPath(path: string): string {
  try {
    return Deno.lstatSync(path).isSymlink ? Deno.realPathSync(path) : path;
  } catch {
    return path;
  }
}

/**
 * Replaces (or creates) `path` with `bytes`, keeping the mode of the file it replaces.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { replaceFile } from "./replace_file.ts";
 * const dir = Deno.makeTempDirSync();
 * replaceFile(`${dir}/a.json`, new TextEncoder().encode("{}\n"));
 * assertEquals(Deno.readTextFileSync(`${dir}/a.json`), "{}\n");
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function replaceFile(link: string, bytes: Uint8Array): void {
  const path = writtenPath(link);
  let mode = 0o644;
  try {
    mode = (Deno.statSync(path).mode ?? 0o100644) & 0o7777;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const pending = pendingName(path);
  try {
    Deno.removeSync(pending);
  } catch {
    // Not there: the usual case.
  }
  Deno.writeFileSync(pending, bytes, { createNew: true, mode });
  try {
    Deno.chmodSync(pending, mode);
    Deno.renameSync(pending, path);
  } catch (error) {
    try {
      Deno.removeSync(pending);
    } catch {
      // Gone already.
    }
    throw error;
  }
}
