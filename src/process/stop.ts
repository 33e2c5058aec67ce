/**
 * Why a call's AbortSignal fired, when a person or toolgate's own end stopped it, and the envelope that says so: a
 * person's stop (Ctrl-C, an MCP client's cancellation, a `job` kill a person asked for) is `killed_by: "user"`;
 * toolgate's end (SIGTERM, SIGHUP, a host that closed stdin or went away) is `killed_by: "shutdown"`. Not here:
 * ending the trees (src/process/process_tree.ts), hearing the signals (src/commands/signal_stop.ts).
 *
 * @module
 */
import { failure, type FailureEnvelope } from "../contract.ts";
import type { StopSignal } from "./process_tree.ts";

/**
 * The abort reason of a call a person stopped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { UserStop } from "./stop.ts";
 * const controller = new AbortController();
 * controller.abort(new UserStop("Ctrl-C"));
 * assert.ok(controller.signal.reason instanceof UserStop);
 * ```
 */
export class UserStop extends Error {
  /** A stop, with how the person gave it. */
  constructor(message = "stopped by the user") {
    super(message);
    this.name = "UserStop";
  }
}

/**
 * Did a person stop the call this signal belongs to?
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stoppedByUser, UserStop } from "./stop.ts";
 * assert.ok(stoppedByUser(AbortSignal.abort(new UserStop())));
 * assert.equal(stoppedByUser(AbortSignal.abort()), false); // a shutdown or a timeout, not a person
 * ```
 */
export function stoppedByUser(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && signal.reason instanceof UserStop;
}

/**
 * The answer to a call a person stopped: `execution_error`, not retryable (running it again would undo what the
 * person just did; the model should ask first), `cancelled: true` and `killed_by: "user"`, which a model branches on.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { userStopped } from "./stop.ts";
 * const envelope = userStopped("exec", { signal: "SIGTERM" });
 * assert.equal(envelope.killed_by, "user");
 * assert.equal(envelope.retryable, false);
 * ```
 */
export function userStopped(
  tool: string,
  metadata: Readonly<Record<string, unknown>> = {},
  message = "The user stopped the call; the tool and every process it started were ended. Do not run it " +
    "again unless the user asks for it.",
): FailureEnvelope {
  return failure("execution_error", message, {
    tool,
    retryable: false,
    metadata: { ...metadata, cancelled: true, killed_by: "user" },
  });
}

/**
 * What ended toolgate while calls ran: a stop signal, or the host that closed stdin (`serve` over stdio).
 *
 * @example
 * ```ts
 * import type { ShutdownCause } from "./stop.ts";
 * const cause: ShutdownCause = "SIGTERM";
 * ```
 */
export type ShutdownCause = StopSignal | "stdin_closed";

/**
 * The abort reason of a call that toolgate's own end stopped (SIGTERM, SIGHUP, a host that closed stdin): nobody
 * judged this call, so what a retry means depends on the tool alone (see {@linkcode shutdownStopped}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ShutdownStop } from "./stop.ts";
 * const controller = new AbortController();
 * controller.abort(new ShutdownStop("SIGTERM"));
 * assert.equal((controller.signal.reason as ShutdownStop).trigger, "SIGTERM");
 * ```
 */
export class ShutdownStop extends Error {
  /** A stop by `cause`. */
  constructor(readonly trigger: ShutdownCause) {
    super(`toolgate was stopped (${trigger})`);
    this.name = "ShutdownStop";
  }
}

/**
 * The cause of toolgate's end that stopped the call this signal belongs to; `undefined` when none did.
 *
 * @example
 * ```ts
 * import { shutdownCause, ShutdownStop } from "./stop.ts";
 * import assert from "node:assert/strict";
 * assert.deepEqual(shutdownCause(AbortSignal.abort(new ShutdownStop("SIGHUP"))), "SIGHUP");
 * assert.deepEqual(shutdownCause(AbortSignal.abort()), undefined);
 * ```
 */
export function shutdownCause(signal: AbortSignal | undefined): ShutdownCause | undefined {
  return signal?.aborted === true && signal.reason instanceof ShutdownStop
    ? signal.reason.trigger
    : undefined;
}

/**
 * The abort reason a stop signal gives: SIGINT is the interrupt key, a person's stop ({@linkcode UserStop}); any
 * other is toolgate's end ({@linkcode ShutdownStop}). The same signal gives the same reason every time, terminal
 * or not, so the same event always gets the same envelope.
 *
 * @example
 * ```ts
 * import { stopReason, UserStop } from "./stop.ts";
 * import assert from "node:assert/strict";
 * assert.deepEqual(stopReason("SIGINT") instanceof UserStop, true);
 * assert.deepEqual(stopReason("SIGTERM").name, "ShutdownStop");
 * ```
 */
export function stopReason(cause: ShutdownCause): UserStop | ShutdownStop {
  return cause === "SIGINT" ? new UserStop(cause) : new ShutdownStop(cause);
}

/**
 * The answer to a call that toolgate's end stopped: `execution_error`, `cancelled: true`, `killed_by: "shutdown"`
 * and `stop_signal` (what ended toolgate), with one piece of advice. `retryable` is the tool's `readOnly`, whether
 * or not the program had started yet: a read-only tool may simply run again; any other may have acted, so the
 * caller checks first. The same event on the same tool always gets the same answer.
 *
 * @example
 * ```ts
 * import { shutdownStopped } from "./stop.ts";
 * import assert from "node:assert/strict";
 * const envelope = shutdownStopped("build", "SIGTERM", false);
 * assert.deepEqual([envelope.killed_by, envelope.stop_signal, envelope.retryable], ["shutdown", "SIGTERM", false]);
 * ```
 */
export function shutdownStopped(
  tool: string,
  cause: ShutdownCause,
  readOnly: boolean,
  metadata: Readonly<Record<string, unknown>> = {},
): FailureEnvelope {
  const why = cause === "stdin_closed" ? "its host closed its input" : `it received ${cause}`;
  const advice = readOnly
    ? "the tool only reads, so it is safe to run again."
    : "the tool may have acted before it was stopped: check what it did before running it again.";
  return failure(
    "execution_error",
    `toolgate was ending (${why}), so the call was stopped before its end; ${advice}`,
    {
      tool,
      retryable: readOnly,
      metadata: { ...metadata, cancelled: true, killed_by: "shutdown", stop_signal: cause },
    },
  );
}

/**
 * The stop button of a caller on a terminal: while calls run, the caller arms it with what stops them.
 *
 * @example
 * ```ts
 * import type { StopButton } from "./stop.ts";
 * import { ProcessRegistry } from "./process_tree.ts";
 * const registry = new ProcessRegistry(2000);
 * const button: StopButton = { arm: (stop) => registry.interceptInterrupt(stop) };
 * ```
 */
export interface StopButton {
  /**
   * Routes a press to `stop` until the returned function is called; `stop` returns false when it had nothing
   * to stop (the press then means what it meant without the button: end toolgate).
   */
  arm(stop: () => boolean): () => void;
}
