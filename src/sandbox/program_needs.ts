/**
 * What a confined tool's program needs to see besides its own files: the interpreter its first line names (`#!/path`
 * or `#!/usr/bin/env NAME`, NAME looked up on the tool's PATH), the runtime a shell launcher `exec`s by name, and
 * the real install folder of each (a venv, a pyenv or nvm version, an npm package folder), found by following
 * symlinks. Runtimes that live under the home folder (pyenv, nvm, `~/.deno`, npx's cache, `~/.cargo/bin`) then run
 * confined with nothing else of the home folder shown.
 *
 * Whatever path this derives may come from a file a tool can change (a venv in the workspace, a symlink), so every
 * one passes the same refusals: never `/`, the home folder or a folder that holds it, a folder directly in the home
 * folder (a file there is fine), toolgate's state or config, or a path through a folder that holds secrets
 * (`.ssh`, `.aws`, `.gnupg`, `.config`, ...); only executable files, and only folders shaped like an install.
 *
 * @module
 */
import { basename, dirname, isAbsolute, join, resolve } from "../base/paths.ts";
import { isWithin } from "../contract/relative_path.ts";
import type { SandboxView } from "../process/run_envelope.ts";
import type { ProgramHeads } from "./program_heads.ts";

/** What the sandbox of one call shows, and what it must never show. */
export interface NeedsContext {
  /** The PATH the tool gets: names are looked up on it as the tool's shell or `env` will. */
  readonly path: string;
  /** The tool's working directory (relative names with a slash resolve there). */
  readonly cwd: string;
  /** What the sandbox shows already (the system folders, the workspace, the tool's files, its profile's read). */
  readonly shown: readonly string[];
  /** The home folder(s): never shown, nor a folder that holds one, nor a folder directly in one. */
  readonly homes: readonly string[];
  /** toolgate's state and config folders: never shown. */
  readonly hidden: readonly string[];
}

/**
 * What to show read-only, and every path toolgate looked at to find it out (what toolgate itself must be allowed
 * to read, under its least permission set, to find the same again); or the program it cannot show, and why.
 */
export type ProgramNeeds =
  | { readonly ok: true; readonly binds: readonly string[]; readonly reads: readonly string[] }
  | { readonly ok: false; readonly program: string; readonly reason: string };

/** How deep a chain of interpreters is followed (a script run by a script run by a binary...). */
const MAX_DEPTH = 4;
/** Interpreters whose scripts are read for `exec NAME` lines. */
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"]);
/** Folders that hold a user's secrets: no path through one is ever shown. */
const SECRET_NAMES = new Set([
  ".ssh",
  ".aws",
  ".gnupg",
  ".config",
  ".azure",
  ".kube",
  ".docker",
  ".password-store",
  ".mozilla",
  ".pki",
  ".netrc",
  ".git-credentials",
  "keyrings",
]);
/** An `exec` line of a shell script: the program word, plain (a name or an absolute path), quoted or not. */
const EXEC_LINE = /^\s*exec\s+(?:"([^"$`\\]+)"|'([^']+)'|([^\s"'$`\\;|&<>()]+))(?=\s|$)/;

function statOf(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.statSync(path);
  } catch {
    return undefined;
  }
}

function realOf(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch {
    return undefined;
  }
}

function isExecutableFile(info: Deno.FileInfo | undefined): boolean {
  return info !== undefined && info.isFile && (info.mode === null || (info.mode & 0o111) !== 0);
}

/**
 * The first bytes of a script, as text (enough for a `#!` line and a launcher's lines); empty for a file that
 * does not start with `#!` (a binary is not decoded: 64 KiB of an ELF file took most of a warm call's reading).
 */
function head(path: string, bytes: number): string {
  let file: Deno.FsFile | undefined;
  try {
    file = Deno.openSync(path);
    const buffer = new Uint8Array(bytes);
    const read = file.readSync(buffer) ?? 0;
    if (read < 2 || buffer[0] !== 0x23 || buffer[1] !== 0x21) return "";
    return new TextDecoder().decode(buffer.subarray(0, read));
  } catch {
    return "";
  } finally {
    file?.close();
  }
}

