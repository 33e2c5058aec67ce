/**
 * The control plane as the file tools see it: `TOOLGATE_PROTECTED` (JSON `{"readOnly": [...], "hidden": [...]}`,
 * absolute paths) names what no file tool may change (`readOnly` and `hidden`) and what no file tool may read or
 * list (`hidden`). Each path is kept both as written and with its symlinks resolved, and a target is compared by
 * its real path, so no symlink leads around a protected path. A malformed value refuses every call: the person
 * meant to protect something, and guessing what would fail open.
 *
 * @module
 */
import { basename, dirname, isAbsolute, join, normalize } from "node:path";
import { errorMessage, ToolFailure } from "./envelope.ts";
import { isWithin } from "./paths.ts";

/**
 * The environment variable the executor fills.
 *
 * @example
 * ```ts
 * import { loadProtection, PROTECTED_VARIABLE } from "./protected.ts";
 * loadProtection(Deno.env.get(PROTECTED_VARIABLE));
 * ```
 */
export const PROTECTED_VARIABLE = "TOOLGATE_PROTECTED";

/** What a protected path forbids: `readOnly` forbids changes, `hidden` also forbids reading and listing. */
export type ProtectionKind = "readOnly" | "hidden";

/** The protected paths, each in every form a real path could take (as written, symlinks resolved). */
export interface Protection {
  readonly readOnly: readonly string[];
  readonly hidden: readonly string[];
}

/**
 * Nothing protected: the variable is absent or empty.
 *
 * @example
 * ```ts
 * import { loadProtection, NOTHING_PROTECTED } from "./protected.ts";
 * loadProtection("") === NOTHING_PROTECTED; // true
 * ```
 */
export const NOTHING_PROTECTED: Protection = { readOnly: [], hidden: [] };

function malformed(why: string): ToolFailure {
  return new ToolFailure(
    "execution_error",
    `${PROTECTED_VARIABLE} is malformed (${why}); no file operation runs until it is fixed`,
    { retryable: false },
  );
}

/**
 * The forms of one protected path: as written (normalized) and with symlinks resolved; a path that does not exist
 * yet is resolved through its nearest existing ancestor, so creating it later is caught too.
 */
function forms(path: string): string[] {
  const written = normalize(path);
  const found = new Set([written]);
  const tail: string[] = [];
  for (let head = written;; head = dirname(head)) {
    try {
      found.add(join(Deno.realPathSync(head), ...tail));
      break;
    } catch (error) {
      // Anything but a missing path (a loop, no permission) leaves the written form alone: it still protects.
      if (!(error instanceof Deno.errors.NotFound) || head === dirname(head)) break;
      tail.unshift(basename(head));
    }
  }
  return [...found];
}

function readList(value: Record<string, unknown>, key: ProtectionKind): string[] {
  const list = value[key];
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw malformed(`${key} must be an array of absolute paths`);
  const out: string[] = [];
  for (const item of list) {
    if (typeof item !== "string" || !isAbsolute(item) || item.includes("\0")) {
      throw malformed(`${key} holds ${JSON.stringify(item)}, not an absolute path`);
    }
    out.push(...forms(item));
  }
  return out;
}

/**
 * Reads the protected paths from the variable's text: absent or empty is {@linkcode NOTHING_PROTECTED}; anything
 * malformed throws an `execution_error` failure.
 *
 * @example
 * ```ts
 * import { loadProtection } from "./protected.ts";
 * const protection = loadProtection('{"readOnly": ["/srv/app/tools.json"], "hidden": []}');
 * protection.readOnly.includes("/srv/app/tools.json"); // true
 * ```
 */
export function loadProtection(text: string | undefined): Protection {
  if (text === undefined || text.trim() === "") return NOTHING_PROTECTED;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw malformed(`not JSON: ${errorMessage(error)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw malformed('not a JSON object like {"readOnly": [], "hidden": []}');
  }
  const record = value as Record<string, unknown>;
  return { readOnly: readList(record, "readOnly"), hidden: readList(record, "hidden") };
}

/**
 * How the real path `real` is protected: `hidden` when it is at or under a hidden path, else `readOnly` when it is
 * at or under a read-only one, else `undefined`.
 *
 * @example
 * ```ts
 * import { protectionAt } from "./protected.ts";
 * protectionAt({ readOnly: ["/ws/tools"], hidden: [] }, "/ws/tools/bin/x"); // "readOnly"
 * protectionAt({ readOnly: ["/ws/tools"], hidden: [] }, "/ws/toolsmith"); // undefined
 * ```
 */
export function protectionAt(protection: Protection, real: string): ProtectionKind | undefined {
  if (protection.hidden.some((p) => isWithin(real, p))) return "hidden";
  if (protection.readOnly.some((p) => isWithin(real, p))) return "readOnly";
  return undefined;
}

/**
 * A protected path strictly inside the directory `real`, if any: removing that directory would remove it.
 *
 * @example
 * ```ts
 * import { protectedInside } from "./protected.ts";
 * protectedInside({ readOnly: ["/ws/app/tools.json"], hidden: [] }, "/ws/app"); // "/ws/app/tools.json"
 * ```
 */
export function protectedInside(protection: Protection, real: string): string | undefined {
  return [...protection.hidden, ...protection.readOnly].find((p) => p !== real && isWithin(p, real));
}
