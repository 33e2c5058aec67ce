/**
 * Race-free file operations confined to the workspace (the tool's cwd at start), for the shipped file tools.
 *
 * A check followed by an open by path can be raced: another process swaps a checked directory for a symlink in
 * between, and the open walks out of the workspace. So nothing here opens a path it has checked. Instead the
 * process pins the directory it works in as its cwd (a `chdir` the kernel holds on to), asks the kernel where that
 * directory really is (`getcwd`), and refuses unless it is inside the workspace; then it acts on one path component
 * relative to the pinned directory: opens with `O_NOFOLLOW` (a final symlink fails instead of being followed) and
 * `O_NONBLOCK` (a FIFO opens at once instead of hanging), checks what it opened (`fstat`), creates with
 * `O_CREAT | O_EXCL | O_NOFOLLOW` under a random name, renames within the pinned directory, lists `"."`. A symlink
 * the caller wants followed is resolved, checked, and walked again from the workspace root, one pinned directory
 * at a time; a symlink swapped in after the check is never followed. A walk goes down only into the very directory
 * it listed (same device and inode after the `chdir` as the entry had before it) and back up by `..`, checked the
 * same way, so renaming names around it can stop a walk but never lead it elsewhere.
 *
 * This holds only when Deno hands relative paths and open flags to the kernel unchanged, which it does only with
 * every permission granted: with scoped `--allow-read=.` / `--allow-write=.` Deno turns every relative path into
 * an absolute one (re-resolved from `/`, so through any swapped directory) and opens the canonicalized path. The
 * file tools' launchers therefore pass `--allow-all`; their confinement is this module (and, when confined, the
 * sandbox profile). Sync calls only: the cwd is process-wide, and nothing else may move it mid-operation.
 *
 * @module
 */
import * as fs from "node:fs";
import { join, relative, sep } from "node:path";
import { errorMessage, fsFailure, invalidArgs, ToolFailure } from "./envelope.ts";
import { isWithin, parseRelative, PATH_EXPECTED } from "./paths.ts";
import {
  loadProtection,
  NOTHING_PROTECTED,
  PROTECTED_VARIABLE,
  protectedInside,
  type Protection,
  protectionAt,
} from "./protected.ts";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = fs.constants;
/** As the kernel's own limit on symlinks in one lookup. */
const MAX_SYMLINKS = 40;
/** How often a missing parent is created and entered again before a racing remover wins. */
const CREATE_ATTEMPTS = 3;

/** An entry found by {@linkcode Workspace.locate}: the cwd is pinned to its parent directory. */
export interface Located {
  /** The path argument, normalized: what the model should write next time. */
  readonly rel: string;
  /** The argument's name, for failures. */
  readonly field: string;
  /** The real path of the pinned directory that holds the entry, when it was located. */
  readonly dir: string;
  /** That directory's identity, which (unlike its path) no rename changes. */
  readonly dirId: DirectoryId;
  /** The entry's name in `dir` (one component); `.` for the workspace itself. */
  readonly name: string;
  /** `dir` and `name` joined: the entry itself (a final symlink not followed unless asked). */
  readonly real: string;
  /** The entry's own metadata (`lstat`), `undefined` when it does not exist. */
  readonly info: Deno.FileInfo | undefined;
  /** Is this the workspace itself? */
  readonly isRoot: boolean;
}

/** A directory's identity: its device and inode numbers. */
export interface DirectoryId {
  readonly dev: number;
  readonly ino: number;
}

function identity(info: Deno.FileInfo): DirectoryId {
  return { dev: info.dev, ino: info.ino ?? -1 };
}

function same(a: DirectoryId, b: DirectoryId): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.ino !== -1;
}

/** The identity of the cwd: the directory the kernel holds, wherever it has been moved. */
function cwdId(): DirectoryId | undefined {
  try {
    return identity(Deno.statSync("."));
  } catch {
    return undefined;
  }
}

/** Options of {@linkcode Workspace.locate}. */
export interface LocateOptions {
  /** The argument's name, for failures (default `path`). */
  field?: string;
  /** Follow a final symlink that stays inside the workspace (default: describe the link itself). */
  follow?: boolean;
  /** Create missing parent directories (each one checked against the protected paths first). */
  createParents?: boolean;
  /** The failure for a missing parent directory (default: `not_found`). */
  missingParent?: () => ToolFailure;
  /** The failure for a parent that is a file (default: `not_found`). */
  parentNotDirectory?: () => ToolFailure;
}

