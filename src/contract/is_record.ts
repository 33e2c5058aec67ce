/**
 * The one object check every reader of `unknown` JSON starts from. Re-exported by `src/contract.ts`.
 *
 * @module
 */

/**
 * A plain JSON object (not null, not an array).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isRecord } from "../contract.ts";
 * assert.ok(isRecord({ a: 1 }));
 * assert.equal(isRecord([1]), false);
 * assert.equal(isRecord(null), false);
 * ```
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
