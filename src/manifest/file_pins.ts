/**
 * Files pinned by digest, cheaply enough for the check before every command: one file read and pinned (its
 * SHA-256 and its identity and times, checked unchanged across the read), and a list of paths, files or folders,
 * pinned together within bounds (a folder walked without following links, `node_modules`, `.git` and
 * `__pycache__` left out, at most so many files and bytes, and said so when the bound is reached). A file whose
 * identity and times are still those of an earlier read, settled, is not read again: the caller keeps the
 * `STAMP DIGEST` entries (a {@linkcode PinBook}) between runs. Trust pins a manifest's programs and the code its
 * tools' and servers' arguments name with it; anything else that must pin a tree of files can too.
 *
 * Not here: which files a manifest's tools and servers name (`code_paths.ts`), the trust digest and record
 * (`trust.ts`, `trust_record.ts`), where the entries are kept between runs (`trust_digests.ts`).
 *
 * @module
 */
import { changedLately, fileStamp } from "../base/file_stamp.ts";
import { join } from "../base/paths.ts";
import { sha256Hex } from "../base/sha256_hex.ts";

/** The largest file toolgate reads to pin it; a larger one cannot be pinned. */
export const MAX_PROGRAM_BYTES: number = 256 * 1024 * 1024;

/** Folders never walked into when a folder is pinned: installed packages, history and caches, not the code named. */
export const SKIPPED_FOLDERS: readonly string[] = ["node_modules", ".git", "__pycache__"];

/** What pins one file between a check and a later use: its digest and its file's identity then. */
export interface PinnedProgram {
  /** The SHA-256 of its bytes, `sha256:HEX`. */
  readonly digest: string;
  /** `dev:ino:size:mtime:ctime` when it was read. */
  readonly stamp: string;
  /** It changed within a timestamp's tick of being read: its stamp alone does not prove it unchanged. */
  readonly racy: boolean;
}

/**
 * Digests known from an earlier read, by path: `STAMP DIGEST`. A file whose identity and times are still the stamp,
 * settled, holds the same bytes (its ctime moves on any change and cannot be set back), so it is not read again.
 */
export type KnownDigests = ReadonlyMap<string, string>;

/** Where pins are looked up (`known`, from an earlier run) and recorded (`made`, this run's) during one read. */
export interface PinBook {
  readonly known: KnownDigests;
  readonly made: Map<string, string>;
}

/**
 * `sha256:HEX` of some bytes or a text's UTF-8.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256 } from "./file_pins.ts";
 * assert.equal((await sha256("")).slice(0, 19), "sha256:e3b0c44298fc");
 * ```
 */
export async function sha256(bytes: Uint8Array | string): Promise<string> {
  return "sha256:" + await sha256Hex(bytes);
}

/** Why a file cannot be pinned, from the error reading it. */
function unreadable(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "missing";
  return `unreadable (${error instanceof Error ? error.message : String(error)})`;
}

/**
 * Reads one file (links followed) and pins it: its digest and its identity, checked unchanged across the read; or
 * why it cannot be pinned (`missing`, `not a regular file`, ...). A FIFO, a device or a folder is never opened (a
 * FIFO would hold the read forever). With a `book`, a file pinned before and untouched since is not read again.
 * `stat`: what `stat` said of it just now, when the caller has it (one system call less per file of a folder).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pinFile } from "./file_pins.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/srv.py`, "print(1)\n");
 * const pinned = await pinFile(`${dir}/srv.py`);
 * assert.equal(typeof pinned === "string" ? pinned : pinned.digest.slice(0, 7), "sha256:");
 * assert.equal(await pinFile(dir), "not a regular file");
 * ```
 */
export async function pinFile(
  path: string,
  book?: PinBook,
  stat?: Deno.FileInfo,
): Promise<PinnedProgram | string> {
  let before: Deno.FileInfo;
  try {
    before = stat ?? Deno.statSync(path);
  } catch (error) {
    return unreadable(error);
  }
  if (!before.isFile) return "not a regular file";
  if (book !== undefined) {
    // The same file pinned earlier in this read, or in an earlier run, and untouched since: not read again.
    const stamp = fileStamp(before);
    const entry = book.made.get(path) ?? book.known.get(path);
    if (entry !== undefined && entry.startsWith(`${stamp} `) && !changedLately(before, Date.now())) {
      book.made.set(path, entry);
      return { digest: entry.slice(stamp.length + 1), stamp, racy: false };
    }
  }
  if (before.size > MAX_PROGRAM_BYTES) return `too large to check (${before.size} bytes)`;
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    return unreadable(error);
  }
  try {
    const opened = await file.stat();
    if (!opened.isFile || fileStamp(opened) !== fileStamp(before)) return "changed while it was read";
    const bytes = new Uint8Array(opened.size);
    for (let got = 0; got < bytes.length;) {
      const n = await file.read(bytes.subarray(got));
      if (n === null) return "changed while it was read";
      got += n;
    }
    const after = await file.stat();
    if (fileStamp(after) !== fileStamp(opened)) return "changed while it was read";
    const pinned = {
      digest: await sha256(bytes),
      stamp: fileStamp(after),
      racy: changedLately(after, Date.now()),
    };
    if (book !== undefined && !pinned.racy) book.made.set(path, `${pinned.stamp} ${pinned.digest}`);
    return pinned;
  } finally {
    file.close();
  }
}