/**
 * What kind of thing an entry is, in words, for failures.
 *
 * @example
 * ```ts
 * import { describeType } from "./workspace.ts";
 * describeType(Deno.lstatSync("/dev/null")); // "a character device"
 * ```
 */
export function describeType(info: Deno.FileInfo): string {
  if (info.isFile) return "a regular file";
  if (info.isDirectory) return "a directory";
  if (info.isSymlink) return "a symlink";
  if (info.isFifo) return "a FIFO";
  if (info.isSocket) return "a socket";
  if (info.isCharDevice) return "a character device";
  if (info.isBlockDevice) return "a block device";
  return "not a regular file";
}

/**
 * A regular file opened by {@linkcode Workspace.openFile}: read it, then close it.
 *
 * @example
 * ```ts
 * import { Workspace } from "./workspace.ts";
 * const workspace = Workspace.fromEnvironment();
 * const file = workspace.openFile(workspace.locate("README.md", { follow: true }));
 * const head = file.read(0, 100);
 * file.close();
 * ```
 */
export class OpenedFile {
  /** The open file descriptor. */
  readonly fd: number;
  /** Its size when opened. */
  readonly size: number;
  /** Its permission bits (`& 0o7777`). */
  readonly mode: number;

  constructor(fd: number, size: number, mode: number) {
    this.fd = fd;
    this.size = size;
    this.mode = mode;
  }

  /** Up to `length` bytes from `position`, fewer at the end of the file. */
  read(position: number, length: number): Uint8Array {
    const bytes = new Uint8Array(length);
    let got = 0;
    while (got < length) {
      const n = fs.readSync(this.fd, bytes, got, length - got, position + got);
      if (n === 0) break;
      got += n;
    }
    return bytes.subarray(0, got);
  }

  /** The next bytes from the current offset (at most `length`); empty at the end of the file. */
  readNext(length: number): Uint8Array {
    const bytes = new Uint8Array(length);
    const n = fs.readSync(this.fd, bytes, 0, length, null);
    return bytes.subarray(0, n);
  }

  /** Closes the descriptor; a second call does nothing. */
  close(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      // Already closed.
    }
  }
}

function quote(text: string): string {
  return JSON.stringify(text);
}

function nodeCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function escapes(field: string, raw: string, walked: string): ToolFailure {
  return invalidArgs(
    field,
    `${field} ${quote(raw)} leaves the workspace through the symlink ${quote(walked)}`,
    PATH_EXPECTED,
  );
}

function unresolved(field: string, walked: string): ToolFailure {
  return invalidArgs(
    field,
    `${field} goes through a symlink that does not resolve: ${walked}`,
    PATH_EXPECTED,
  );
}

function lstatOrUndefined(name: string, rel: string, field: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(name);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw fsFailure(error, rel, field);
  }
}

/**
 * The workspace: its real path, the protected paths, and the pinned-directory operations every file tool uses.
 *
 * @example
 * ```ts
 * import { Workspace } from "./workspace.ts";
 * const workspace = Workspace.fromEnvironment();
 * const target = workspace.locate("notes/today.md", { follow: true });
 * const file = workspace.openFile(target);
 * try {
 *   new TextDecoder().decode(file.read(0, file.size));
 * } finally {
 *   file.close();
 * }
 * ```
 */
export class Workspace {
  /** The real path of the workspace. */
  readonly root: string;
  /** What the tools may not change or read. */
  readonly protection: Protection;

  constructor(root: string, protection: Protection = NOTHING_PROTECTED) {
    this.root = root;
    this.protection = protection;
  }

  /** The workspace of this process (its cwd, as the kernel reports it) and `TOOLGATE_PROTECTED`. */
  static fromEnvironment(): Workspace {
    return new Workspace(Deno.cwd(), loadProtection(Deno.env.get(PROTECTED_VARIABLE)));
  }

  /**
   * Pins the cwd to the directory at the real path `real`, or throws: whatever sits at that path now must be a
   * directory whose kernel-reported path is exactly `real` (so no symlink was swapped into it).
   */
  pin(real: string): void {
    let now: string | undefined;
    try {
      Deno.chdir(real);
      now = Deno.cwd();
    } catch {
      now = undefined;
    }
    if (now !== real) throw this.#changed(relative(this.root, real) || ".");
  }

