/**
 * The seam between the executor and a pool of workers that runs its calls (`--executor nats://...`): the calls it
 * hands over, the answers it gets back, and the limits a call runs under. The run layer owns these types; the
 * pool's client (src/pool/client.ts) implements {@linkcode ToolPool}, and its wire messages carry
 * {@linkcode CallDefaults}. Not here: the NATS wire format (src/pool/protocol.ts), the client itself.
 *
 * @module
 */
import type { Envelope } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import type { ToolEvent } from "../manifest/tool_messages.ts";
import type { QuestionHandlers } from "./tool_questions.ts";

/**
 * The limits a call runs under: the caller's, so that a call through the pool stops when a local one would.
 *
 * @example
 * ```ts
 * import type { CallDefaults } from "./tool_pool.ts";
 * const defaults: CallDefaults = { timeoutSec: 30, graceMs: 2000, maxOutputBytes: 4194304 };
 * ```
 */
export interface CallDefaults {
  /** Used when the tool has no `timeoutSec` of its own. */
  readonly timeoutSec: number;
  /** Time between SIGTERM and SIGKILL when the tool is stopped. */
  readonly graceMs: number;
  /** The most bytes kept of each of stdout and stderr. */
  readonly maxOutputBytes: number;
}

/**
 * One call for the pool: what a caller's executor hands over once the call is checked and approved.
 *
 * @example
 * ```ts
 * import type { PoolRequest } from "./tool_pool.ts";
 * const request: PoolRequest = {
 *   tool: "get_time", readOnly: true, argsText: '{"timezone":"UTC"}', startWithinMs: 30_000,
 *   defaults: { timeoutSec: 30, graceMs: 2000, maxOutputBytes: 4194304 },
 * };
 * ```
 */
export interface PoolRequest {
  /** The tool's name. */
  readonly tool: string;
  /** The tool has no side effects: a worker that dies running it is replaced by another. */
  readonly readOnly: boolean;
  /** The arguments as the caller's model or client sent them (checked here already, and again on the worker). */
  readonly argsText: string;
  /** The caller's limits, which the worker runs the call under. */
  readonly defaults: CallDefaults;
  /** How long the call may wait for a worker to take it (its timeout): past it, it answers `unavailable`. */
  readonly startWithinMs: number;
  /** Stops the call: before a worker took it, it never runs; after, its tree ends on the worker. */
  readonly signal?: AbortSignal;
  /** Where a `toolgate/1` tool's questions, log and progress go from its worker (absent: nobody answers). */
  readonly relay?: RelayTarget;
  /** The calling span's trace context (`traceparent`, `tracestate`), sent as the message's headers. */
  readonly trace?: Readonly<Record<string, string>>;
}

/**
 * What the caller relays a pooled call's tool messages to: the tool as the caller knows it, who answers its
 * questions, where its log and progress go, and the caller's redaction of secret values.
 *
 * @example Not run as a doc test: a fragment of the agent's wiring, with its tool, questions and progress in scope.
 * ```ts ignore
 * import type { RelayTarget } from "./tool_pool.ts";
 * const target: RelayTarget = { tool, questions: agentQuestions(...), onToolEvent: (event) => progress.toolEvent(id, event) };
 * ```
 */
export interface RelayTarget {
  /** The tool, as the caller's manifest has it (its `asks` is checked again). */
  readonly tool: ToolSpec;
  /** Who answers its questions (absent: each is answered with an error). */
  readonly questions?: QuestionHandlers;
  /** Where its log and progress go. */
  readonly onToolEvent?: (event: ToolEvent) => void;
  /** The caller's redaction of secret values, for what its questions carry out. */
  readonly scrub?: (text: string) => string;
}

/**
 * What came of a call: its envelope, the id both audit logs know it by, and the worker that answered (if any).
 *
 * @example
 * ```ts
 * import type { PoolAnswer } from "./tool_pool.ts";
 * const answer: PoolAnswer = { id: "0b7c...", worker: "build-1:4242", envelope: { ok: true, result: {} } };
 * ```
 */
export interface PoolAnswer {
  /** The call's id, in the caller's and the worker's audit lines. */
  readonly id: string;
  /** The worker that answered, if one did. */
  readonly worker?: string;
  /** The call's envelope: the worker's, or the pool's own `unavailable` (or a stop's) saying why there is none. */
  readonly envelope: Envelope;
}

/**
 * A pool of workers that runs calls in a caller's stead (what `--executor nats://...` gives the executor).
 *
 * @example
 * ```ts
 * import type { ToolPool } from "./tool_pool.ts";
 * const inline: ToolPool = {
 *   shown: "inline",
 *   run: (request) => Promise.resolve({ id: "1", envelope: { ok: true, result: {}, tool: request.tool } }),
 *   close: () => Promise.resolve(),
 * };
 * ```
 */
export interface ToolPool {
  /** The pool's address, as it may be shown (no secrets). */
  readonly shown: string;
  /** Runs one call on a worker; never throws for the pool's trouble: that is an envelope too. */
  run(request: PoolRequest): Promise<PoolAnswer>;
  /** Lets go of the connection. */
  close(): Promise<void>;
}
