/**
 * One look at a manifest's `tools/bin` for a whole manifest: the folder's real path and its entries, read once,
 * so that checking a thousand commands costs one directory read instead of two path resolutions and a stat each.
 * A plain file directly inside the folder needs nothing more; a link, a folder or a deeper path is resolved as
 * before, one by one.
 *
 * @module
 */
import { dirname, sep } from "../base/paths.ts";
import { isWithin } from "../contract/relative_path.ts";

function realPath(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Checks that `program` (resolved) stays inside `binDir` once every symlink is followed; where it leads when it
 * does not. A program that does not exist yet passes: the runner reports it as unavailable when called. A caller
 * that checks many calls of one manifest passes the folder's real path, resolved once (`realBinDir`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { escapesBinDir } from "./bin_listing.ts";
 * assert.equal(escapesBinDir("/srv/project/tools/bin/get_time", "/srv/project/tools/bin"), undefined);
 * ```
 */
export function escapesBinDir(
  program: string,
  binDir: string,
  realBinDir: string = realPath(binDir) ?? binDir,
): string | undefined {
  const real = realPath(program);
  if (real === undefined) return undefined;
  return isWithin(real, realBinDir) ? undefined : real;
}

/**
 * The programs of one `tools/bin` folder.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BinListing } from "./bin_listing.ts";
 * const bin = new BinListing("/srv/project/tools/bin");
 * assert.equal(bin.escapes("/srv/project/tools/bin/get_time"), undefined); // it stays inside (or does not exist yet)
 * ```
 */
export class BinListing {
  readonly #dir: string;
  #real?: string;
  /** Name -> whether it is a plain file (not a link, not a folder); `null`: the folder could not be listed. */
  #plain?: Map<string, boolean> | null;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** The folder with every link resolved (itself when it does not exist). */
  get real(): string {
    return this.#real ??= realPath(this.#dir) ?? this.#dir;
  }

  /** What the listing knows of `program`: a plain file, absent, or `undefined` (ask the file system). */
  #known(program: string): "plain" | "absent" | undefined {
    if (dirname(program) !== this.#dir) return undefined;
    if (this.#plain === undefined) {
      try {
        this.#plain = new Map();
        for (const entry of Deno.readDirSync(this.#dir)) this.#plain.set(entry.name, entry.isFile);
      } catch (error) {
        this.#plain = error instanceof Deno.errors.NotFound ? new Map() : null;
      }
    }
    if (this.#plain === null) return undefined;
    const plain = this.#plain.get(program.slice(this.#dir.length + sep.length));
    return plain === undefined ? "absent" : plain ? "plain" : undefined;
  }

  /**
   * Where `program` really is when that is outside the folder once every link is followed, else `undefined`. A
   * program that does not exist yet stays inside: the runner says it is unavailable when it is called.
   */
  escapes(program: string): string | undefined {
    if (this.#known(program) !== undefined) return undefined;
    const real = realPath(program);
    if (real === undefined) return undefined;
    return isWithin(real, this.real) ? undefined : real;
  }

  /** Whether `program` exists (a path toolgate may not read counts as there: the runner tells when it starts it). */
  exists(program: string): boolean {
    const known = this.#known(program);
    if (known !== undefined) return known === "plain";
    try {
      Deno.statSync(program);
      return true;
    } catch (error) {
      return !(error instanceof Deno.errors.NotFound);
    }
  }
}
