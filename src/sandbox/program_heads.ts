/**
 * The first bytes of the programs a launcher looked at (a script's `#!` line and a launcher's `exec` lines, as
 * `program_needs.ts` reads them to find what a confined program needs), kept from one call to the next by each
 * file's identity: a file is read again when it is another one or was touched (its device, inode, size,
 * modification or change time differ), the same rule by which a trusted program is known untouched
 * (`manifest/file_pins.ts`). A file changed within the last 2 s is read at every call: a change that follows
 * within its times' tick would not show in them. Under load, opening and reading the same two files (a tool's
 * script, then `/bin/sh`) at every call was most of a confined launch's own work.
 *
 * Not here: what the text means, and every other check of the program (`program_needs.ts`).
 *
 * @module
 */
import { changedLately, fileStamp, RACY_MS } from "../base/file_stamp.ts";

/** The most files remembered; past it, they are all forgotten and read again. */
const MAX_FILES = 256;

/** The file's stamp, where the system gives everything a stamp needs to tell one content from another. */
function stampOf(info: Deno.FileInfo): string | undefined {
  return info.ino === null || info.mtime === null || info.ctime === null ? undefined : fileStamp(info);
}

/**
 * The first bytes of programs, each read once while its file stays untouched.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProgramHeads } from "./program_heads.ts";
 * const path = `${Deno.makeTempDirSync()}/tool`;
 * Deno.writeTextFileSync(path, "#!/bin/sh\necho one\n");
 * let reads = 0;
 * const read = (file: string) => (reads++, Deno.readTextFileSync(file));
 * // A file just written is read at every call for 2 s; here, at once remembered.
 * const heads = new ProgramHeads(0);
 * assert.equal(heads.head(path, Deno.statSync(path), read), "#!/bin/sh\necho one\n");
 * assert.equal(heads.head(path, Deno.statSync(path), read), "#!/bin/sh\necho one\n");
 * assert.equal(reads, 1);
 * Deno.writeTextFileSync(path, "#!/bin/sh\necho three\n");
 * assert.equal(heads.head(path, Deno.statSync(path), read), "#!/bin/sh\necho three\n");
 * ```
 */
export class ProgramHeads {
  readonly #known = new Map<string, { readonly stamp: string; readonly text: string }>();
  readonly #racyMs: number;

  /** `racyMs`: how long after a change a file is read at every call (default 2 s; less only in tests). */
  constructor(racyMs: number = RACY_MS) {
    this.#racyMs = racyMs;
  }

  /**
   * The head of `path` as `read` gives it: remembered when `info` (the file's state, taken just before, links
   * followed) is the one it was read at, else read now (and remembered when the file was not changed lately).
   */
  head(path: string, info: Deno.FileInfo, read: (path: string) => string): string {
    const stamp = stampOf(info);
    const known = this.#known.get(path);
    if (stamp !== undefined && known?.stamp === stamp) return known.text;
    // Read after the state was taken: a change in between shows in the next state, which then differs.
    const text = read(path);
    if (stamp === undefined || changedLately(info, Date.now(), this.#racyMs)) {
      this.#known.delete(path);
      return text;
    }
    if (this.#known.size >= MAX_FILES) this.#known.clear();
    this.#known.set(path, { stamp, text });
    return text;
  }
}
