/**
 * Looking at a path without following it: what is there (a link itself, not what it leads to), or nothing. A leaf
 * that the state, the manifest, the sandbox and the PATH lookup share.
 *
 * @module
 */

/**
 * The lstat of `path`, or `undefined` when nothing can be read there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lstatOrUndefined } from "./lstat.ts";
 * assert.equal(lstatOrUndefined("/nonexistent/x"), undefined);
 * ```
 */
export function lstatOrUndefined(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Whether anything is at `path`: a link counts, even one that leads nowhere.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { existsNoFollow } from "./lstat.ts";
 * assert.equal(existsNoFollow("/nonexistent/x"), false);
 * ```
 */
export function existsNoFollow(path: string): boolean {
  return lstatOrUndefined(path) !== undefined;
}
