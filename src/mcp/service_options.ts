/**
 * What the MCP server's `ToolService` (server.ts) is given: its options (the executor, the operator's approvals,
 * the caps on calls in flight, how often progress is sent) and, for each call, the context of the MCP request
 * (its cancellation, progress, elicitation and the tool's event streams).
 *
 * @module
 */
import type { Executor } from "../run/executor.ts";
import type { CallWatch } from "../run/call_watch.ts";
import type { Redactor } from "../state/redact.ts";
import type { Ask, PolicyOptions } from "../policy/policy.ts";
import type { ToolEvent } from "../manifest/tool_messages.ts";
import type { QuestionHandlers } from "../run/tool_questions.ts";
import type { TraceCarrier, TraceSpan } from "../run/tracing.ts";
import type { AskSecret } from "../run/store_secret.ts";

/**
 * How often a running call reports progress when the client asked for it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PROGRESS_INTERVAL_MS } from "./service_options.ts";
 * assert.equal(PROGRESS_INTERVAL_MS, 1000);
 * ```
 */
export const PROGRESS_INTERVAL_MS = 1000;

/**
 * How a `ToolService` (server.ts) runs calls.
 *
 * @example
 * ```ts
 * import type { ToolServiceOptions } from "./service_options.ts";
 * const approval: ToolServiceOptions["approval"] = { yes: false, allowTools: [], approveHosts: [] };
 * ```
 */
export interface ToolServiceOptions {
  readonly executor: Executor;
  /** The run's redaction of secrets, for what the approval policy shows a person (the one the executor has). */
  readonly redact: Redactor;
  /** What the operator approved when starting the server (`--yes`, `--allow-tools`, `--approve-hosts`). */
  readonly approval: Pick<PolicyOptions, "yes" | "allowTools" | "approveHosts">;
  /** The server's version, as `initialize` reports it. */
  readonly version: string;
  /** The most calls in flight across every session (default `CALL_LIMITS`, limits.ts). */
  readonly maxCalls?: number;
  /** The most calls in flight in one session (default `CALL_LIMITS`, limits.ts). */
  readonly maxSessionCalls?: number;
  /** Between two progress notifications (default {@linkcode PROGRESS_INTERVAL_MS}). */
  readonly progressIntervalMs?: number;
  /** Where protocol trouble (a malformed message, a failed send) is reported; never stdout. */
  readonly onError?: (message: string) => void;
  /**
   * Whether `store_secret` may write the secret store (`--allow-store-secrets`); by default a value a client's
   * user gives lives in that session's memory only, so that no client can rewrite the credentials of later runs.
   */
  readonly allowStoreSecrets?: boolean;
  /** A watcher of every call and a second asker (`serve --console`); absent: nothing is watched. */
  readonly watch?: CallWatch;
  /**
   * The one MCP server served (`serve --server NAME`): its tools are shown by the server's own names
   * (`read_text_file`) rather than toolgate's (`mcp__NAME__read_text_file`), and a name called is that server's
   * tool, so that a host's per-tool settings keep their names. Everything behind the service (approvals, audit
   * lines) keeps toolgate's name.
   */
  readonly server?: string;
}

/**
 * Per-call context from the MCP request.
 *
 * @example
 * ```ts
 * import type { CallContext } from "./service_options.ts";
 * const context: CallContext = { signal: new AbortController().signal };
 * ```
 */
export interface CallContext {
  /** Aborted when the client cancels the request or the connection closes: ends the tool's tree. */
  readonly signal: AbortSignal;
  /** Aborted when a person stops the call in the console (`killed_by: "user"`, as a client's cancel). */
  readonly stop?: AbortSignal;
  /** Reports progress (elapsed seconds and a message); absent when the client sent no progress token. */
  readonly progress?: (progress: number, message: string) => Promise<void>;
  /** Asks the person through the client (elicitation); absent when the client cannot be asked. */
  readonly ask?: Ask;
  /** Sends a `toolgate/1` tool's log and progress messages to the client, on the call's stream. */
  readonly onToolEvent?: (event: ToolEvent) => void;
  /** Sends a `toolgate/1` tool's questions to the client (elicitation, sampling), on the call's stream. */
  readonly questions?: QuestionHandlers;
  /** Sees the tool's stderr as it comes (the console's tail). */
  readonly onStderr?: (chunk: Uint8Array) => void;
  /** The client's trace context (`params._meta.traceparent`) and the request's id, for the call's span. */
  readonly trace?: { readonly parent: TraceCarrier; readonly requestId: string };
  /** The call's span, opened by the server around the call. */
  readonly span?: TraceSpan;
  /**
   * A caller without a session (2026-07-28) whose approval is asked by an input-required round (`ask` is the
   * round's, and the console does not race it): after a refusal, `pending()` gives what to answer instead (thrown,
   * so that nothing runs and nothing is audited before the retry).
   */
  readonly inputRound?: { readonly pending: () => Error | undefined };
  /** Asks the person for a `store_secret` value (a caller without a session: by a URL elicitation round). */
  readonly askSecret?: AskSecret;
}
