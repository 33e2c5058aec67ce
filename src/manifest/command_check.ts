/**
 * Where a manifest tool's `command` may point: inside the manifest's `./tools/bin/` (normalized, symlinks
 * followed), or an absolute path only when the load allows it (tests).
 *
 * @module
 */
import { isAbsolute, isWindowsAbsolute, join, normalize, resolve } from "../base/paths.ts";
import type { BinListing } from "./bin_listing.ts";
import type { ManifestOptions } from "./manifest_types.ts";

const BIN_PREFIX = "tools/bin/";

/** Go's %q for the strings we quote: JSON's quoting agrees on everything printable. */
const quote = (value: string): string => JSON.stringify(value);

function isAbsoluteAnywhere(path: string): boolean {
  return isAbsolute(path) || isWindowsAbsolute(path);
}

/** Normalizes a relative command path with `\` as a separator too, without a leading `./`. */
function normalizeRelative(raw: string): string {
  return normalize(raw.replaceAll("\\", "/"));
}

/**
 * A checked value, or the message saying why there is none.
 *
 * @example
 * ```ts
 * import type { Checked } from "./command_check.ts";
 * const failed: Checked<string> = { error: "command must be an array of strings" };
 * ```
 */
export interface Checked<T> {
  value?: T;
  error?: string;
}

/**
 * Checks a tool's `command`: an array of strings whose first names a program inside `./tools/bin/` (after
 * normalization, and once every symlink is followed), or an absolute path where the options allow it. The
 * program resolved, or the one message that says what is wrong.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkCommand } from "./command_check.ts";
 * import { BinListing } from "./bin_listing.ts";
 * const bin = new BinListing("/srv/tools/bin");
 * assert.equal(checkCommand(["./tools/bin/t", "-v"], "/srv", bin, {}).value?.program, "/srv/tools/bin/t");
 * assert.equal(
 *   checkCommand(["../t"], "/srv", bin, {}).error,
 *   'command[0] escapes ./tools/bin after normalization (got "../t" -> "../t")',
 * );
 * ```
 */
export function checkCommand(
  raw: unknown,
  dir: string,
  bin: BinListing,
  options: ManifestOptions,
): Checked<{ program: string; command: string[] }> {
  // agentcli reads a missing or null command as an empty one: same message, so its users see what they know.
  if (raw === undefined || raw === null) return { error: "command must have at least program name" };
  if (!Array.isArray(raw) || raw.some((part) => typeof part !== "string")) {
    return { error: "command must be an array of strings" };
  }
  if (raw.length === 0) return { error: "command must have at least program name" };
  const command = raw as string[];
  const first = command[0];
  let program: string;
  if (first !== "" && isAbsoluteAnywhere(first)) {
    if (!options.allowAbsoluteCommands) {
      return {
        error: `absolute command[0] ${
          quote(first)
        } is refused; pass --allow-absolute-commands to allow it (meant for tests)`,
      };
    }
    program = resolve(first);
  } else {
    const normalized = normalizeRelative(first);
    const slashed = first.replaceAll("\\", "/").replace(/^(\.\/)+/, "");
    if (slashed.startsWith(BIN_PREFIX)) {
      // `./tools/bin/.` names the folder itself: it does not escape, it names no program.
      if (normalized === BIN_PREFIX || normalized === BIN_PREFIX.slice(0, -1)) {
        return { error: `command[0] must name a program inside ./tools/bin/ (got ${quote(first)})` };
      }
      if (!normalized.startsWith(BIN_PREFIX)) {
        return {
          error: `command[0] escapes ./tools/bin after normalization (got ${quote(first)} -> ${
            quote("./" + normalized)
          })`,
        };
      }
    } else if (normalized === ".." || normalized.startsWith("../")) {
      return {
        error: `command[0] escapes ./tools/bin after normalization (got ${quote(first)} -> ${
          quote(normalized)
        })`,
      };
    } else {
      return { error: "relative command[0] must start with ./tools/bin/" };
    }
    program = join(dir, normalized);
    const outside = bin.escapes(program);
    if (outside !== undefined) {
      return {
        error: `command[0] ${quote(first)} resolves outside ./tools/bin through a symlink (-> ${
          quote(outside)
        })`,
      };
    }
  }
  return { value: { program, command } };
}
