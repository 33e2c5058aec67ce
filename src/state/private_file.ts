/**
 * Files of toolgate's own that nobody else may read or redirect (the audit log, its key, the secret store and its
 * key): never created or opened through a link, and what was opened is checked (a regular file of this user's,
 * 0600, one link, still the one the path names) before a byte is read or written; no mode is ever changed through
 * a path.
 *
 * @module
 */
import { basename, dirname, join } from "../base/paths.ts";
import { ownUid } from "./private_dir.ts";
import { StateDirError } from "./state.ts";

/**
 * Refuses what is at `path` unless it is a regular file: a link is never followed, a FIFO or device never opened.
 */
function refuseUnlessFile(info: Deno.FileInfo, path: string, what: string): void {
  if (info.isSymlink) {
    throw new StateDirError(
      `${what} ${path} is a symbolic link; toolgate never follows one there (remove it)`,
    );
  }
  if (!info.isFile) throw new StateDirError(`${what} ${path} is not a regular file (remove it)`);
}

/**
 * Opens the regular file at `path`, or `undefined` when nothing is there. `O_NOFOLLOW` would not hold under Deno:
 * with any grant short of `--allow-all`, Deno resolves a link itself (for its permission check) and opens the
 * target. So the path is looked at first (a link, a FIFO or a device is refused unopened), and
 * {@linkcode checkOpened} then proves that what was opened is still what the path names. Only the user (whose
 * 0700 folder this is) could swap a FIFO in between the look and the open, and would only stall their own run.
 */
