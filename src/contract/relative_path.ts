/**
 * The lexical side of a path argument: what the model wrote, checked and split into components before anything
 * touches the file system (absolute paths, NUL bytes and `..` are refused here; symlinks are the business of
 * `workspace.ts`, which walks these components one at a time).
 *
 * @module
 */
import { invalidArgs, ToolFailure } from "./tool_output.ts";

/**
 * What every path field expects, for `invalid_args` failures.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invalidArgs } from "./tool_output.ts";
 * import { PATH_EXPECTED } from "./relative_path.ts";
 * const envelope = invalidArgs("path", "path is absolute", PATH_EXPECTED).toEnvelope();
 * assert.equal(envelope.expected, "a relative path inside the workspace, e.g. src/main.ts");
 * ```
 */
export const PATH_EXPECTED = "a relative path inside the workspace, e.g. src/main.ts";

/** A path argument split into checked components. */
export interface RelativePath {
  /** The path as the model should write it next time: relative, `/`-separated, `.` for the workspace. */
  readonly rel: string;
  /** Its components, without `.` and empty ones; empty for the workspace itself. */
  readonly segments: readonly string[];
  /** Does the text name a directory by its form (`dir/`, `dir/.`, `.`)? */
  readonly namesDirectory: boolean;
}

/**
 * Checks a path argument and splits it, or throws an `invalid_args` failure naming `field`: absolute paths, NUL
 * bytes and `..` segments are refused, whatever they would resolve to.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRelative } from "./relative_path.ts";
 * assert.equal(parseRelative("./notes//today.md").rel, "notes/today.md");
 * assert.ok(parseRelative("notes/").namesDirectory);
 * ```
 */
export function parseRelative(raw: string, field = "path"): RelativePath {
  if (raw.includes("\0")) throw invalidArgs(field, `${field} contains a NUL byte`, PATH_EXPECTED);
  if (raw.startsWith("/") || raw.startsWith("\\") || /^[A-Za-z]:/.test(raw)) {
    throw outside(
      field,
      raw,
      `${field} must be relative to the workspace, got absolute ${JSON.stringify(raw)}`,
    );
  }
  const segments = raw.split("/").filter((s) => s !== "" && s !== ".");
  if (segments.includes("..")) {
    throw outside(field, raw, `${field} must not contain "..": ${JSON.stringify(raw)}`);
  }
  return {
    rel: segments.length === 0 ? "." : segments.join("/"),
    segments,
    namesDirectory: segments.length === 0 || /\/\.?$/.test(raw),
  };
}

/**
 * Joins a listing's relative path and a child name into a ready-to-use relative path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { childPath } from "./relative_path.ts";
 * assert.equal(childPath(".", "a.ts"), "a.ts");
 * assert.equal(childPath("src", "a.ts"), "src/a.ts");
 * ```
 */
export function childPath(rel: string, name: string): string {
  return rel === "." ? name : `${rel}/${name}`;
}

/**
 * Is `path` the folder `parent` or inside it? Lexical: both must be absolute and normalized (real paths are).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isWithin } from "./relative_path.ts";
 * assert.ok(isWithin("/a/b/c", "/a/b"));
 * assert.equal(isWithin("/a/bc", "/a/b"), false);
 * ```
 */
export function isWithin(path: string, parent: string): boolean {
  return path === parent || path.startsWith(parent.endsWith("/") ? parent : parent + "/");
}

/** A path outside the workspace, refused: the failure, with its typed denial (`path`, `workspace only`). */
function outside(field: string, raw: string, message: string): ToolFailure {
  return new ToolFailure("invalid_args", message, {
    field,
    expected: PATH_EXPECTED,
    denials: [{ kind: "path", target: raw, rule: "workspace only" }],
  });
}