/**
 * Whether a pinned file is still what was pinned: the same file untouched (its identity and times), or, when the
 * file was touched or its times cannot tell, the same bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pinFile, stillPinned } from "./file_pins.ts";
 * const path = `${await Deno.makeTempDir()}/srv.py`;
 * await Deno.writeTextFile(path, "print(1)\n");
 * const pinned = await pinFile(path);
 * if (typeof pinned === "string") throw new Error(pinned);
 * assert.equal(await stillPinned(path, pinned), true);
 * await Deno.writeTextFile(path, "print(2)\n");
 * assert.equal(await stillPinned(path, pinned), false);
 * ```
 */
export async function stillPinned(path: string, pinned: PinnedProgram): Promise<boolean> {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch {
    return false;
  }
  const stamp = fileStamp(info);
  if ((pinned.racy ? settled.get(pinned) : pinned.stamp) === stamp) return true;
  const again = await pinFile(path);
  if (typeof again === "string" || again.digest !== pinned.digest) return false;
  // Read again whole once its file has settled: its stamp now vouches for these bytes, as a settled pin's does.
  if (pinned.racy && !again.racy) settled.set(pinned, again.stamp);
  return true;
}

/**
 * The stamp that vouches for a racy pin (one made within a timestamp's tick of its file's change): that of a later
 * read whose bytes were the pinned ones and whose file had settled by then. Without it, every check of the pin
 * would read and hash the whole file again, for as long as the pin lives.
 */
const settled = new WeakMap<PinnedProgram, string>();

/** How much of the named paths {@linkcode pinPaths} pins at most. */
export interface PinLimits {
  /** At most this many files (a folder's entries each count). */
  readonly maxFiles: number;
  /** At most this many bytes of files read or taken as known. */
  readonly maxBytes: number;
}

/** What {@linkcode pinPaths} found: each file's pin, and whether every file named was pinned. */
export interface PinnedPaths {
  /**
   * By absolute path, in the order walked: `sha256:HEX`, `link -> TARGET` (a link inside a folder, never
   * followed), or why there is no digest (`not a regular file`, `unreadable (...)`, ...).
   */
  readonly files: ReadonlyMap<string, string>;
  /** The files pinned by digest, by absolute path (a caller checks them again before a later use). */
  readonly pinned: ReadonlyMap<string, PinnedProgram>;
  /** `undefined` when all was pinned; else what stopped it (`more than 1000 files`, `more than N bytes`). */
  readonly capped?: string;
}

/**
 * Pins each of `paths` (absolute): a file (a link to one followed) by its digest; a folder by each of its files,
 * walked in name order without following links and without `node_modules`, `.git` and `__pycache__`; a path
 * that is not there is left out. Stops at `limits`, and says so in `capped`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pinPaths } from "./file_pins.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/pkg/node_modules`, { recursive: true });
 * await Deno.writeTextFile(`${dir}/pkg/a.js`, "1");
 * await Deno.writeTextFile(`${dir}/pkg/node_modules/b.js`, "2");
 * const { files, capped } = await pinPaths([`${dir}/pkg`, `${dir}/none`], { maxFiles: 10, maxBytes: 1024 });
 * assert.deepEqual([...files.keys()], [`${dir}/pkg/a.js`]);
 * assert.equal(capped, undefined);
 * ```
 */
export async function pinPaths(
  paths: readonly string[],
  limits: PinLimits,
  book: PinBook = { known: new Map(), made: new Map() },
): Promise<PinnedPaths> {
  const files = new Map<string, string>();
  const pinned = new Map<string, PinnedProgram>();
  let count = 0;
  let bytes = 0;
  let capped: string | undefined;
  const pin = async (path: string, info: Deno.FileInfo): Promise<boolean> => {
    if (files.has(path)) return true;
    if (++count > limits.maxFiles) {
      capped = `more than ${limits.maxFiles} files`;
      return false;
    }
    bytes += info.size;
    if (bytes > limits.maxBytes) {
      capped = `more than ${limits.maxBytes} bytes`;
      return false;
    }
    const got = await pinFile(path, book, info);
    if (typeof got === "string") files.set(path, got);
    else {
      files.set(path, got.digest);
      pinned.set(path, got);
    }
    return true;
  };
  const walk = async (dir: string): Promise<boolean> => {
    let names: string[];
    try {
      names = [...Deno.readDirSync(dir)].map((entry) => entry.name).sort();
    } catch (error) {
      files.set(dir, unreadable(error));
      return true;
    }
    for (const name of names) {
      if (SKIPPED_FOLDERS.includes(name)) continue;
      const path = join(dir, name);
      let info: Deno.FileInfo;
      try {
        info = Deno.lstatSync(path);
      } catch {
        continue;
      }
      if (info.isDirectory) {
        if (!(await walk(path))) return false;
      } else if (info.isSymlink) {
        if (++count > limits.maxFiles) {
          capped = `more than ${limits.maxFiles} files`;
          return false;
        }
        try {
          files.set(path, `link -> ${Deno.readLinkSync(path)}`);
        } catch (error) {
          files.set(path, unreadable(error));
        }
      } else if (!(await pin(path, info))) return false;
    }
    return true;
  };
  for (const path of paths) {
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(path);
    } catch {
      continue;
    }
    const going = info.isDirectory ? await walk(path) : await pin(path, info);
    if (!going) break;
  }
  return { files, pinned, ...(capped === undefined ? {} : { capped }) };
}
