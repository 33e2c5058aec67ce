/**
 * The gateway as a client of both MCP eras: a transport that stands between the 1.x SDK client toolgate speaks to
 * an upstream server with (a 2025-11-25 session) and the server's own transport. It passes everything through
 * untouched until the server refuses `initialize`; a server that then answers `server/discover` with 2026-07-28 is
 * spoken to in that revision from there on: each request carries the `_meta` envelope (version, the client's
 * capabilities and info, the log level asked for), `ping` and `logging/setLevel` are answered here, and an
 * `InputRequiredResult` becomes the 2025-11-25 requests the client answers (elicitation, sampling, roots, through
 * the same handlers as a session's), retried with `inputResponses` and the server's `requestState` until the
 * result is complete. A server that speaks both revisions keeps its session, exactly as before. A server whose
 * revisions toolgate speaks none of is said in one line ({@linkcode revisionMismatch}). The server's list changes
 * reach the client as a session's do: the bridge listens (`subscriptions/listen`) for what the server says changes.
 *
 * One piece: one connection's translation between the two revisions, whose halves (what goes out, what comes back,
 * the rounds between) share the requests in flight and the era found.
 *
 * Not here: the server's life, its start and its end (`upstream.ts`); who answers its questions
 * (`server_questions.ts`).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/shared/transport"
import type {
  Transport,
  TransportSendOptions,
} from "npm:@modelcontextprotocol/sdk@1.32.2/shared/transport.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  type JSONRPCMessage,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { isRecord } from "../contract.ts";

/** The stateless revision toolgate's client speaks to a server that refuses a session. */
export const MODERN_REVISION = "2026-07-28";

/** How many input-required rounds one request may take before toolgate gives up on it. */
export const MAX_ROUNDS = 8;

/** How long a server that refused `initialize` is given to answer `server/discover` before its refusal stands. */
export const PROBE_MS = 5_000;

/** The error code of a revision the server does not speak (2026-07-28's UnsupportedProtocolVersion). */
const UNSUPPORTED_VERSION = -32022;

/** Which revision the bridge found the server speaks; `probing` until `initialize` is answered. */
export type Era = "probing" | "legacy" | "modern";

/** A server whose revisions toolgate speaks none of: its message is the one line that says so. */
export class RevisionMismatch extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RevisionMismatch";
  }
}

/**
 * The one line for a revision mismatch, when `error` is one (the bridge's own, or a server's UnsupportedProtocolVersion
 * error naming what it speaks); else `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { revisionMismatch } from "./era_bridge.ts";
 * const error = { code: -32022, message: "Unsupported", data: { supported: ["2027-01-01"], requested: "2025-11-25" } };
 * assert.match(revisionMismatch(error)!, /^the server speaks MCP 2027-01-01 only; toolgate speaks 2026-07-28/);
 * assert.equal(revisionMismatch(new Error("other")), undefined);
 * ```
 */
export function revisionMismatch(error: unknown): string | undefined {
  if (error instanceof RevisionMismatch) return error.message;
  if (!isRecord(error) || error.code !== UNSUPPORTED_VERSION || !isRecord(error.data)) return undefined;
  const supported = error.data.supported;
  if (!Array.isArray(supported) || !supported.every((v) => typeof v === "string")) return undefined;
  return mismatchLine(supported);
}

function mismatchLine(supported: readonly string[]): string {
  return `the server speaks MCP ${supported.join(", ") || "(no revision named)"} only; toolgate speaks ` +
    `${MODERN_REVISION} and ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")}`;
}

/** What the bridge needs besides the server's transport. */
export interface EraBridgeOptions {
  /**
   * For a Streamable HTTP server: where it is and the headers every request carries. Its 2026-07-28 requests go
   * through a transport without sessions (the 2.x SDK's, which sets the `Mcp-Method` and `Mcp-Name` headers from
   * each request); without it (stdio) they go through `inner` itself.
   */
  readonly http?: { readonly url: URL; readonly headers: Record<string, string> };
}

type Id = string | number;
type Message = Record<string, unknown>;

/** A request of the bridge's own (to the server, or to the client), waiting for its answer. */
type Waiter = (message: Message) => void;

