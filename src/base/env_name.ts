/**
 * What an environment variable's name looks like: one rule for the manifest (passthrough, secrets), the secret
 * store and the MCP import.
 *
 * @module
 */

/**
 * What an environment variable's name (a passthrough, a secret) must look like.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ENV_NAME_PATTERN } from "./env_name.ts";
 * assert.ok(ENV_NAME_PATTERN.test("GITHUB_TOKEN"));
 * ```
 */
export const ENV_NAME_PATTERN = /^[A-Z_][A-Z0-9_]*$/;