/** `NAME` of a `#!/usr/bin/env [-S] [VAR=x] [-opt] NAME ...` line's argument, if any. */
function envName(argument: string): string | undefined {
  // Linux hands env the rest of the line as one argument; only `-S` splits it.
  const words = argument.startsWith("-S") ? argument.slice(2).trim().split(/\s+/) : [argument];
  return words.find((word) => word !== "" && !word.startsWith("-") && !word.includes("="));
}

/**
 * Why toolgate never shows `path` by itself, or `undefined` when it may (read-only, at the same path).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { refusal } from "./program_needs.ts";
 * const context = { path: "", cwd: "/w", shown: [], homes: ["/home/u"], hidden: ["/home/u/.local/state/toolgate"] };
 * assert.equal(refusal("/home/u/.ssh/key", false, context), "it lies in .ssh, which holds secrets");
 * assert.equal(refusal("/home/u/.pyenv/versions/3.12.1", true, context), undefined);
 * ```
 */
export function refusal(path: string, folder: boolean, context: NeedsContext): string | undefined {
  const real = realOf(path) ?? path;
  for (const candidate of new Set([path, real])) {
    if (candidate === "/") return "it is the root folder";
    for (const home of context.homes) {
      if (isWithin(home, candidate)) return "it is the home folder or holds it";
      if (
        folder && dirname(candidate) === home && !isVenv(candidate) && basename(candidate) !== "node_modules"
      ) {
        return "it is a folder directly in the home folder";
      }
    }
    for (const hidden of context.hidden) {
      if (isWithin(candidate, hidden) || isWithin(hidden, candidate)) return "it is toolgate's own state";
    }
    const parts = candidate.split("/");
    const secret = parts.find((part) => SECRET_NAMES.has(part) || /history$/i.test(part));
    if (secret !== undefined) return `it lies in ${secret}, which holds secrets`;
    if (candidate.includes("/.local/state/")) return "it lies in .local/state, which holds programs' state";
  }
  return undefined;
}

/**
 * What a confined tool's sandbox shows (`context.shown`, or everything when its profile reads `/`), for telling a
 * path it did not find outside of it, and the folders never proposed for its `read` ({@linkcode refusal}).
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { sandboxView } from "./program_needs.ts";
 * const context = { path: "", cwd: "/w", shown: ["/usr", "/w"], homes: ["/home/u"], hidden: [] };
 * const view = sandboxView(context, []);
 * equal(view.refuses?.("/home/u/.ssh"), "it lies in .ssh, which holds secrets");
 * equal(view.refuses?.("/home/u/.helpers"), undefined);
 * ```
 */
export function sandboxView(context: NeedsContext, reads: readonly string[]): SandboxView {
  return {
    visible: reads.includes("/") ? ["/"] : context.shown,
    reads,
    // Proposed to the user, not shown by itself: a folder directly in the home folder (`~/.helpers`) may be.
    refuses: (folder) => refusal(folder, false, context),
  };
}

function isVenv(folder: string): boolean {
  return statOf(join(folder, "pyvenv.cfg"))?.isFile === true;
}

