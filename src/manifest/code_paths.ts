/**
 * Which files a tool's or an MCP server's command line names as its own code: every argument (and a server's
 * command) that is a path, relative to the manifest's folder or to the workspace (where the program runs), or
 * absolute (an option such as `-y` names none); the value of a `--flag=PATH` argument; and the module of
 * `python -m pkg.mod` (the package folder `pkg/`, or `pkg.py`). Only paths are worked out here, and which of the
 * files pinned (by `file_pins.ts`) a command line names changed since.
 *
 * Not here: reading and pinning them (`file_pins.ts`), the trust digest (`trust.ts`).
 *
 * @module
 */
import { isAbsolute, join, normalize, resolve } from "../base/paths.ts";
import { type PinnedProgram, stillPinned } from "./file_pins.ts";

/** A path a command line names, as found: the argument, and where it may lie. */
export interface NamedPath {
  /** The argument (or its part) as written. */
  readonly written: string;
  /** Where it lies: against each base folder for a relative path, itself for an absolute one. */
  readonly candidates: readonly string[];
}

function against(path: string, bases: readonly string[]): string[] {
  const clean = path.replaceAll("\\", "/");
  if (isAbsolute(clean)) return [resolve(clean)];
  return [...new Set(bases.map((base) => join(base, normalize(clean))))];
}

/**
 * The paths a command line's `parts` (arguments, and a server's command when it holds a `/`) name, each with the
 * places it may lie in against `bases` (the manifest's folder, then the workspace). An empty part, one holding a
 * NUL, or an option (`-y`, `--flag`) names nothing, but an option's `=VALUE` may; `-m MODULE` names the module's
 * top package folder and its `.py` file.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { namedPaths } from "./code_paths.ts";
 * assert.deepEqual(namedPaths(["-m", "pkg.server", "--config=./c.json"], ["/p"]), [
 *   { written: "pkg", candidates: ["/p/pkg", "/p/pkg.py"] },
 *   { written: "./c.json", candidates: ["/p/c.json"] },
 * ]);
 * ```
 */
export function namedPaths(parts: readonly string[], bases: readonly string[]): NamedPath[] {
  const named: NamedPath[] = [];
  for (const [index, part] of parts.entries()) {
    if (part === "" || part.includes("\0")) continue;
    if (index > 0 && parts[index - 1] === "-m") {
      const top = part.split(".")[0];
      if (top === "" || top.includes("/")) continue;
      named.push({ written: top, candidates: [...against(top, bases), ...against(`${top}.py`, bases)] });
      continue;
    }
    if (part.startsWith("-")) {
      // An option names no file of its own (one more stat for every tool on every command): only its value may.
      const equals = part.indexOf("=");
      if (equals > 0 && equals < part.length - 1) {
        const value = part.slice(equals + 1);
        named.push({ written: value, candidates: against(value, bases) });
      }
      continue;
    }
    named.push({ written: part, candidates: against(part, bases) });
  }
  return named;
}

/**
 * The first of the `pinned` files that the command line `parts` names (a file, or one within a folder it names)
 * and that is no longer as pinned, or `undefined`: each checked by its identity and times, read again only when
 * they moved.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { changedCode } from "./code_paths.ts";
 * import { pinFile } from "./file_pins.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/srv.py`, "print(1)\n");
 * const pinned = await pinFile(`${dir}/srv.py`);
 * if (typeof pinned === "string") throw new Error(pinned);
 * const pins = new Map([[`${dir}/srv.py`, pinned]]);
 * assert.equal(await changedCode(pins, ["./srv.py"], [dir]), undefined);
 * await Deno.writeTextFile(`${dir}/srv.py`, "print(2)\n");
 * assert.equal(await changedCode(pins, ["./srv.py"], [dir]), `${dir}/srv.py`);
 * ```
 */
export async function changedCode(
  pinned: ReadonlyMap<string, PinnedProgram>,
  parts: readonly string[],
  bases: readonly string[],
): Promise<string | undefined> {
  const roots = namedPaths(parts, bases).flatMap((named) => named.candidates);
  for (const [path, pin] of pinned) {
    if (!roots.some((root) => path === root || path.startsWith(`${root}/`))) continue;
    if (!(await stillPinned(path, pin))) return path;
  }
  return undefined;
}
