/**
 * Workspace confinement for the file tools: a path argument is relative to the cwd (the workspace), and its real
 * path, with symlinks followed at every component (and, for a path that does not exist yet, up to its nearest
 * existing ancestor), must stay inside the workspace.
 *
 * @module
 */
import { join, sep } from "node:path";
import { fsFailure, invalidArgs } from "./envelope.ts";

/** A path argument checked against the workspace. */
export interface WorkspacePath {
  /** The path as the model should write it next time: relative, `/`-separated, `.` for the workspace. */
  readonly rel: string;
  /** The absolute real path: every symlink resolved; the missing tail appended as written. */
  readonly real: string;
  /** The absolute path of the entry itself: its parent's real path and its own name (a final symlink kept). */
  readonly entry: string;
  /** The real path of the workspace. */
  readonly root: string;
  /** Does the path exist (a final symlink counts when it resolves)? */
  readonly exists: boolean;
  /** Is this the workspace itself? */
  readonly isRoot: boolean;
}

const EXPECTED = "a relative path inside the workspace, e.g. src/main.ts";

/** Is `child` the directory `parent` or inside it? */
export function isInside(child: string, parent: string): boolean {
  if (child === parent) return true;
  return child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/** The real path of the workspace (the cwd). */
export function workspaceRoot(): string {
  return Deno.realPathSync(".");
}

/**
 * Checks a path argument and resolves it inside the workspace, or throws an `invalid_args` failure naming
 * `field`: absolute paths, NUL bytes, `..` segments and any symlink (at any component) whose target leaves the
 * workspace or cannot be resolved are refused.
 *
 * @example
 * ```ts
 * import { resolveInWorkspace } from "./paths.ts";
 * const target = resolveInWorkspace("notes/today.md");
 * target.rel; // "notes/today.md"
 * ```
 */
export function resolveInWorkspace(raw: string, field = "path"): WorkspacePath {
  if (raw.includes("\0")) throw invalidArgs(field, `${field} contains a NUL byte`, EXPECTED);
  if (raw.startsWith("/") || raw.startsWith("\\") || /^[A-Za-z]:/.test(raw)) {
    throw invalidArgs(
      field,
      `${field} must be relative to the workspace, got absolute ${JSON.stringify(raw)}`,
      EXPECTED,
    );
  }
  const segments = raw.split("/").filter((s) => s !== "" && s !== ".");
  if (segments.includes("..")) {
    throw invalidArgs(field, `${field} must not contain "..": ${JSON.stringify(raw)}`, EXPECTED);
  }
  const rel = segments.length === 0 ? "." : segments.join("/");
  const root = workspaceRoot();
  let current = root;
  let parent = root;
  let exists = true;
  for (let i = 0; i < segments.length; i++) {
    parent = current;
    const next = join(current, segments[i]);
    let info: Deno.FileInfo;
    try {
      info = Deno.lstatSync(next);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
        // The nearest existing ancestor is `current`, already checked; the rest does not exist yet.
        exists = false;
        if (i < segments.length - 1) parent = join(current, ...segments.slice(i, -1));
        current = join(current, ...segments.slice(i));
        break;
      }
      throw fsFailure(error, rel, field);
    }
    if (info.isSymlink) {
      const walked = segments.slice(0, i + 1).join("/");
      let target: string;
      try {
        target = Deno.realPathSync(next);
      } catch (error) {
        if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
          throw escapes(field, raw, walked);
        }
        throw invalidArgs(
          field,
          `${field} goes through a symlink that does not resolve: ${walked}`,
          EXPECTED,
        );
      }
      if (!isInside(target, root)) throw escapes(field, raw, walked);
      current = target;
    } else {
      current = next;
    }
  }
  const entry = segments.length === 0 ? root : join(parent, segments[segments.length - 1]);
  return { rel, real: current, entry, root, exists, isRoot: current === root };
}

function escapes(field: string, raw: string, walked: string) {
  return invalidArgs(
    field,
    `${field} ${JSON.stringify(raw)} leaves the workspace through the symlink ${JSON.stringify(walked)}`,
    EXPECTED,
  );
}

/** Joins a listing's relative path and a child name into a ready-to-use relative path. */
export function childPath(rel: string, name: string): string {
  return rel === "." ? name : `${rel}/${name}`;
}
