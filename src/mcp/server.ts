/**
 * The MCP face of a manifest: `tools/list` from the MCP export, `tools/call` through the shared executor
 * (prepare -> approval -> run with the request's AbortSignal), envelopes mapped to MCP results, and progress
 * notifications while a tool runs.
 *
 * @module
 */
// The SDK's "./*" export points `x.js` at types in `x.js.d.ts`, which do not exist: name the types beside each import.
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/index"
import { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { type Envelope, failure, type FailureEnvelope, isRecord, serialize } from "../contract.ts";
import type { Executor } from "../executor.ts";
import { toMcp } from "../exports.ts";
import { type ApprovalPolicy, refusal } from "./approval.ts";
import { CallGate } from "./gate.ts";

/** How often a running call reports progress when the client asked for it. */
export const PROGRESS_INTERVAL_MS = 1000;

/** What the server tells a host about its tools' results (the host may pass it to its model). */
const INSTRUCTIONS = "Every tool result is a JSON envelope: " +
  '{"ok":true,"result":...} on success, or {"ok":false,"kind":...,"message":...,"retryable":...} on failure; ' +
  "read `kind`, `field` and `expected` to correct a failed call.";

/** How a {@linkcode ToolService} runs calls. */
export interface ToolServiceOptions {
  readonly executor: Executor;
  readonly approval: ApprovalPolicy;
  /** The server's version, as `initialize` reports it. */
  readonly version: string;
  /** Between two progress notifications (default {@linkcode PROGRESS_INTERVAL_MS}). */
  readonly progressIntervalMs?: number;
  /** Where protocol trouble (a malformed message, a failed send) is reported; never stdout. */
  readonly onError?: (message: string) => void;
}

/** Per-call context from the MCP request. */
export interface CallContext {
  /** Aborted when the client cancels the request or the connection closes: ends the tool's tree. */
  readonly signal: AbortSignal;
  /** Reports progress (elapsed seconds and a message); absent when the client sent no progress token. */
  readonly progress?: (progress: number, message: string) => Promise<void>;
}

/**
 * An envelope as an MCP tool result: the serialized envelope as text, plus the result as `structuredContent` when
 * it is an object; a failure is `isError: true`.
 *
 * @example
 * ```ts
 * import { toCallResult } from "./server.ts";
 * import { success } from "../contract.ts";
 * toCallResult(success({ a: 1 }, { tool: "t" }));
 * // { content: [{ type: "text", text: '{"ok":true,"result":{"a":1},"tool":"t"}' }], structuredContent: { a: 1 } }
 * ```
 */
export function toCallResult(envelope: Envelope): CallToolResult {
  const content = [{ type: "text" as const, text: serialize(envelope) }];
  if (!envelope.ok) return { content, isError: true };
  return isRecord(envelope.result) ? { content, structuredContent: envelope.result } : { content };
}

/** The answer to a call that the server's shutdown stopped, or that came after it. */
function shuttingDown(tool: string): FailureEnvelope {
  return failure("unavailable", "The MCP server is shutting down; the tool was not run to its end.", {
    tool,
    metadata: { cancelled: true },
  });
}

/**
 * The tools of one executor as an MCP service, shared by every connection (the stdio one, or each HTTP session):
 * one scheduling gate, one approval policy, one list of calls in flight.
 *
 * @example
 * ```ts
 * import { ToolService } from "./server.ts";
 * // const service = new ToolService({ executor, approval: { yes: false, allowTools: new Set() }, version: "0.1.0" });
 * // await service.server().connect(transport);
 * ```
 */
export class ToolService {
  readonly #options: ToolServiceOptions;
  readonly #tools: Tool[];
  readonly #gate = new CallGate();
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Aborted by {@linkcode ToolService.stop}: every call in flight, and every call after it, ends. */
  readonly #stopping = new AbortController();

  constructor(options: ToolServiceOptions) {
    this.#options = options;
    // toMcp writes an object inputSchema (type "object" added when absent), which is what MCP's Tool requires.
    this.#tools = options.executor.manifest.tools.map((tool) => toMcp(tool) as Tool);
  }

  /** The `tools/list` entries. */
  list(): Tool[] {
    return this.#tools.map((tool) => structuredClone(tool));
  }

  /**
   * Runs one `tools/call`. An unknown tool is a JSON-RPC error (`McpError` with `InvalidParams`); everything else,
   * refusals included, is a result holding an envelope.
   */
  call(name: string, args: unknown, context: CallContext): Promise<CallToolResult> {
    const running = this.#call(name, args, context);
    this.#inFlight.add(running);
    const forget = () => void this.#inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  /** Resolves when no call is in flight. */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * Stops serving: the calls in flight are aborted (their trees ended) and answered `unavailable`, as is any call
   * that comes later. Resolves when no call is in flight, so that the answers can go out before the transports
   * close.
   */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.idle();
  }

  /** A new MCP server over this service, for one connection. */
  server(): Server {
    const server = new Server(
      { name: "toolgate", version: this.#options.version },
      { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.list() }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const token = request.params._meta?.progressToken;
      const progress = token === undefined
        ? undefined
        : (value: number, message: string) =>
          extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: value, message },
          });
      return this.call(request.params.name, request.params.arguments, { signal: extra.signal, progress });
    });
    const onError = this.#options.onError;
    if (onError) server.onerror = (error) => onError(`toolgate: mcp: ${error.message}`);
    return server;
  }

  async #call(name: string, args: unknown, context: CallContext): Promise<CallToolResult> {
    const { executor } = this.#options;
    if (this.#stopping.signal.aborted) return toCallResult(shuttingDown(name));
    const prepared = await executor.prepare(name, JSON.stringify(args ?? {}));
    if (!prepared.ok) {
      // The executor has audited it; to the host an unknown tool is a protocol error, not a tool result.
      if (prepared.envelope.kind === "tool_not_found") {
        throw new McpError(ErrorCode.InvalidParams, prepared.envelope.message);
      }
      return toCallResult(prepared.envelope);
    }
    const { call } = prepared;
    const refused = refusal(call.tool, this.#options.approval);
    if (refused) return toCallResult(await executor.refuse(call, refused));
    const signal = AbortSignal.any([context.signal, this.#stopping.signal]);
    const release = await this.#gate.acquire(!call.tool.concurrent, signal);
    // Cancelled while waiting for its turn: run() sees the aborted signal, starts nothing and audits the call.
    const stopProgress = release ? this.#reportProgress(call.tool.name, context) : () => {};
    try {
      const envelope = await executor.run(call, { signal });
      // A call the client did not cancel was stopped by the shutdown: say so, and that a retry may work.
      const stopped = !envelope.ok && envelope.cancelled === true && this.#stopping.signal.aborted &&
        !context.signal.aborted;
      return toCallResult(stopped ? shuttingDown(call.tool.name) : envelope);
    } finally {
      stopProgress();
      release?.();
    }
  }

  /** Sends elapsed seconds every interval until the returned function is called. */
  #reportProgress(tool: string, context: CallContext): () => void {
    const send = context.progress;
    if (!send) return () => {};
    const interval = this.#options.progressIntervalMs ?? PROGRESS_INTERVAL_MS;
    const started = performance.now();
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
      // Progress must grow with every notification: count ticks, and say the measured time in the message.
      const elapsed = Math.round((performance.now() - started) / 1000);
      send(ticks * interval / 1000, `${tool}: running for ${elapsed} s`).catch((error) =>
        this.#options.onError?.(`toolgate: mcp: progress for ${tool} not sent: ${(error as Error).message}`)
      );
    }, interval);
    return () => clearInterval(timer);
  }
}
