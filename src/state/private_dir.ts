/**
 * Folders of toolgate's own that nobody else may use: made 0700, checked to be real folders (never a link) of
 * this user with mode 0700, so that nothing toolgate writes there can be redirected or read by another user.
 *
 * @module
 */
import { dirname, join } from "../base/paths.ts";
import { existsNoFollow } from "../base/lstat.ts";
import { StateDirError } from "./state.ts";

/**
 * The uid of this process, learned once: it never changes while the process lives, so keeping it is not state.
 * `null` where the platform has none (Windows).
 */
let learnedUid: number | null | undefined;

/**
 * The uid of this process, or `null` where the platform has none. `Deno.uid()` needs `--allow-sys=uid`, which the
 * least permission set does not grant; then the owner of a file made in `dir` (a folder toolgate may write,
 * already known to be a real one) tells the same, so the ownership checks never go quiet under scoped grants.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ownUid } from "./private_dir.ts";
 * const dir = Deno.makeTempDirSync(); // say ~/.local/state/toolgate, a folder toolgate may write
 * const uid = ownUid(dir);
 * assert.equal(uid, Deno.statSync(dir).uid); // the owner of what this process makes; null on Windows
 * Deno.removeSync(dir);
 * ```
 */
export function ownUid(dir: string): number | null {
  if (learnedUid !== undefined) return learnedUid;
  try {
    return learnedUid = Deno.uid();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotCapable)) throw error;
  }
  const probe = join(dir, `.uid-probe-${crypto.randomUUID()}`);
  let file: Deno.FsFile;
  try {
    // A random name, made exclusively: nothing can have been planted there to be followed.
    file = Deno.openSync(probe, { write: true, createNew: true, mode: 0o600 });
  } catch (error) {
    throw new StateDirError(`cannot tell whether ${dir} is this user's: ${(error as Error).message}`);
  }
  try {
    learnedUid = file.statSync().uid;
  } finally {
    file.close();
    Deno.removeSync(probe);
  }
  return learnedUid;
}

/** Checks that `path` is a real folder (not a link), owned by this user, with mode 0700. */
export function checkPrivateDir(path: string): void {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(path);
  } catch (error) {
    throw new StateDirError(`${path}: ${(error as Error).message}`);
  }
  if (info.isSymlink) throw new StateDirError(`${path} is a symbolic link; toolgate never follows one there`);
  if (!info.isDirectory) throw new StateDirError(`${path} is not a directory`);
  // The mode first: a folder open to others is refused before toolgate makes anything in it (the uid probe).
  if (info.mode !== null && (info.mode & 0o777) !== 0o700) {
    throw new StateDirError(
      `${path} has mode ${
        (info.mode & 0o777).toString(8).padStart(4, "0")
      }; toolgate wants 0700 (chmod 700 it)`,
    );
  }
  const uid = info.uid === null ? null : ownUid(path);
  if (uid !== null && info.uid !== uid) {
    throw new StateDirError(
      `${path} belongs to uid ${info.uid}, not to this user (uid ${uid}); use a folder of your own`,
    );
  }
}

/**
 * Makes `path` and the folders between it and `trusted` (created 0700), then checks each of them with
 * {@linkcode checkPrivateDir}: a folder that is a link, someone else's, or open to others is refused, so that
 * nothing toolgate writes there can be redirected or read by another user. `trusted` itself (say `~/.local/state`)
 * is created when missing (0700, as the XDG spec asks) but only `path`'s own folders below it are checked.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ensurePrivateDir } from "./private_dir.ts";
 * const home = Deno.makeTempDirSync(); // say /home/me
 * ensurePrivateDir(`${home}/.local/state/toolgate/workspaces/p-1/audit`, `${home}/.local/state`);
 * assert.equal(Deno.statSync(`${home}/.local/state/toolgate/workspaces/p-1/audit`).mode! & 0o777, 0o700);
 * ```
 */
export function ensurePrivateDir(path: string, trusted: string = dirname(path)): void {
  const own: string[] = [];
  for (let dir = path; dir !== trusted && dir !== dirname(dir); dir = dirname(dir)) own.unshift(dir);
  own.forEach((dir, i) => {
    try {
      // The first one recursively: a missing `trusted` is made with it (0700, as XDG asks), and Deno checks the
      // write grant on this path only, so a grant of the state folder alone is enough.
      Deno.mkdirSync(dir, { mode: 0o700, recursive: i === 0 });
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists) && !existsNoFollow(dir)) {
        const why = error instanceof Deno.errors.NotCapable
          ? "Deno's --allow-write does not reach it (`toolgate permissions` prints flags that do)"
          : (error as Error).message;
        throw new StateDirError(`cannot create ${dir}: ${why}`);
      }
      // Something is in the way (a link, a file): the check below says what.
    }
    checkPrivateDir(dir);
  });
}

/**
 * Makes a folder of toolgate's own (0700) if it is missing; trouble is for its user to report.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { prepareDir } from "./private_dir.ts";
 * const dir = await Deno.makeTempDir() + "/audit";
 * prepareDir(dir);
 * assert.ok(Deno.statSync(dir).isDirectory);
 * ```
 */
export function prepareDir(path: string): void {
  try {
    Deno.mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch {
    // Reported by whoever writes there (the audit log reports once and never fails a call).
  }
}
