/** The executor's default limits, in a module of their own so that option help can name them cheaply. @module */

/**
 * Defaults of the executor's limits.
 *
 * @example
 * ```ts
 * import { EXECUTOR_DEFAULTS } from "./executor_defaults.ts";
 * EXECUTOR_DEFAULTS.timeoutSec; // 30
 * ```
 */
export const EXECUTOR_DEFAULTS = {
  timeoutSec: 30,
  graceMs: 2000,
  maxOutputBytes: 4 * 1024 * 1024,
} as const;
