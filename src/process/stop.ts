/**
 * A person's stop: the reason a call's AbortSignal carries when a person ended it (Ctrl-C in the agent loop, an MCP
 * client's cancellation, a `job` kill a person asked for), and the envelope that says so with `killed_by: "user"`.
 *
 * @module
 */
import { failure, type FailureEnvelope } from "../contract.ts";

/**
 * The abort reason of a call a person stopped.
 *
 * @example
 * ```ts
 * import { UserStop } from "./stop.ts";
 * const controller = new AbortController();
 * controller.abort(new UserStop("Ctrl-C"));
 * controller.signal.reason instanceof UserStop; // true
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
 * import { stoppedByUser, UserStop } from "./stop.ts";
 * stoppedByUser(AbortSignal.abort(new UserStop())); // true
 * stoppedByUser(AbortSignal.abort()); // false: a shutdown or a timeout, not a person
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
 * import { userStopped } from "./stop.ts";
 * const envelope = userStopped("exec", { signal: "SIGTERM" });
 * envelope.killed_by; // "user"
 * envelope.retryable; // false
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
