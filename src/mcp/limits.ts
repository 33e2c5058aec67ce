/** The MCP server's default caps, in a module of their own so that option help can name them cheaply. @module */

/**
 * The most calls in flight: server-wide, and per session.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CALL_LIMITS } from "./limits.ts";
 * assert.equal(CALL_LIMITS.maxCalls, 16);
 * ```
 */
export const CALL_LIMITS = { maxCalls: 16, maxSessionCalls: 4 } as const;

/**
 * The most HTTP sessions open at once, and how long an idle one lives.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SESSION_LIMITS } from "./limits.ts";
 * assert.equal(SESSION_LIMITS.idleSec, 600);
 * ```
 */
export const SESSION_LIMITS = { maxSessions: 32, idleSec: 600 } as const;
