/**
 * Where toolgate keeps its own state (the audit log, the digest key, caches) and its configuration: in the user's
 * state and config directories, never in a workspace a tool may write, each folder the user's own with mode 0700.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, unlinkSync } from "node:fs";
import { basename, dirname, isAbsolute, join } from "node:path";

/** The variables that place toolgate's state and configuration. */
export const STATE_ENV = ["HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"] as const;

/**
 * A folder or file toolgate may not use as its own (a symlink, someone else's, open to others), or state it has no
 * place for. Its message names the path and the fix; the CLI prints it and exits 1.
 */
export class StateDirError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StateDirError";
  }
}

/** `$XDG_*_HOME` when it is absolute (the spec says to ignore a relative one), else `$HOME/<fallback>`. */
function xdg(env: Readonly<Record<string, string>>, variable: string, fallback: string): string {
  const value = env[variable];
  if (value !== undefined && isAbsolute(value)) return join(value, "toolgate");
  const home = env.HOME;
  if (home === undefined || !isAbsolute(home)) {
    throw new StateDirError(
      `neither ${variable} nor HOME is set to an absolute path: toolgate has no place for its state`,
    );
  }
  return join(home, fallback, "toolgate");
}

/**
 * toolgate's state folder: `$XDG_STATE_HOME/toolgate`, else `$HOME/.local/state/toolgate`.
 *
 * @example
 * ```ts
 * import { stateRoot } from "./state.ts";
 * stateRoot({ HOME: "/home/me" }); // "/home/me/.local/state/toolgate"
 * ```
 */
export function stateRoot(env: Readonly<Record<string, string>>): string {
  return xdg(env, "XDG_STATE_HOME", ".local/state");
}

/**
 * toolgate's configuration folder: `$XDG_CONFIG_HOME/toolgate`, else `$HOME/.config/toolgate`.
 *
 * @example
 * ```ts
 * import { configRoot } from "./state.ts";
 * configRoot({ HOME: "/home/me", XDG_CONFIG_HOME: "/etc/me" }); // "/etc/me/toolgate"
 * ```
 */
export function configRoot(env: Readonly<Record<string, string>>): string {
  return xdg(env, "XDG_CONFIG_HOME", ".config");
}

/**
 * The state folder of one workspace (given as its real path): `<root>/workspaces/<name>-<digest>`, the digest
 * telling apart workspaces that share a folder name.
 *
 * @example
 * ```ts
 * import { workspaceStateDir } from "./state.ts";
 * workspaceStateDir("/home/me/.local/state/toolgate", "/home/me/project");
 * // "/home/me/.local/state/toolgate/workspaces/project-3f1c9a0b2e7d4c11"
 * ```
 */
export function workspaceStateDir(root: string, workspace: string): string {
  const digest = createHash("sha256").update(workspace).digest("hex").slice(0, 16);
  const name = basename(workspace).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 40) || "root";
  return join(root, "workspaces", `${name}-${digest}`);
}

/** The audit folder of a workspace. */
export function auditDirFor(env: Readonly<Record<string, string>>, workspace: string): string {
  return join(workspaceStateDir(stateRoot(env), workspace), "audit");
}

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
 * import { ownUid } from "./state.ts";
 * ownUid("/home/me/.local/state/toolgate"); // 1000
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
  let fd: number;
  try {
    fd = openSync(
      probe,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
  } catch (error) {
    throw new StateDirError(`cannot tell whether ${dir} is this user's: ${(error as Error).message}`);
  }
  try {
    learnedUid = fstatSync(fd).uid;
  } finally {
    closeSync(fd);
    unlinkSync(probe);
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

/** Whether anything (a link included) is at `path`. */
function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
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
 * import { ensurePrivateDir } from "./state.ts";
 * ensurePrivateDir("/home/me/.local/state/toolgate/workspaces/p-1/audit", "/home/me/.local/state");
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
      if (!(error instanceof Deno.errors.AlreadyExists) && !exists(dir)) {
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
