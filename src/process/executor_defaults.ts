/** The executor's default limits, in a module of their own so that option help can name them cheaply. @module */

/**
 * Defaults of the executor's limits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EXECUTOR_DEFAULTS } from "./executor_defaults.ts";
 * assert.equal(EXECUTOR_DEFAULTS.timeoutSec, 30);
 * ```
 */
export const EXECUTOR_DEFAULTS = {
  timeoutSec: 30,
  graceMs: 2000,
  maxOutputBytes: 4 * 1024 * 1024,
} as const;

/**
 * The most bytes of one stream toolgate keeps (256 MiB): what it can hold in memory, decode into one string and
 * send on. A cap above it is refused where it is given (a usage error, or a `RangeError` from the library), never
 * met in the middle of a call as a crash.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MAX_OUTPUT_BYTES } from "./executor_defaults.ts";
 * assert.equal(MAX_OUTPUT_BYTES, 268435456);
 * ```
 */
export const MAX_OUTPUT_BYTES = 256 * 1024 * 1024;

/**
 * Why `bytes` cannot be an output cap (one line naming the limit), or `undefined` when it can.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { outputCapProblem } from "./executor_defaults.ts";
 * assert.equal(outputCapProblem(1024), undefined);
 * assert.equal(outputCapProblem(2_000_000_000), "is more than toolgate can hold in memory: at most 268435456 bytes (256 MiB) per stream");
 * ```
 */
export function outputCapProblem(bytes: number): string | undefined {
  if (!Number.isInteger(bytes) || bytes <= 0) return "must be an integer > 0";
  if (bytes > MAX_OUTPUT_BYTES) {
    return `is more than toolgate can hold in memory: at most ${MAX_OUTPUT_BYTES} bytes (256 MiB) per stream`;
  }
  return undefined;
}