/** The `home` folder a venv's pyvenv.cfg names (the base interpreter's `bin`), if any. */
function venvHome(venv: string): string | undefined {
  try {
    const text = Deno.readTextFileSync(join(venv, "pyvenv.cfg"));
    const value = /^\s*home\s*=\s*(.+?)\s*$/m.exec(text)?.[1];
    return value !== undefined && isAbsolute(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Does `prefix/lib` hold the runtime's own library (`lib/python3.12` for `python3.12`, `lib/node_modules`)? */
function holdsLibraryOf(prefix: string, executable: string): boolean {
  const stem = basename(executable).replace(/[\d.]+$/, "");
  if (stem.length < 2) return false;
  try {
    for (const entry of Deno.readDirSync(join(prefix, "lib"))) {
      if (entry.isDirectory && entry.name.startsWith(stem)) return true;
    }
  } catch {
    // No lib folder (or none toolgate may read): no prefix.
  }
  return false;
}

/**
 * The install folder an executable belongs to, when it has the shape of one: a venv (`bin/` beside pyvenv.cfg), a
 * runtime's prefix (`bin/NAME` beside `lib/NAME...`: a pyenv or nvm version), or an npm package tree (the nearest
 * `node_modules`). The shapes are narrow on purpose: a symlink a tool planted must not lead to any folder that
 * merely has a `bin/`.
 */
function installFolder(path: string): string | undefined {
  const dir = dirname(path);
  if (basename(dir) === "bin" || basename(dir) === "sbin") {
    const prefix = dirname(dir);
    if (isVenv(prefix)) return prefix;
    if (holdsLibraryOf(prefix, path)) return prefix;
  }
  for (let folder = dir; folder !== "/" && folder !== "."; folder = dirname(folder)) {
    if (basename(folder) === "node_modules") return folder;
  }
  return undefined;
}

/** Works out one program's needs; holds the binds found so far, so that each is shown once. */
class Planner {
  readonly binds: string[] = [];
  /** The programs followed (each one's own path, before symlinks). */
  readonly followed: string[] = [];
  readonly #context: NeedsContext;
  readonly #heads?: ProgramHeads;

  constructor(context: NeedsContext, heads?: ProgramHeads) {
    this.#context = context;
    this.#heads = heads;
  }

  visible(path: string): boolean {
    return [...this.#context.shown, ...this.binds].some((folder) => isWithin(path, folder));
  }

  /** Shows `path` (and, for an executable, its install folder), or says why not. */
  #plan(path: string, executable: boolean): string[] | string {
    if (this.visible(path)) {
      // A program shown as a file of its own (an absolute command) still needs its install folder: a venv's
      // interpreter shown alone runs as the base interpreter, without the venv's packages.
      const alone = executable && !this.#inShownFolder(path) ? installFolder(path) : undefined;
      if (alone === undefined || refusal(alone, true, this.#context) !== undefined) return [];
    }
    const folder = executable ? installFolder(path) : undefined;
    const out: string[] = [];
    if (folder !== undefined && refusal(folder, true, this.#context) === undefined) {
      out.push(folder);
      // A venv runs with its base interpreter's library: that install folder too.
      const home = isVenv(folder) ? venvHome(folder) : undefined;
      const base = home === undefined ? undefined : installFolder(join(home, "python3"));
      if (base !== undefined && !this.visible(base) && refusal(base, true, this.#context) === undefined) {
        out.push(base);
      }
      return out;
    }
    const why = refusal(path, false, this.#context);
    return why ?? [path];
  }

  /** Is `path` inside a folder shown (rather than shown as a file of its own)? */
  #inShownFolder(path: string): boolean {
    return [...this.#context.shown, ...this.binds].some((folder) =>
      folder !== path && isWithin(path, folder)
    );
  }

  /** Can `path` be seen inside the sandbox, as it is or once shown? */
  showable(path: string): boolean {
    const real = realOf(path);
    if (real === undefined) return false;
    return typeof this.#plan(path, true) !== "string" && typeof this.#plan(real, true) !== "string";
  }

  /** Shows what `path` needs to run; a problem names the program and says why. */
  need(given: string, depth: number): { program: string; reason: string } | undefined {
    // Lexically whole (no `..`), so that a path is compared with what the sandbox shows as it will resolve.
    const path = resolve(given);
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(path);
    } catch (error) {
      const reason = error instanceof Deno.errors.NotCapable
        ? "toolgate's own --allow-read does not cover it"
        : "it does not exist";
      return { program: path, reason };
    }
    if (!isExecutableFile(info)) return { program: path, reason: "it is not an executable file" };
    const real = realOf(path) ?? path;
    for (const target of new Set([path, real])) {
      const plan = this.#plan(target, true);
      if (typeof plan === "string") {
        const shown = target === path ? path : `${path} (${target})`;
        return { program: path, reason: `toolgate does not show ${shown}: ${plan}` };
      }
      for (const bind of plan) if (!this.binds.includes(bind)) this.binds.push(bind);
    }
    if (!this.followed.includes(path)) this.followed.push(path);
    if (depth >= MAX_DEPTH) return undefined;
    // `info` is the state of `real` itself when no link led there: its head is then read once while untouched.
    const read = (file: string) => head(file, 64 * 1024);
    const text = this.#heads !== undefined && real === path ? this.#heads.head(real, info, read) : read(real);
    if (!text.startsWith("#!")) return undefined;
    const line = text.slice(2, text.indexOf("\n") === -1 ? undefined : text.indexOf("\n")).trim();
    const interpreter = line.split(/[ \t]/, 1)[0];
    const argument = line.slice(interpreter.length).trim();
    if (!isAbsolute(interpreter)) {
      return {
        program: interpreter || path,
        reason: `the first line of ${path} names no absolute interpreter`,
      };
    }
    const problem = this.need(interpreter, depth + 1);
    if (problem) return problem;
    let shell = basename(interpreter);
    if (shell === "env") {
      const name = envName(argument);
      if (name === undefined) return undefined;
      const found = this.#lookup(name);
      if (typeof found !== "string") return found;
      const inner = this.need(found, depth + 1);
      if (inner) return inner;
      shell = basename(name);
    }
    if (!SHELLS.has(shell)) return undefined;
    // A launcher: each runtime it execs by name or path must be there too.
    for (const scriptLine of text.split("\n").slice(1)) {
      const match = EXEC_LINE.exec(scriptLine);
      const word = match?.[1] ?? match?.[2] ?? match?.[3];
      if (word === undefined || (word.includes("/") && !isAbsolute(word))) continue;
      const found = this.#lookup(word);
      if (typeof found !== "string") return found;
      const inner = this.need(found, depth + 1);
      if (inner) return inner;
    }
    return undefined;
  }

  /**
   * `name` as the tool's shell or `env` finds it: the first executable on the tool's PATH that the sandbox shows
   * or may show. A version manager's shim (pyenv, rbenv, asdf: a `shims` folder) needs the whole manager and is
   * passed over, as the sandbox's own lookup passes over what it does not see.
   */
  #lookup(name: string): string | { program: string; reason: string } {
    if (name.includes("/")) return resolve(this.#context.cwd, name);
    let passed: string | undefined;
    for (const dir of this.#context.path.split(":")) {
      if (!isAbsolute(dir)) continue;
      const candidate = join(dir, name);
      if (!isExecutableFile(statOf(candidate))) continue;
      if (basename(dir) !== "shims" && (this.visible(candidate) || this.showable(candidate))) {
        return candidate;
      }
      passed ??= candidate;
    }
    const reason = passed === undefined
      ? "it is not on the tool's PATH"
      : `it is on the tool's PATH only as ${passed}, which toolgate does not show`;
    return { program: name, reason };
  }
}

/**
 * What `program` needs to run inside the sandbox that shows `context.shown`: the folders and files to show
 * read-only at their own paths, or the program (or interpreter) toolgate cannot show, and why. With `heads`, the
 * programs' first lines are read once while their files stay untouched (a launcher's calls, one after another).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { programNeeds } from "./program_needs.ts";
 * const needs = programNeeds("/bin/sh", {
 *   path: "/usr/bin:/bin",
 *   cwd: "/",
 *   shown: ["/usr", "/bin", "/lib", "/etc"],
 *   homes: [],
 *   hidden: [],
 * });
 * assert.equal(needs.ok && needs.binds.length, 0); // the system folders hold it
 * ```
 */
export function programNeeds(program: string, context: NeedsContext, heads?: ProgramHeads): ProgramNeeds {
  const planner = new Planner(context, heads);
  const problem = planner.need(program, 0);
  if (problem) return { ok: false, ...problem };
  return { ok: true, binds: planner.binds, reads: [...new Set([...planner.followed, ...planner.binds])] };
}
