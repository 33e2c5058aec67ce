/**
 * The wire of the 2026-07-28 revision as toolgate speaks it: its version beside the session ones, its `_meta`
 * keys and error codes, which messages belong to it, whose state a request's caller is ({@linkcode callerKey}),
 * and its answers as JSON-RPC responses with the HTTP status each one takes.
 *
 * Not here: what the requests do (`stateless.ts`, `stateless_call.ts`); HTTP and stdio (`stateless_http.ts`,
 * `stateless_stdio.ts`).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { LATEST_PROTOCOL_VERSION } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { isRecord } from "../contract.ts";
import type { CallNotification } from "./client_asks.ts";

/** The revision served without sessions. */
export const STATELESS_VERSION = "2026-07-28";

/** Every revision `serve` speaks, newest first: the stateless one, then the ones with `initialize`. */
export const SUPPORTED_VERSIONS: readonly string[] = [
  STATELESS_VERSION,
  LATEST_PROTOCOL_VERSION,
  "2025-06-18",
  "2025-03-26",
  "2024-11-05",
];

/** The `_meta` keys of the revision. */
export const META = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  logLevel: "io.modelcontextprotocol/logLevel",
  serverInfo: "io.modelcontextprotocol/serverInfo",
} as const;

/** The JSON-RPC error codes of the revision, beside JSON-RPC's own. */
export const STATELESS_ERRORS = {
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  headerMismatch: -32020,
  missingClientCapability: -32021,
  unsupportedVersion: -32022,
} as const;

/** How long a client may keep a `tools/list` answer before it asks again (the list changes with a re-trust). */
export const LIST_TTL_MS = 30_000;

/** A notification of a `subscriptions/listen` stream: its acknowledgement, a list's change. */
export interface ListenNotification {
  readonly method:
    | "notifications/subscriptions/acknowledged"
    | "notifications/tools/list_changed"
    | "notifications/prompts/list_changed"
    | "notifications/resources/list_changed";
  readonly params: Record<string, unknown>;
}

/** A JSON-RPC request id. */
export type RequestId = string | number;

/** A JSON-RPC response: a result or an error, to the request `id` (`null` when the request had none). */
export type JsonRpcResponse =
  | { readonly jsonrpc: "2.0"; readonly id: RequestId | null; readonly result: Record<string, unknown> }
  | {
    readonly jsonrpc: "2.0";
    readonly id: RequestId | null;
    readonly error: { readonly code: number; readonly message: string; readonly data?: unknown };
  };

/** A response with the HTTP status it takes when it goes over HTTP (200 but for the revision's rejections). */
export interface StatelessAnswer {
  readonly status: number;
  readonly response: JsonRpcResponse;
}

/** Where a request came from, and what may be sent back beside its answer. */
export interface StatelessFrom {
  /** The connection: `stdio:<id>` for one stdio connection, `http` for the HTTP server's one bearer token. */
  readonly connection: string;
  /** Aborted when the client goes away or cancels: the call's tree ends. */
  readonly signal: AbortSignal;
  /** Sends a notification about the request (its progress, its tool's log messages, a list's change) before the
   * answer; absent where the answer cannot be a stream. */
  readonly notify?: (notification: CallNotification | ListenNotification) => void;
}

/**
 * Does the message belong to the stateless revision? It does when its `params._meta` names a protocol version,
 * or, over HTTP, when its `MCP-Protocol-Version` header names one that is not a revision with sessions (a client
 * of the new revision that forgot its `_meta` is answered by this revision's error). An `initialize` without
 * `_meta` never does: an old client keeps its session.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isStateless } from "./stateless_wire.ts";
 * const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28" };
 * assert.ok(isStateless({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: meta } }));
 * assert.ok(!isStateless({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
 * assert.ok(isStateless({ jsonrpc: "2.0", id: 1, method: "server/discover", params: {} }, "2026-07-28"));
 * assert.ok(!isStateless({ jsonrpc: "2.0", id: 1, method: "tools/list" }, "2025-11-25"));
 * ```
 */
export function isStateless(message: unknown, headerVersion?: string | null): boolean {
  if (!isRecord(message) || typeof message.method !== "string") return false;
  const meta = isRecord(message.params) && isRecord(message.params._meta) ? message.params._meta : undefined;
  if (meta !== undefined && META.protocolVersion in meta) return true;
  if (message.method === "initialize") return false;
  return typeof headerVersion === "string" && !SUPPORTED_VERSIONS.slice(1).includes(headerVersion);
}

/**
 * The key a stateless caller's state is kept under: its connection and the name its client gives in
 * `_meta["io.modelcontextprotocol/clientInfo"]`. The name is the client's own claim: it keeps honest clients on
 * one connection apart, not hostile ones (over HTTP every caller holds the same token, and is trusted alike).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { callerKey } from "./stateless_wire.ts";
 * const meta = { "io.modelcontextprotocol/clientInfo": { name: "claude", version: "1" } };
 * assert.equal(callerKey("http", meta), "http|claude");
 * assert.equal(callerKey("stdio:1", {}), "stdio:1|");
 * ```
 */
export function callerKey(connection: string, meta: Record<string, unknown>): string {
  const info = meta[META.clientInfo];
  const name = isRecord(info) && typeof info.name === "string" ? info.name.slice(0, 200) : "";
  return `${connection}|${name}`;
}

/**
 * An error answer to `id`, with the HTTP status it takes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rejected } from "./stateless_wire.ts";
 * assert.deepEqual(rejected(404, 1, -32601, "Method not found: ping").response, {
 *   jsonrpc: "2.0", id: 1, error: { code: -32601, message: "Method not found: ping" },
 * });
 * ```
 */
export function rejected(
  status: number,
  id: RequestId | null,
  code: number,
  message: string,
  data?: unknown,
): StatelessAnswer {
  const error = data === undefined ? { code, message } : { code, message, data };
  return { status, response: { jsonrpc: "2.0", id, error } };
}

/**
 * A complete result answer to `id`: every result of the revision says its `resultType`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answered } from "./stateless_wire.ts";
 * assert.deepEqual(answered(1, { tools: [] }).response, { jsonrpc: "2.0", id: 1, result: { tools: [], resultType: "complete" } });
 * ```
 */
export function answered(id: RequestId | null, result: Record<string, unknown>): StatelessAnswer {
  return { status: 200, response: { jsonrpc: "2.0", id, result: { ...result, resultType: "complete" } } };
}

/**
 * The request's id, when it has a valid one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestId } from "./stateless_wire.ts";
 * assert.equal(requestId({ jsonrpc: "2.0", id: 7, method: "tools/list" }), 7);
 * assert.equal(requestId({ jsonrpc: "2.0", method: "notifications/cancelled" }), null);
 * ```
 */
export function requestId(message: unknown): RequestId | null {
  if (!isRecord(message)) return null;
  const { id } = message;
  return typeof id === "string" || typeof id === "number" ? id : null;
}