export function openExisting(path: string, options: Deno.OpenOptions, what: string): Deno.FsFile | undefined {
  let before: Deno.FileInfo;
  try {
    before = Deno.lstatSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  refuseUnlessFile(before, path, what);
  return Deno.openSync(path, options);
}

/**
 * Creates `path` as a new file of this user's (0600), without ever creating through a link: the file is made
 * under a random name (nothing can have been planted there), filled by `fill`, and hard-linked into place, which
 * fails on anything already at `path`, a link included (then `undefined`: someone else made it). Returns the open
 * descriptor.
 */
export function createNew(
  path: string,
  options: Deno.OpenOptions,
  fill: (file: Deno.FsFile) => void = () => {},
): Deno.FsFile | undefined {
  const temporary = join(dirname(path), `.${basename(path)}.${crypto.randomUUID()}`);
  const file = Deno.openSync(temporary, { ...options, write: true, createNew: true, mode: 0o600 });
  try {
    fill(file);
    Deno.linkSync(temporary, path);
  } catch (error) {
    file.close();
    if (error instanceof Deno.errors.AlreadyExists) return undefined;
    throw error;
  } finally {
    Deno.removeSync(temporary);
  }
  return file;
}

/**
 * Checks an opened file: a regular file, this user's, no bits for group or others, one link, and still the very
 * file `path` names (not a link swapped in while it was opened). Nothing is repaired (no chmod through a path,
 * which a swapped link would redirect): a file that fails is refused.
 */
export function checkOpened(file: Deno.FsFile, path: string, what: string): Deno.FileInfo {
  let info = file.statSync();
  // A file another toolgate is just creating has two links for a moment (see createNew).
  for (let waited = 0; info.nlink === 2 && waited < 100; waited += 5) {
    pause(5);
    info = file.statSync();
  }
  checkPrivateInfo(info, path, what);
  const now = Deno.lstatSync(path);
  if (now.isSymlink || now.ino !== info.ino || now.dev !== info.dev) {
    throw new StateDirError(`${what} ${path} was replaced while toolgate opened it; refused`);
  }
  return info;
}

/**
 * Checks a file held open since it passed {@linkcode checkOpened} (`opened`, its state then) again, in one system
 * call: when `path` still names that very file (no link, the same device and inode), what it names is the held
 * file itself, checked as at its opening; anything else is refused (and the holder opens the path anew).
 */
export function checkHeld(opened: Deno.FileInfo, path: string, what: string): Deno.FileInfo {
  const now = Deno.lstatSync(path);
  if (now.isSymlink || now.ino === null || now.ino !== opened.ino || now.dev !== opened.dev) {
    throw new StateDirError(`${what} ${path} was replaced since toolgate opened it`);
  }
  checkPrivateInfo(now, path, what);
  return now;
}

/** A regular file of this user's, no bits for group or others, one link. */
function checkPrivateInfo(info: Deno.FileInfo, path: string, what: string): void {
  if (!info.isFile) throw new StateDirError(`${what} ${path} is not a regular file (remove it)`);
  const uid = ownUid(dirname(path));
  if (uid !== null && info.uid !== uid) {
    throw new StateDirError(`${what} ${path} belongs to uid ${info.uid}, not to this user (uid ${uid})`);
  }
  const mode = info.mode ?? 0o600;
  if ((mode & 0o077) !== 0) {
    throw new StateDirError(
      `${what} ${path} has mode ${
        (mode & 0o777).toString(8).padStart(4, "0")
      }, open to others; toolgate wants 0600 (chmod 600 it, or remove it)`,
    );
  }
  if (info.nlink !== 1) {
    throw new StateDirError(`${what} ${path} has ${info.nlink} hard links; toolgate wants one (remove it)`);
  }
}

/** Waits `ms` without yielding: the audit log, the keys and the secret store are written on a synchronous path. */
export function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * The whole of the private file at `path`, opened never through a link and checked once open (see
 * {@linkcode checkOpened}), or `undefined` when there is none; `size`, when given, is the only size accepted.
 */
function readPrivateBytes(path: string, what: string, size?: number): Uint8Array | undefined {
  const file = openExisting(path, { read: true }, what);
  if (file === undefined) return undefined;
  try {
    const info = checkOpened(file, path, what);
    if (size !== undefined && info.size !== size) {
      throw new StateDirError(
        `${what} ${path} holds ${info.size} bytes, not ${size} (remove it: a new one is made)`,
      );
    }
    const bytes = new Uint8Array(info.size);
    for (let got = 0; got < bytes.length;) {
      const n = file.readSync(bytes.subarray(got));
      if (n === null || n === 0) throw new StateDirError(`${what} ${path} ended early`);
      got += n;
    }
    return bytes;
  } finally {
    file.close();
  }
}

/**
 * The key at `path` when there is one (refused as {@linkcode readOrMakeKey} refuses it), else `undefined`: for a
 * reader that must not make a key (checking the audit log's digests). Throws {@linkcode StateDirError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { join } from "../base/paths.ts";
 * import { readKey } from "./private_file.ts";
 * assert.equal(readKey(join(await Deno.makeTempDir(), "audit.key"), 32, "the audit key"), undefined); // none yet
 * ```
 */
export function readKey(path: string, bytes: number, what: string): Uint8Array | undefined {
  try {
    return readPrivateBytes(path, what, bytes);
  } catch (error) {
    if (error instanceof StateDirError) throw error;
    throw new StateDirError(`cannot read ${what} ${path}: ${(error as Error).message}`);
  }
}

/**
 * The key at `path`: read when it exists (refused when it is a link, someone else's, open to others, or not `bytes`
 * long), else made: random bytes written to a new 0600 file before it takes the name (see {@linkcode createNew}),
 * so that a reader never sees half a key and two toolgates starting at once agree on one. `what` names it in
 * errors ("the audit key"). Throws {@linkcode StateDirError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { join } from "../base/paths.ts";
 * import { readOrMakeKey } from "./private_file.ts";
 * const state = await Deno.makeTempDir(); // say ~/.local/state/toolgate
 * const key = readOrMakeKey(join(state, "audit.key"), 32, "the audit key");
 * assert.equal(key.length, 32);
 * assert.deepEqual(readOrMakeKey(join(state, "audit.key"), 32, "the audit key"), key); // the same next time
 * ```
 */
export function readOrMakeKey(path: string, bytes: number, what: string): Uint8Array {
  try {
    const existing = readPrivateBytes(path, what, bytes);
    if (existing !== undefined) return existing;
    const key = crypto.getRandomValues(new Uint8Array(bytes));
    const file = createNew(path, { read: true }, (file) => {
      if (file.writeSync(key) !== key.length) throw new Error("short write");
      file.syncSync();
    });
    if (file === undefined) {
      // Another toolgate made it first: use theirs.
      const theirs = readPrivateBytes(path, what, bytes);
      if (theirs === undefined) throw new Error("it came and went while being made");
      return theirs;
    }
    file.close();
    return key;
  } catch (error) {
    if (error instanceof StateDirError) throw error;
    throw new StateDirError(`cannot read or make ${what} ${path}: ${(error as Error).message}`);
  }
}

/**
 * The whole text of the private file at `path` (refused when it is a link, someone else's, open to others or has
 * another hard link), or `undefined` when there is none. Throws {@linkcode StateDirError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { join } from "../base/paths.ts";
 * import { readPrivateText } from "./private_file.ts";
 * assert.equal(readPrivateText(join(await Deno.makeTempDir(), "secrets.json"), "the secret store"), undefined); // none yet
 * ```
 */
export function readPrivateText(path: string, what: string): string | undefined {
  const bytes = readPrivateBytes(path, what);
  return bytes === undefined ? undefined : new TextDecoder().decode(bytes);
}

/**
 * Replaces the private file at `path` with `text`, whole: written to a new 0600 file under a random name (nothing
 * can have been planted there), synced, then renamed over `path` (a rename replaces a link at `path` itself, never
 * what it points to). A reader sees the old text or the new one, never half.
 *
 * @example
 * ```ts
 * import { join } from "../base/paths.ts";
 * import { writePrivateText } from "./private_file.ts";
 * const config = await Deno.makeTempDir(); // say ~/.config/toolgate, mode 0700
 * writePrivateText(join(config, "secrets.json"), "{}");
 * ```
 */
export function writePrivateText(path: string, text: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${crypto.randomUUID()}`);
  const bytes = new TextEncoder().encode(text);
  const file = Deno.openSync(temporary, { write: true, createNew: true, mode: 0o600 });
  try {
    for (let written = 0; written < bytes.length;) written += file.writeSync(bytes.subarray(written));
    file.syncSync();
    file.close();
    Deno.renameSync(temporary, path);
  } catch (error) {
    try {
      file.close();
    } catch {
      // Closed already.
    }
    Deno.removeSync(temporary);
    throw error;
  }
}
