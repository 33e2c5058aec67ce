/**
 * The 2026-07-28 revision of MCP, served without sessions: each request carries its protocol version, its
 * client's capabilities (and, optionally, its client's name and log level) in `params._meta`, and is answered on
 * its own. This module owns the requests of that revision whatever carries them: which messages belong to it,
 * the checks of their `_meta`, `server/discover`, `tools/list` (in the manifest's order, with `ttlMs` and
 * `cacheScope`), `tools/call` through {@linkcode ToolService.callWithout} (the same approvals, limits, audit and
 * envelopes as a session's call), and the JSON-RPC errors of the revision with the HTTP status each one takes.
 *
 * A stateless caller's state (its turn-taking, its "always" answers, its background jobs) is keyed by the
 * connection it came on (one stdio connection; the one bearer token of the HTTP server) and the `clientInfo`
 * name its requests carry: {@linkcode callerKey}.
 *
 * Not here: the HTTP headers' checks and the answer as JSON or SSE (`stateless_http.ts`); the 2025-11-25
 * sessions (`server.ts`); a call's run (`ToolService`).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { LATEST_PROTOCOL_VERSION, McpError } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { LoggingLevel } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { isRecord } from "../contract.ts";
import { LOG_LEVELS } from "../manifest/tool_protocol.ts";
import type { ToolService } from "./server.ts";
import { type CallNotification, toolEvents } from "./client_asks.ts";
import { carrierFromMeta } from "../run/tracing.ts";
import { APPROVAL_KEY, approvalAnswer, approvalRound, InputRequired, RoundStates } from "./input_rounds.ts";
import type { AskSecret } from "../run/store_secret.ts";
import type { SecretPages } from "./secret_page.ts";

/** The key of a `store_secret` URL elicitation in `inputRequests` and `inputResponses`. */
export const SECRET_KEY = "toolgate_secret";

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
  /** Sends a notification about the request (its progress, its tool's log messages) before the answer. */
  readonly notify?: (notification: CallNotification) => void;
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
 * import { isStateless } from "./stateless.ts";
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
 * import { callerKey } from "./stateless.ts";
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

/** An error answer to `id`. */
function rejected(
  status: number,
  id: RequestId | null,
  code: number,
  message: string,
  data?: unknown,
): StatelessAnswer {
  const error = data === undefined ? { code, message } : { code, message, data };
  return { status, response: { jsonrpc: "2.0", id, error } };
}

/** A result answer to `id`: every result of the revision says `resultType`. */
function answered(id: RequestId | null, result: Record<string, unknown>): StatelessAnswer {
  return { status: 200, response: { jsonrpc: "2.0", id, result: { ...result, resultType: "complete" } } };
}

