/**
 * Finding a program on a PATH value, once: the path toolgate probes is the path it runs. A leaf that the state,
 * the sandbox, the run and the gateway all use.
 *
 * @module
 */
import { isAbsolute, join } from "./paths.ts";
import { lstatOrUndefined } from "./lstat.ts";

/**
 * The absolute path of `name` on `path` (a PATH value), or `undefined`: resolved once, so that the program toolgate
 * probes is the program it runs, whatever PATH a later lookup would see.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { findProgram } from "./find_program.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/greet`, "#!/bin/sh\necho hi\n", { mode: 0o755 });
 * assert.equal(findProgram("greet", `/nonexistent:${dir}`), `${dir}/greet`);
 * assert.equal(findProgram("no-such-program-here", dir), undefined);
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function findProgram(name: string, path: string): string | undefined {
  if (isAbsolute(name)) return lstatOrUndefined(name) ? name : undefined;
  for (const dir of path.split(":")) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && (info.mode === null || (info.mode & 0o111) !== 0)) return candidate;
    } catch {
      // Not here: look on.
    }
  }
  return undefined;
}
