/**
 * POSIX path arithmetic, with the results of `node:path`'s POSIX functions (the same algorithm), for the modules
 * every command loads: the first `node:` import costs a process about 7 ms of start-up, more than all the rest
 * of this file's work in a run. A test holds each function to `node:path` over thousands of generated paths.
 *
 * @module
 */

const SLASH = 47; // "/"
const DOT = 46; // "."

/** The path separator. */
export const sep = "/";

/** Resolves `.` and `..` segments and repeated slashes in a path without a root (node's `normalizeString`). */
function normalizeString(path: string, allowAboveRoot: boolean): string {
  let result = "";
  let lastSegmentLength = 0;
  let lastSlash = -1;
  let dots = 0;
  let code = 0;
  for (let i = 0; i <= path.length; ++i) {
    if (i < path.length) code = path.charCodeAt(i);
    else if (code === SLASH) break;
    else code = SLASH;
    if (code === SLASH) {
      if (lastSlash === i - 1 || dots === 1) {
        // An empty segment or ".": nothing to add.
      } else if (dots === 2) {
        if (
          result.length < 2 || lastSegmentLength !== 2 || result.charCodeAt(result.length - 1) !== DOT ||
          result.charCodeAt(result.length - 2) !== DOT
        ) {
          if (result.length > 2) {
            const lastSlashIndex = result.lastIndexOf("/");
            if (lastSlashIndex === -1) {
              result = "";
              lastSegmentLength = 0;
            } else {
              result = result.slice(0, lastSlashIndex);
              lastSegmentLength = result.length - 1 - result.lastIndexOf("/");
            }
            lastSlash = i;
            dots = 0;
            continue;
          } else if (result.length !== 0) {
            result = "";
            lastSegmentLength = 0;
            lastSlash = i;
            dots = 0;
            continue;
          }
        }
        if (allowAboveRoot) {
          result += result.length > 0 ? "/.." : "..";
          lastSegmentLength = 2;
        }
      } else {
        if (result.length > 0) result += `/${path.slice(lastSlash + 1, i)}`;
        else result = path.slice(lastSlash + 1, i);
        lastSegmentLength = i - lastSlash - 1;
      }
      lastSlash = i;
      dots = 0;
    } else if (code === DOT && dots !== -1) {
      ++dots;
    } else {
      dots = -1;
    }
  }
  return result;
}

/**
 * Whether `path` starts at the root.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isAbsolute } from "./paths.ts";
 * assert.ok(isAbsolute("/etc"));
 * ```
 */
export function isAbsolute(path: string): boolean {
  return path.charCodeAt(0) === SLASH;
}

/**
 * Whether Windows would read `path` as absolute (`\x`, `C:\x`, `C:/x`): agentcli manifests may come from there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isWindowsAbsolute } from "./paths.ts";
 * assert.ok(isWindowsAbsolute("C:\\tools\\x.exe"));
 * ```
 */
export function isWindowsAbsolute(path: string): boolean {
  const separator = (code: number) => code === SLASH || code === 92;
  if (path.length === 0) return false;
  if (separator(path.charCodeAt(0))) return true;
  return path.length > 2 && /^[A-Za-z]:$/.test(path.slice(0, 2)) && separator(path.charCodeAt(2));
}

/**
 * The path with `.`, `..` and repeated slashes resolved (a trailing slash kept).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normalize } from "./paths.ts";
 * assert.equal(normalize("./tools//bin/../bin/x"), "tools/bin/x");
 * ```
 */
export function normalize(path: string): string {
  if (path.length === 0) return ".";
  const absolute = isAbsolute(path);
  const trailing = path.charCodeAt(path.length - 1) === SLASH;
  let normalized = normalizeString(path, !absolute);
  if (normalized.length === 0) return absolute ? "/" : trailing ? "./" : ".";
  if (trailing) normalized += "/";
  return absolute ? `/${normalized}` : normalized;
}

/**
 * The parts joined with `/`, normalized.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { join } from "./paths.ts";
 * assert.equal(join("/srv", "tools", "../bin"), "/srv/bin");
 * ```
 */
