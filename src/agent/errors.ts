/** The agent loop's own failures: an endpoint that fails or answers nonsense, a transcript that cannot be written. @module */

/**
 * A failure the agent loop reports as one message on stderr with exit code 1, never as a stack trace.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AgentError } from "./errors.ts";
 * const error = new AgentError("the chat endpoint answered 401 Unauthorized: bad key");
 * assert.ok(error instanceof Error);
 * ```
 */
export class AgentError extends Error {
  /** The HTTP status of the endpoint's answer, when the failure is one. */
  readonly status?: number;

  constructor(message: string, options: { status?: number } = {}) {
    super(message);
    this.name = "AgentError";
    if (options.status !== undefined) this.status = options.status;
  }
}