  /**
   * Finds the entry a path argument names: every parent directory is entered and verified to be inside the
   * workspace (symlinks among them are followed only to places inside), and the cwd is left pinned to the entry's
   * parent, so the caller acts on `name` alone. A final symlink is followed (when `follow`) by resolving it,
   * checking the target, and walking again from the root.
   */
  locate(raw: string, options: LocateOptions = {}): Located {
    const field = options.field ?? "path";
    const parsed = parseRelative(raw, field);
    let segments = parsed.segments;
    for (let links = 0;; links++) {
      if (links > MAX_SYMLINKS) {
        throw invalidArgs(field, `${field} ${quote(raw)} goes through too many symlinks`, PATH_EXPECTED);
      }
      this.pin(this.root);
      if (segments.length === 0) {
        const info = Deno.lstatSync(".");
        return {
          rel: parsed.rel,
          field,
          dir: this.root,
          dirId: identity(info),
          name: ".",
          real: this.root,
          info,
          isRoot: true,
        };
      }
      for (let i = 0; i < segments.length - 1; i++) this.#enterParent(segments, i, raw, parsed.rel, options);
      const dir = Deno.cwd();
      const name = segments[segments.length - 1];
      const info = lstatOrUndefined(name, parsed.rel, field);
      if (info?.isSymlink && options.follow) {
        segments = this.#linkTarget(name, raw, segments.join("/"), field);
        continue;
      }
      const dirId = cwdId() ?? { dev: -1, ino: -1 };
      return { rel: parsed.rel, field, dir, dirId, name, real: join(dir, name), info, isRoot: false };
    }
  }

