/**
 * What a failed start's stderr says was not found (Node's `Cannot find module` and `ENOENT`, Python's `can't open
 * file`, a shell's `not found`, `No such file or directory`), and which of those paths lie outside what a sandbox
 * shows: the folder to add to the profile's `read`.
 *
 * Not here: what the sandbox shows (`sandbox/sandbox.ts`, the caller passes it), the envelope (`run_envelope.ts`).
 *
 * @module
 */
import { dirname, resolve } from "../base/paths.ts";
import { isWithin } from "../contract/relative_path.ts";

/** A line that says something was not found. */
const NOT_FOUND_LINE = /ENOENT|Cannot find module|No such file|can't open file|: not found\b|not found:/i;

/** An absolute path in a line: quoted, or bare up to a space, a quote, a colon or a comma. */
const PATH_IN_LINE = /'(\/[^']+)'|"(\/[^"]+)"|(?:^|[\s(=])(\/[^\s'",:)]+)/g;

/**
 * What stderr says was missing: whether a line says so at all, and the absolute paths such lines name (a stack
 * trace's own frames left out), in order, each once.
 *
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { missingPaths } from "./missing_path.ts";
 * deepEqual(missingPaths("Error: Cannot find module '/opt/srv/dist/index.js'\n    at Module._resolveFilename (node:internal)"), {
 *   said: true,
 *   paths: ["/opt/srv/dist/index.js"],
 * });
 * deepEqual(missingPaths("all is well"), { said: false, paths: [] });
 * ```
 */
export function missingPaths(stderr: string): { said: boolean; paths: string[] } {
  const paths: string[] = [];
  let said = false;
  for (const line of stderr.split("\n")) {
    if (!NOT_FOUND_LINE.test(line) || /^\s+at /.test(line)) continue;
    said = true;
    for (const match of line.matchAll(PATH_IN_LINE)) {
      const path = match[1] ?? match[2] ?? match[3];
      if (path !== undefined && !paths.includes(path)) paths.push(path);
    }
  }
  return { said, paths };
}

/**
 * The folder to add to a profile's `read` so that `path` is seen: a package's `node_modules` folder when the path
 * lies in one (its dependencies beside it are needed too), else the path's own folder.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { readFolderFor } from "./missing_path.ts";
 * equal(readFolderFor("/home/me/srv/node_modules/@x/y/dist/index.js"), "/home/me/srv/node_modules");
 * equal(readFolderFor("/home/me/.helpers/run.py"), "/home/me/.helpers");
 * ```
 */
export function readFolderFor(path: string): string {
  const at = path.lastIndexOf("/node_modules/");
  return at !== -1 ? path.slice(0, at + "/node_modules".length) : dirname(path);
}

/**
 * The paths of `paths` that none of `visible` (absolute folders or files the sandbox shows) holds.
 *
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { hiddenPaths } from "./missing_path.ts";
 * deepEqual(hiddenPaths(["/usr/bin/node", "/home/me/x.js"], ["/usr", "/srv/project"]), ["/home/me/x.js"]);
 * ```
 */
export function hiddenPaths(paths: readonly string[], visible: readonly string[]): string[] {
  const shown = visible.map((path) => resolve(path));
  return paths.filter((path) => !shown.some((folder) => folder === "/" || isWithin(resolve(path), folder)));
}
