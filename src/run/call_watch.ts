/**
 * Who watches the calls as they happen (the web console, `--console`): told when each starts, of its progress and
 * log lines and its stderr as they come, and how it ended; and, when it can, asked about a call that needs approval
 * beside the terminal or the client, and asked a form meant for the user (a tool's, an MCP server's) beside the
 * client. Types only: nothing of a watcher loads unless a command starts one.
 *
 * @module
 */
import type { Envelope } from "../contract.ts";
import type { ToolEvent } from "../manifest/tool_messages.ts";
import type { Answer, ApprovalQuestion } from "../policy/policy.ts";
import type { ElicitAnswer } from "./tool_questions.ts";

/**
 * A call as its caller hands it to the watcher (the arguments as given: the watcher masks secrets).
 *
 * @example
 * ```ts
 * import type { WatchedCall } from "./call_watch.ts";
 * const call: WatchedCall = { tool: "exec", caller: "model", args: { argv: ["ls"] } };
 * ```
 */
export interface WatchedCall {
  readonly tool: string;
  /** Who made it: `model`, `MCP session 1a2b3c4d`, `pool call 5e6f...`. */
  readonly caller: string;
  readonly args: unknown;
  /**
   * Stops the call as its user would (the terminal's Ctrl-C, an MCP client's cancel): its tree ended, its answer
   * `killed_by: "user"`. Absent where the caller cannot stop it.
   */
  readonly stop?: () => void;
}

/**
 * One call being watched, from its start to its end.
 *
 * @example
 * ```ts
 * import type { CallSeen } from "./call_watch.ts";
 * const seen: CallSeen = { toolEvent: () => {}, stderr: () => {}, ended: () => {} };
 * ```
 */
export interface CallSeen {
  /** A `toolgate/1` tool's progress or log message. */
  toolEvent(event: ToolEvent): void;
  /** A piece of the tool's stderr, as it came. */
  stderr(chunk: Uint8Array): void;
  /** Its envelope, or the error that ended it (a protocol error, a bug). */
  ended(result: Envelope | Error): void;
}

/**
 * A form for the user, as a watcher is asked it: the tool whose call asks, its message and its fields (MCP's
 * `requestedSchema`: a flat object of string, number, integer, boolean and enum fields).
 *
 * @example
 * ```ts
 * import type { FormQuestion } from "./call_watch.ts";
 * const form: FormQuestion = { tool: "mcp__ev__ask", message: "Name?", requestedSchema: { type: "object" } };
 * ```
 */
export interface FormQuestion {
  readonly tool: string;
  readonly message: string;
  readonly requestedSchema: Readonly<Record<string, unknown>>;
}

/**
 * Who watches the calls of a front end (`serve`, the agent loop, `worker`).
 *
 * @example
 * ```ts
 * import type { CallWatch } from "./call_watch.ts";
 * const watch: CallWatch = {
 *   started: () => ({ toolEvent: () => {}, stderr: () => {}, ended: () => {} }),
 * };
 * ```
 */
export interface CallWatch {
  /** A call began; returns where its events and its end go. */
  started(call: WatchedCall): CallSeen;
  /** Asks about a call; rejects when the question is withdrawn (`signal`) or not answered within `timeoutMs`. */
  ask?(question: ApprovalQuestion, signal: AbortSignal | undefined, timeoutMs: number): Promise<Answer>;
  /** Asks the user a form; rejects when the question is withdrawn (`signal`) or not answered within `timeoutMs`. */
  form?(question: FormQuestion, signal: AbortSignal | undefined, timeoutMs: number): Promise<ElicitAnswer>;
}