/** The request's id, when it has a valid one. */
export function requestId(message: unknown): RequestId | null {
  if (!isRecord(message)) return null;
  const { id } = message;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/**
 * The requests of the stateless revision, answered over one {@linkcode ToolService}: the front ends (stdio, HTTP)
 * hand each such message here and send back what it answers.
 *
 * @example
 * ```ts ignore
 * import { StatelessRequests } from "./stateless.ts";
 * const requests = new StatelessRequests(service);
 * const { response } = await requests.answer(message, { connection: "http", signal });
 * ```
 */
export class StatelessRequests {
  readonly #service: ToolService;
  /** The signed states of the rounds awaiting a client's answer. */
  readonly #rounds: RoundStates;
  /** The pages a person types a secret into (HTTP only: over stdio there is no page to open). */
  readonly #pages?: SecretPages;

  constructor(service: ToolService, options: { rounds?: RoundStates; secretPages?: SecretPages } = {}) {
    this.#service = service;
    this.#rounds = options.rounds ?? new RoundStates();
    this.#pages = options.secretPages;
  }

  /** Answers one request of the revision (a notification is no request: it gets `undefined`). */
  async answer(message: unknown, from: StatelessFrom): Promise<StatelessAnswer | undefined> {
    const id = requestId(message);
    if (!isRecord(message) || message.jsonrpc !== "2.0" || typeof message.method !== "string") {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidRequest,
        "Invalid Request: not a JSON-RPC 2.0 request",
      );
    }
    // A notification of the revision (a cancel is carried by the client going away): nothing to answer.
    if (!("id" in message)) return undefined;
    if (id === null) return rejected(400, null, STATELESS_ERRORS.invalidRequest, "Invalid Request: bad id");
    const params = message.params === undefined ? {} : message.params;
    if (!isRecord(params)) {
      return rejected(400, id, STATELESS_ERRORS.invalidParams, "Invalid params: not an object");
    }
    const meta = isRecord(params._meta) ? params._meta : undefined;
    const missing = [META.protocolVersion, META.clientCapabilities].filter((key) =>
      meta?.[key] === undefined
    );
    if (meta === undefined || missing.length > 0) {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidParams,
        `Invalid params: _meta must carry ${missing.join(" and ")} on every request of ${STATELESS_VERSION}`,
      );
    }
    const version = meta[META.protocolVersion];
    if (version !== STATELESS_VERSION) {
      return rejected(400, id, STATELESS_ERRORS.unsupportedVersion, "Unsupported protocol version", {
        supported: [...SUPPORTED_VERSIONS],
        requested: String(version),
      });
    }
    if (!isRecord(meta[META.clientCapabilities])) {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidParams,
        "Invalid params: clientCapabilities must be an object",
      );
    }
    switch (message.method) {
      case "server/discover":
        return this.#discover(id);
      case "tools/list":
        return answered(id, { tools: this.#service.list(), ttlMs: LIST_TTL_MS, cacheScope: "private" });
      case "tools/call":
        return await this.#call(id, params, meta, from);
      default:
        return rejected(404, id, STATELESS_ERRORS.methodNotFound, `Method not found: ${message.method}`);
    }
  }

  /**
   * A `store_secret` value by a URL elicitation round: the first round opens a page and answers its URL; the
   * retry takes what the person typed into that page (none when they declined, or typed nothing).
   */
  #askSecret(
    binding: { caller: string; tool: string; args: unknown },
    secret: { page: string; accepted: boolean } | undefined,
  ): AskSecret | undefined {
    const pages = this.#pages;
    if (pages === undefined) return undefined;
    return (request) => {
      if (secret !== undefined) {
        const value = secret.accepted ? pages.take(secret.page) : undefined;
        pages.close(secret.page);
        return Promise.resolve(value ?? null);
      }
      const page = pages.open(request);
      const message = `The model asks for the secret ${request.name} (for ${request.tools.join(", ")}). ` +
        "Open the page to type it: it goes to toolgate only, never to this client.";
      return Promise.reject(
        new InputRequired(
          {
            [SECRET_KEY]: {
              method: "elicitation/create",
              params: { mode: "url", message, url: page.url, elicitationId: page.id },
            },
          },
          this.#rounds.issue(binding, page.id),
        ),
      );
    };
  }

  #discover(id: RequestId): StatelessAnswer {
    const { name, version, instructions } = this.#service.about;
    return answered(id, {
      supportedVersions: [...SUPPORTED_VERSIONS],
      capabilities: { tools: {} },
      instructions,
      ttlMs: LIST_TTL_MS,
      cacheScope: "public",
      _meta: { [META.serverInfo]: { name, version } },
    });
  }

  async #call(
    id: RequestId,
    params: Record<string, unknown>,
    meta: Record<string, unknown>,
    from: StatelessFrom,
  ): Promise<StatelessAnswer> {
    const { name } = params;
    if (typeof name !== "string") {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidParams,
        "Invalid params: tools/call needs a tool name",
      );
    }
    const token = meta.progressToken;
    const progressToken = typeof token === "string" || typeof token === "number" ? token : undefined;
    const level = meta[META.logLevel];
    // Without a log level the client wants no log messages at all (the revision's rule).
    const logLevel = typeof level === "string" && (LOG_LEVELS as readonly string[]).includes(level)
      ? level as LoggingLevel
      : undefined;
    const notify = from.notify;
    const send = (notification: CallNotification) => {
      if (notification.method === "notifications/message" && logLevel === undefined) return;
      notify?.(notification);
    };
    const progress = progressToken === undefined || notify === undefined
      ? undefined
      : (value: number, text: string) => {
        notify({
          method: "notifications/progress",
          params: { progressToken, progress: value, message: text },
        });
        return Promise.resolve();
      };
    const caller = callerKey(from.connection, meta);
    const binding = { caller, tool: name, args: params.arguments };
    // An answer counts only with the state of the round that asked it: good once, for this caller and this call.
    let answer;
    let secret: { page: string; accepted: boolean } | undefined;
    if (params.requestState !== undefined) {
      const redeemed = this.#rounds.redeem(params.requestState, binding);
      if ("refused" in redeemed) {
        return rejected(400, id, STATELESS_ERRORS.invalidParams, `Invalid params: ${redeemed.refused}`);
      }
      const responses = isRecord(params.inputResponses) ? params.inputResponses : {};
      if (APPROVAL_KEY in responses) answer = approvalAnswer(responses[APPROVAL_KEY]);
      if (redeemed.data !== undefined) {
        const response = responses[SECRET_KEY];
        secret = { page: redeemed.data, accepted: isRecord(response) && response.action === "accept" };
      }
    }
    // A person is asked (by a round) only through a client that said it can show a form.
    const capabilities = meta[META.clientCapabilities] as Record<string, unknown>;
    const round = isRecord(capabilities.elicitation)
      ? approvalRound(this.#rounds, binding, answer)
      : undefined;
    try {
      const result = await this.#service.callWithout(caller, name, params.arguments, {
        signal: from.signal,
        progress,
        onToolEvent: notify === undefined ? undefined : toolEvents(name, progressToken, { logLevel }, send),
        trace: { parent: carrierFromMeta(meta), requestId: String(id) },
        ask: round?.ask,
        inputRound: round,
        askSecret: isRecord(capabilities.elicitation) && isRecord(capabilities.elicitation.url)
          ? this.#askSecret(binding, secret)
          : undefined,
      });
      return answered(id, result as Record<string, unknown>);
    } catch (error) {
      if (error instanceof InputRequired) {
        const { inputRequests, requestState } = error;
        return {
          status: 200,
          response: {
            jsonrpc: "2.0",
            id,
            result: { resultType: "input_required", inputRequests, requestState },
          },
        };
      }
      if (error instanceof McpError) return rejected(200, id, error.code, error.message);
      return rejected(500, id, STATELESS_ERRORS.internal, `Internal error: ${(error as Error).message}`);
    }
  }
}