/**
 * A transport for the 1.x client that speaks 2026-07-28 to a server that speaks only that.
 *
 * @example Not run as a doc test: it needs an MCP server (tests/gateway_eras_test.ts runs real ones).
 * ```ts ignore
 * const bridge = new EraBridge(new ChildTransport(child));
 * await client.connect(bridge);
 * assertEquals(bridge.era, "modern");
 * ```
 */
export class EraBridge implements Transport {
  #inner: Transport;
  readonly #options: EraBridgeOptions;
  #era: Era = "probing";
  /** The client's `initialize`: its id and params (its capabilities and info go in every envelope). */
  #init?: { id: Id; params: Message };
  /** The bridge's requests to the server, by id. */
  readonly #toServer = new Map<Id, Waiter>();
  /** The bridge's requests to the client (an input round's questions), by id. */
  readonly #toClient = new Map<Id, Waiter>();
  /** The client's requests in flight: the id the server knows each by now, and what ends it. */
  readonly #calls = new Map<Id, { serverId: Id; ended: AbortController }>();
  #next = 0;
  #level?: string;
  /** Ends the standing `subscriptions/listen` request (HTTP: its stream). */
  readonly #listening = new AbortController();
  #closed = false;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  constructor(inner: Transport, options: EraBridgeOptions = {}) {
    this.#inner = inner;
    this.#options = options;
  }

  /** The revision found: `modern` once the server was spoken to in 2026-07-28. */
  get era(): Era {
    return this.#era;
  }

  /** The session's id (a 2025-11-25 HTTP session's; none in 2026-07-28). */
  get sessionId(): string | undefined {
    return this.#era === "modern" ? undefined : this.#inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    if (this.#era !== "modern") this.#inner.setProtocolVersion?.(version);
  }

  async start(): Promise<void> {
    this.#wire(this.#inner);
    await this.#inner.start();
  }

  #wire(inner: Transport): void {
    inner.onmessage = (message) => this.#fromServer(message as unknown as Message);
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      if (inner === this.#inner) this.#end();
    };
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const m = message as unknown as Message;
    if (this.#era === "legacy") return await this.#inner.send(message, options);
    if (this.#era === "probing") {
      if (m.method === "initialize" && m.id !== undefined) {
        this.#init = { id: m.id as Id, params: isRecord(m.params) ? m.params : {} };
        try {
          return await this.#inner.send(message, options);
        } catch (error) {
          // Over HTTP a refused initialize is a failed POST: a 2026-07-28 server is asked over a transport of its own.
          if (this.#options.http === undefined) throw error;
          const discovered = await this.#modern(error).catch(() => undefined);
          if (discovered === undefined) throw error;
          if (typeof discovered === "string") throw new RevisionMismatch(discovered);
          return;
        }
      }
      return await this.#inner.send(message, options);
    }
    await this.#modernSend(m);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const call of this.#calls.values()) call.ended.abort();
    this.#listening.abort();
    await this.#inner.close();
  }

  #end(): void {
    this.#closed = true;
    for (const call of this.#calls.values()) call.ended.abort();
    this.onclose?.();
  }

  #deliver(message: Message): void {
    this.onmessage?.(asWire(message));
  }

  #fromServer(message: Message): void {
    const id = message.id as Id | undefined;
    const answer = id !== undefined && message.method === undefined;
    if (answer && this.#toServer.has(id)) {
      const waiter = this.#toServer.get(id)!;
      this.#toServer.delete(id);
      return waiter(message);
    }
    if (this.#era === "probing" && answer && id === this.#init?.id) {
      if (message.error === undefined) {
        this.#era = "legacy";
        return this.#deliver(message);
      }
      // A refused initialize: a server of 2026-07-28 answers server/discover on the same connection.
      this.#modern(message.error).then((discovered) => {
        if (typeof discovered === "string") {
          this.#deliver({
            jsonrpc: "2.0",
            id,
            error: { code: UNSUPPORTED_VERSION, message: discovered, data: (message.error as Message).data },
          });
        }
      }, () => this.#deliver(message));
      return;
    }
    // What the listen stream says first is for the bridge alone; what it carries after is the client's.
    if (message.method === "notifications/subscriptions/acknowledged") return;
    this.#deliver(message);
  }

  /**
   * After a refused `initialize`: asks `server/discover`. Answers the client's `initialize` from it and resolves
   * `true` when the server speaks 2026-07-28; resolves the mismatch line when it speaks neither revision; rejects
   * when it does not answer discovery (the refusal stands).
   */
  async #modern(refusal: unknown): Promise<true | string> {
    const init = this.#init!;
    if (this.#options.http !== undefined) {
      // The 2.x SDK's transport, loaded only for such a server: no session, the standard headers from the body.
      const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
      const { url, headers } = this.#options.http;
      const modern = new StreamableHTTPClientTransport(url, {
        requestInit: { headers },
      }) as unknown as Transport;
      const legacy = this.#inner;
      this.#inner = modern;
      this.#wire(modern);
      await modern.start();
      legacy.onclose = undefined;
      await legacy.close().catch(() => {});
    }
    // A server of the 2025 era that refused initialize for a reason of its own may never answer the probe.
    const answer = await this.#request("server/discover", {}, AbortSignal.timeout(PROBE_MS));
    const result = answer.result;
    if (!isRecord(result) || !Array.isArray(result.supportedVersions)) throw refusal;
    const versions = result.supportedVersions.filter((v): v is string => typeof v === "string");
    if (!versions.includes(MODERN_REVISION)) return mismatchLine(versions);
    this.#era = "modern";
    const meta = isRecord(result._meta) ? result._meta : {};
    const serverInfo = isRecord(meta["io.modelcontextprotocol/serverInfo"])
      ? meta["io.modelcontextprotocol/serverInfo"]
      : { name: "unnamed", version: "0" };
    const requested = typeof init.params.protocolVersion === "string"
      ? init.params.protocolVersion
      : SUPPORTED_PROTOCOL_VERSIONS[0];
    this.#deliver({
      jsonrpc: "2.0",
      id: init.id,
      result: {
        protocolVersion: requested,
        capabilities: isRecord(result.capabilities) ? result.capabilities : {},
        serverInfo,
        ...(typeof result.instructions === "string" ? { instructions: result.instructions } : {}),
      },
    });
    this.#listen(isRecord(result.capabilities) ? result.capabilities : {});
    return true;
  }

  /**
   * Opens the standing `subscriptions/listen` request for the lists the server says change: its notifications
   * (`notifications/tools/list_changed`, ...) reach the client as a session's would. Its end is not awaited.
   */
  #listen(capabilities: Message): void {
    const changes = (kind: string) => isRecord(capabilities[kind]) && capabilities[kind].listChanged === true;
    const notifications = {
      ...(changes("tools") ? { toolsListChanged: true } : {}),
      ...(changes("prompts") ? { promptsListChanged: true } : {}),
      ...(changes("resources") ? { resourcesListChanged: true } : {}),
    };
    if (Object.keys(notifications).length === 0) return;
    this.#request("subscriptions/listen", { notifications }, this.#listening.signal).catch(() => {});
  }

  /** The 2026-07-28 envelope of every request: the version, the client's capabilities and info, the log level. */
  #envelope(): Message {
    const params = this.#init?.params ?? {};
    return {
      "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
      "io.modelcontextprotocol/clientCapabilities": isRecord(params.capabilities) ? params.capabilities : {},
      ...(isRecord(params.clientInfo) ? { "io.modelcontextprotocol/clientInfo": params.clientInfo } : {}),
      ...(this.#level === undefined ? {} : { "io.modelcontextprotocol/logLevel": this.#level }),
    };
  }

  /** Sends a request of the bridge's own to the server; resolves its answer (rejects when the bridge closes). */
  #request(method: string, params: Message, signal?: AbortSignal, id: Id = this.#id()): Promise<Message> {
    const { promise, resolve, reject } = Promise.withResolvers<Message>();
    this.#toServer.set(id, resolve);
    const gone = () => {
      this.#toServer.delete(id);
      reject(new Error("the request ended"));
    };
    signal?.addEventListener("abort", gone, { once: true });
    const _meta = { ...(isRecord(params._meta) ? params._meta : {}), ...this.#envelope() };
    const message = { jsonrpc: "2.0", id, method, params: { ...params, _meta } };
    this.#inner.send(asWire(message), { requestSignal: signal } as TransportSendOptions)
      .catch((error) => {
        this.#toServer.delete(id);
        reject(error);
      });
    return promise.finally(() => signal?.removeEventListener("abort", gone));
  }

  #id(): string {
    return `toolgate-${++this.#next}`;
  }

  async #modernSend(m: Message): Promise<void> {
    const params = isRecord(m.params) ? m.params : {};
    if (m.method === undefined) {
      // The client's answer to one of an input round's questions.
      const waiter = this.#toClient.get(m.id as Id);
      this.#toClient.delete(m.id as Id);
      return waiter?.(m);
    }
    if (m.id === undefined) {
      if (m.method === "notifications/initialized") return;
      if (m.method === "notifications/cancelled") {
        const call = this.#calls.get(params.requestId as Id);
        if (call === undefined) return;
        call.ended.abort();
        if (this.#options.http !== undefined) return;
        return await this.#inner.send(
          asWire({ ...m, params: { ...params, requestId: call.serverId } }),
        );
      }
      return await this.#inner.send(asWire(m));
    }
    const id = m.id as Id;
    if (m.method === "ping") return this.#deliver({ jsonrpc: "2.0", id, result: {} });
    if (m.method === "logging/setLevel") {
      // 2026-07-28 has no such request: the level rides in each later request's envelope.
      if (typeof params.level === "string") this.#level = params.level;
      return this.#deliver({ jsonrpc: "2.0", id, result: {} });
    }
    // Not awaited: a call waits for its rounds while others go on.
    this.#call(id, m.method as string, params).catch((error) => {
      if (this.#calls.get(id)?.ended.signal.aborted === true) return;
      this.#deliver({ jsonrpc: "2.0", id, error: { code: -32603, message: errorText(error) } });
    }).finally(() => this.#calls.delete(id));
  }

  /** One request of the client's, through as many input-required rounds as the server asks (at most MAX_ROUNDS). */
  async #call(id: Id, method: string, params: Message): Promise<void> {
    const ended = new AbortController();
    let retry: Message = {};
    for (let round = 0; round <= MAX_ROUNDS; round++) {
      const serverId = this.#id();
      this.#calls.set(id, { serverId, ended });
      const answer = await this.#request(method, { ...params, ...retry }, ended.signal, serverId);
      if (answer.error !== undefined || !isRecord(answer.result)) {
        return this.#deliver({
          jsonrpc: "2.0",
          id,
          error: answer.error ?? { code: -32603, message: "no result" },
        });
      }
      const { resultType, inputRequests, requestState, ...result } = answer.result;
      if (resultType !== "input_required") {
        if (resultType !== undefined && resultType !== "complete") {
          throw new Error(
            `the server answered with a ${String(resultType)} result, which toolgate did not ask for`,
          );
        }
        return this.#deliver({ jsonrpc: "2.0", id, result });
      }
      const inputResponses = await this.#ask(isRecord(inputRequests) ? inputRequests : {}, ended.signal);
      retry = { inputResponses, ...(requestState === undefined ? {} : { requestState }) };
    }
    throw new Error(`the server asked for input more than ${MAX_ROUNDS} times for one request`);
  }

  /** An input round's questions, each put to the client as the 2025-11-25 request it is; their answers by key. */
  async #ask(requests: Message, signal: AbortSignal): Promise<Message> {
    const answers: Message = {};
    for (const [key, request] of Object.entries(requests)) {
      if (!isRecord(request) || typeof request.method !== "string") {
        throw new Error(`the server's input request ${key} names no method`);
      }
      const id = this.#id();
      const { promise, resolve, reject } = Promise.withResolvers<Message>();
      this.#toClient.set(id, resolve);
      const gone = () => reject(new Error("the request ended"));
      signal.addEventListener("abort", gone, { once: true });
      this.#deliver({ jsonrpc: "2.0", id, method: request.method, params: request.params ?? {} });
      const answer = await promise.finally(() => {
        this.#toClient.delete(id);
        signal.removeEventListener("abort", gone);
      });
      if (answer.error !== undefined) {
        const error = isRecord(answer.error) ? answer.error.message : answer.error;
        throw new Error(`the server's question ${request.method} was not answered: ${String(error)}`);
      }
      answers[key] = answer.result;
    }
    return answers;
  }
}

/** A message the bridge built or read, as the SDK's transports type it (the bridge checks what it reads itself). */
function asWire(message: Message): JSONRPCMessage {
  return message as unknown as JSONRPCMessage;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