export function join(...parts: string[]): string {
  const joined = parts.filter((part) => part.length > 0).join("/");
  return joined.length === 0 ? "." : normalize(joined);
}

/**
 * The absolute path the parts lead to, from right to left until one is absolute, else from the current folder.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolve } from "./paths.ts";
 * assert.equal(resolve("/srv", "a", "../b"), "/srv/b");
 * ```
 */
export function resolve(...parts: string[]): string {
  let resolved = "";
  let absolute = false;
  for (let i = parts.length - 1; i >= -1 && !absolute; i--) {
    const path = i >= 0 ? parts[i] : Deno.cwd();
    if (path.length === 0) continue;
    resolved = `${path}/${resolved}`;
    absolute = isAbsolute(path);
  }
  resolved = normalizeString(resolved, !absolute);
  if (absolute) return `/${resolved}`;
  return resolved.length > 0 ? resolved : ".";
}

/**
 * The folder that holds `path`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dirname } from "./paths.ts";
 * assert.equal(dirname("/srv/tools/bin/x"), "/srv/tools/bin");
 * ```
 */
export function dirname(path: string): string {
  if (path.length === 0) return ".";
  const hasRoot = isAbsolute(path);
  let end = -1;
  let matchedSlash = true;
  for (let i = path.length - 1; i >= 1; --i) {
    if (path.charCodeAt(i) === SLASH) {
      if (!matchedSlash) {
        end = i;
        break;
      }
    } else {
      matchedSlash = false;
    }
  }
  if (end === -1) return hasRoot ? "/" : ".";
  if (hasRoot && end === 1) return "//";
  return path.slice(0, end);
}

/**
 * The last part of `path` (trailing slashes ignored).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { basename } from "./paths.ts";
 * assert.equal(basename("/srv/tools/bin/x/"), "x");
 * ```
 */
export function basename(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === SLASH) end--;
  if (end === 0) return "";
  return path.slice(path.lastIndexOf("/", end - 1) + 1, end);
}

/**
 * The path from `from` to `to` (both resolved first).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { relative } from "./paths.ts";
 * assert.equal(relative("/srv/a/b", "/srv/c"), "../../c");
 * ```
 */
export function relative(from: string, to: string): string {
  if (from === to) return "";
  from = resolve(from);
  to = resolve(to);
  if (from === to) return "";
  const fromStart = 1;
  const fromEnd = from.length;
  const fromLength = fromEnd - fromStart;
  const toStart = 1;
  const toLength = to.length - toStart;
  const length = fromLength < toLength ? fromLength : toLength;
  let lastCommonSep = -1;
  let i = 0;
  for (; i < length; i++) {
    const code = from.charCodeAt(fromStart + i);
    if (code !== to.charCodeAt(toStart + i)) break;
    else if (code === SLASH) lastCommonSep = i;
  }
  if (i === length) {
    if (toLength > length) {
      if (to.charCodeAt(toStart + i) === SLASH) return to.slice(toStart + i + 1);
      if (i === 0) return to.slice(toStart + i);
    } else if (fromLength > length) {
      if (from.charCodeAt(fromStart + i) === SLASH) lastCommonSep = i;
      else if (i === 0) lastCommonSep = 0;
    }
  }
  let out = "";
  for (i = fromStart + lastCommonSep + 1; i <= fromEnd; ++i) {
    if (i === fromEnd || from.charCodeAt(i) === SLASH) out += out.length === 0 ? ".." : "/..";
  }
  return `${out}${to.slice(toStart + lastCommonSep)}`;
}

/**
 * The path of a `file:` URL, percent-decoded.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fromFileUrl } from "./paths.ts";
 * assert.equal(fromFileUrl("file:///srv/my%20tools/x.ts"), "/srv/my tools/x.ts");
 * ```
 */
export function fromFileUrl(url: string | URL): string {
  const parsed = url instanceof URL ? url : new URL(url);
  if (parsed.protocol !== "file:") throw new TypeError(`not a file URL: ${parsed.href}`);
  return decodeURIComponent(parsed.pathname);
}