  /** Enters `segments[i]` from the pinned directory, creating it when asked; refuses anything outside. */
  #enterParent(segments: readonly string[], i: number, raw: string, rel: string, options: LocateOptions) {
    const field = options.field ?? "path";
    const segment = segments[i];
    const walked = segments.slice(0, i + 1).join("/");
    for (let attempt = 1;; attempt++) {
      try {
        // chdir follows a symlink; where it landed is checked just below, from the kernel's own answer.
        Deno.chdir(segment);
        break;
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) {
          if (lstatOrUndefined(segment, rel, field)?.isSymlink) throw unresolved(field, walked);
          if (!options.createParents || attempt > CREATE_ATTEMPTS) {
            throw options.missingParent?.() ??
              new ToolFailure("not_found", `no such file or directory: ${quote(rel)}`, { field });
          }
          this.guardChange(join(Deno.cwd(), segment), rel, field);
          try {
            Deno.mkdirSync(segment);
          } catch (made) {
            if (!(made instanceof Deno.errors.AlreadyExists)) throw fsFailure(made, rel, field);
          }
          continue;
        }
        if (error instanceof Deno.errors.NotADirectory) {
          throw options.parentNotDirectory?.() ??
            new ToolFailure("not_found", `a parent of ${quote(rel)} is not a directory`, { field });
        }
        if (error instanceof Deno.errors.FilesystemLoop) throw unresolved(field, walked);
        throw fsFailure(error, rel, field);
      }
    }
    let now: string;
    try {
      now = Deno.cwd();
    } catch (error) {
      throw fsFailure(error, rel, field);
    }
    if (!isWithin(now, this.root)) throw escapes(field, raw, walked);
  }

  /** The workspace-relative components of the final symlink `name`'s target, or a failure when it leaves. */
  #linkTarget(name: string, raw: string, walked: string, field: string): string[] {
    let target: string;
    try {
      target = Deno.realPathSync(name);
    } catch (error) {
      if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
        throw escapes(field, raw, walked);
      }
      throw unresolved(field, walked);
    }
    if (!isWithin(target, this.root)) throw escapes(field, raw, walked);
    // Only a hint: the components are walked again, each directory pinned and checked.
    return relative(this.root, target).split(sep).filter((s) => s !== "");
  }

  /**
   * Makes sure the cwd is still the entry's pinned parent (the same directory, even if it was renamed since; a
   * caller may have moved the cwd away, then it is pinned again by path and must be that same directory), and
   * returns the entry's real path as it is now.
   */
  #at(entry: Located): string {
    const now = cwdId();
    if (now === undefined || !same(now, entry.dirId)) {
      this.pin(entry.dir);
      const again = cwdId();
      if (again === undefined || !same(again, entry.dirId)) throw this.#changed(entry.rel);
    }
    const dir = Deno.cwd();
    if (!isWithin(dir, this.root)) throw escapes(entry.field, entry.rel, entry.rel);
    return entry.isRoot ? dir : join(dir, entry.name);
  }

  #changed(rel: string): ToolFailure {
    return new ToolFailure(
      "execution_error",
      `${quote(rel)} changed while the tool was working on it (moved, removed or replaced); try again`,
    );
  }

  /**
   * Moves the cwd into the located directory and returns its real path (the workspace itself included). It must
   * be the very directory that was located: a symlink swapped in since is not followed anywhere. A hidden
   * directory is refused.
   */
  enter(entry: Located): string {
    this.#at(entry);
    if (!entry.isRoot) {
      const seen = entry.info;
      try {
        Deno.chdir(entry.name);
      } catch (error) {
        throw fsFailure(error, entry.rel, entry.field);
      }
      const landed = cwdId();
      if (seen === undefined || landed === undefined || !same(landed, identity(seen))) {
        throw this.#changed(entry.rel);
      }
    }
    const now = Deno.cwd();
    if (!isWithin(now, this.root)) throw escapes(entry.field, entry.rel, entry.rel);
    this.guardRead(now, entry.rel, entry.field);
    return now;
  }

  /**
   * Moves the cwd from the pinned directory into its child directory `name`, only when the directory entered is
   * the very one `name` held when looked at (so never through a symlink swapped in), and returns its real path
   * and the identity of the directory left (for {@linkcode Workspace.ascend}); `undefined` when it is not, and
   * the cwd is back where it was.
   */
  descend(name: string): { real: string; parent: DirectoryId; parentReal: string } | undefined {
    const parent = cwdId();
    const parentReal = Deno.cwd();
    let seen: Deno.FileInfo;
    try {
      seen = Deno.lstatSync(name);
    } catch {
      return undefined;
    }
    if (parent === undefined || !seen.isDirectory) return undefined;
    try {
      Deno.chdir(name);
    } catch {
      return undefined;
    }
    const landed = cwdId();
    const real = Deno.cwd();
    if (landed !== undefined && same(landed, identity(seen)) && isWithin(real, this.root)) {
      return { real, parent, parentReal };
    }
    // Not the directory that was looked at: back to the parent, which must be the same directory as before.
    this.pin(parentReal);
    const back = cwdId();
    if (back === undefined || !same(back, parent)) {
      throw this.#changed(relative(this.root, parentReal) || ".");
    }
    return undefined;
  }

  /** Goes back up from a directory entered with {@linkcode Workspace.descend} to the very directory it left. */
  ascend(from: { parent: DirectoryId; parentReal: string }): void {
    try {
      // `..` of the cwd is its parent directory itself, whatever names were swapped meanwhile.
      Deno.chdir("..");
    } catch {
      // Handled below: the identity will not match.
    }
    const now = cwdId();
    if (now !== undefined && same(now, from.parent)) return;
    // The child was moved to another parent meanwhile: the old parent by path, if it is still that directory.
    this.pin(from.parentReal);
    const again = cwdId();
    if (again === undefined || !same(again, from.parent)) {
      throw this.#changed(relative(this.root, from.parentReal) || ".");
    }
  }

  /** The entries of the pinned directory, in name order. */
  listHere(): Deno.DirEntry[] {
    return Array.from(Deno.readDirSync(".")).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Opens the located entry for reading: it must be a regular file (a FIFO, socket or device is refused without
   * being opened), it is opened without following a symlink and without blocking, and what was opened is checked
   * again.
   */
  openFile(entry: Located): OpenedFile {
    const real = this.#at(entry);
    const { rel, field } = entry;
    if (entry.info === undefined) {
      throw new ToolFailure("not_found", `no such file or directory: ${quote(rel)}`, { field });
    }
    if (!entry.info.isFile) throw this.notRegular(entry, describeType(entry.info));
    this.guardRead(real, rel, field);
    let fd: number;
    try {
      fd = fs.openSync(entry.name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    } catch (error) {
      throw this.#openFailure(error, entry);
    }
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) {
      fs.closeSync(fd);
      throw this.notRegular(entry, "no longer a regular file");
    }
    return new OpenedFile(fd, stat.size, stat.mode & 0o7777);
  }

  /**
   * Opens the regular file `name` of the pinned directory during a walk; `undefined` when it is anything else by
   * now (a symlink, a FIFO swapped in) or cannot be opened.
   */
  openChild(name: string): OpenedFile | undefined {
    let fd: number;
    try {
      fd = fs.openSync(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    } catch {
      return undefined;
    }
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) {
      fs.closeSync(fd);
      return undefined;
    }
    return new OpenedFile(fd, stat.size, stat.mode & 0o7777);
  }

  /**
   * Replaces (or creates) the located file atomically: a new file under a random name in the same pinned
   * directory, created exclusively and without following links, written, synced, then renamed over the entry. A
   * reader sees the old file or the new one; whatever was swapped in at the name is replaced, never written through.
   */
  writeFile(entry: Located, bytes: Uint8Array, mode?: number): void {
    this.guardChange(this.#at(entry), entry.rel, entry.field);
    const temp = `.${entry.name.slice(0, 100)}.${crypto.randomUUID().slice(0, 8)}.tmp`;
    let fd: number | undefined;
    try {
      fd = fs.openSync(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, mode ?? 0o644);
      let written = 0;
      while (written < bytes.length) written += fs.writeSync(fd, bytes, written, bytes.length - written);
      // The create mode passed the umask; a replaced file keeps exactly its old mode.
      if (mode !== undefined) fs.fchmodSync(fd, mode);
      fs.fdatasyncSync(fd);
      fs.closeSync(fd);
      fd = undefined;
      Deno.renameSync(temp, entry.name);
    } catch (error) {
      if (fd !== undefined) fs.closeSync(fd);
      try {
        Deno.removeSync(temp);
      } catch {
        // Never created, or already renamed.
      }
      throw this.#openFailure(error, entry);
    }
  }

  /** Creates the located entry as a directory (it must not exist: `AlreadyExists` is thrown as is). */
  makeDirectory(entry: Located): void {
    this.guardChange(this.#at(entry), entry.rel, entry.field);
    Deno.mkdirSync(entry.name);
  }

  /**
   * Removes the located entry itself: a symlink is unlinked (never its target), a directory only when empty unless
   * `recursive` (Deno's recursive removal opens each level without following links). The workspace itself, a
   * protected path and a directory holding one are refused.
   */
  remove(entry: Located, recursive: boolean): void {
    this.#at(entry);
    if (entry.isRoot) {
      throw invalidArgs(
        entry.field,
        "refusing to remove the workspace itself",
        "a path inside the workspace",
      );
    }
    this.guardChange(entry.real, entry.rel, entry.field);
    if (entry.info?.isDirectory) {
      const inside = protectedInside(this.protection, entry.real);
      if (inside !== undefined) {
        throw this.#protected(
          entry.field,
          `${quote(entry.rel)} holds ${
            quote(relative(this.root, inside) || inside)
          }, part of toolgate's control plane, which no tool may change`,
        );
      }
    }
    Deno.removeSync(entry.name, { recursive });
  }

  /** Is the real path at or under a hidden path (left out of listings and searches)? */
  isHidden(real: string): boolean {
    return protectionAt(this.protection, real) === "hidden";
  }

  /** Refuses to read or list at or under a hidden path. */
  guardRead(real: string, rel: string, field: string): void {
    if (this.isHidden(real)) {
      throw this.#protected(
        field,
        `${quote(rel)} is hidden: it is part of toolgate's control plane, which no tool may read or list`,
      );
    }
  }

  /** Refuses to write, create, replace or delete at or under a read-only or hidden path. */
  guardChange(real: string, rel: string, field: string): void {
    const kind = protectionAt(this.protection, real);
    if (kind !== undefined) {
      throw this.#protected(
        field,
        `${quote(rel)} is ${
          kind === "hidden" ? "hidden" : "read-only"
        }: it is part of toolgate's control plane, which no tool may change`,
      );
    }
  }

  #protected(field: string, message: string): ToolFailure {
    return new ToolFailure("rejected", message, {
      field,
      expected: "a path outside toolgate's control plane",
      retryable: false,
    });
  }

  /** `invalid_args` for an entry that is not a regular file (`what` says what it is instead). */
  notRegular(entry: Located, what: string): ToolFailure {
    return invalidArgs(
      entry.field,
      `not a regular file: ${quote(entry.rel)} (${what})`,
      "a regular file path",
    );
  }

  #openFailure(error: unknown, entry: Located): ToolFailure {
    if (error instanceof ToolFailure) return error;
    const { rel, field } = entry;
    switch (nodeCode(error)) {
      case "ELOOP":
        return new ToolFailure(
          "execution_error",
          `${quote(rel)} was replaced by a symlink while the tool was opening it; try again`,
          { field },
        );
      case "ENXIO":
        return this.notRegular(entry, "a socket or a device without a driver");
      case "ENOENT":
        return new ToolFailure("not_found", `no such file or directory: ${quote(rel)}`, { field });
      case "EACCES":
      case "EPERM":
        return new ToolFailure("execution_error", `permission denied: ${quote(rel)}`, { retryable: false });
      case "EISDIR":
        return this.notRegular(entry, "a directory");
    }
    if (error instanceof Deno.errors.IsADirectory) return this.notRegular(entry, "a directory");
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.PermissionDenied) {
      return fsFailure(error, rel, field);
    }
    return new ToolFailure("execution_error", `${quote(rel)}: ${errorMessage(error)}`);
  }
}
