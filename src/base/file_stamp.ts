/**
 * What identifies a file's content without reading it: its device, inode, size and modification and change times,
 * and whether it changed too lately for those to prove it unchanged (a change that follows within the times' tick
 * would not show in them). Trust's pins (`manifest/file_pins.ts`), a package tree's stamp
 * (`packages/tree_digest.ts`) and the programs a launcher reads (`sandbox/program_heads.ts`) know a file by it.
 *
 * Not here: reading or hashing the file.
 *
 * @module
 */

/** A file changed this recently (ms) when it was looked at may change again unseen within its times' tick. */
export const RACY_MS = 2000;

/**
 * The file's stamp, `dev:ino:size:mtime:ctime` (`-` for a time the system does not give).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileStamp } from "./file_stamp.ts";
 * const path = Deno.makeTempFileSync();
 * const before = fileStamp(Deno.statSync(path));
 * assert.equal(fileStamp(Deno.statSync(path)), before);
 * Deno.writeTextFileSync(path, "changed");
 * assert.notEqual(fileStamp(Deno.statSync(path)), before);
 * ```
 */
export function fileStamp(info: Deno.FileInfo): string {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtime?.getTime() ?? "-"}:${
    info.ctime?.getTime() ?? "-"
  }`;
}

/**
 * Did the file change within `racyMs` of `at` (its stamp alone then does not prove it unchanged)? A time the
 * system does not give counts as `at`: racy.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { changedLately } from "./file_stamp.ts";
 * const path = Deno.makeTempFileSync();
 * assert.ok(changedLately(Deno.statSync(path), Date.now()));
 * assert.ok(!changedLately(Deno.statSync(path), Date.now() + 60_000));
 * ```
 */
export function changedLately(info: Deno.FileInfo, at: number, racyMs: number = RACY_MS): boolean {
  const changed = Math.max(info.mtime?.getTime() ?? at, info.ctime?.getTime() ?? at);
  return at - changed < racyMs;
}
