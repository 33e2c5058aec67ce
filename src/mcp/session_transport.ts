/**
 * One MCP session's Streamable HTTP transport (the 2025-11-25 revision and those before it), toolgate's own, under
 * the SDK's `Server`: a POST of messages, a GET of the session's stream (or of a stream resumed from an event id),
 * a DELETE that ends the session. A POST of requests is answered in the form that suits it: as one JSON body when
 * every answer comes within a moment ({@linkcode QUICK_ANSWER_MS}) and nothing else came before them, or else as
 * an event stream, opened at the first message that is not an answer (a progress notification, a question to the
 * client) or when the moment is over, whichever is first, and resumable: it begins with a priming event, every
 * event of it is kept in the session's {@linkcode SessionEventStore}, and a stream closed while its calls still
 * run (`pollAfterMs`, SEP-1699 polling) is resumed by a GET with `Last-Event-ID`.
 *
 * What it keeps for the server that owns the sessions: whether a request is still unanswered (an idle session is
 * closed only when none is), when the session last did anything, and a client that goes away while its stream is
 * open: its calls are cancelled the way a client cancels them, so that each tree ends.
 *
 * One piece: the exchanges of a session's POSTs, its open streams and its event store are one state, and each
 * way in (a POST, a GET, a DELETE, a message the server sends, a stream's client going away, a wait or a poll
 * running out) moves an exchange from one form to the next within it: waiting, a stream, detached, done.
 *
 * Not here: the token and Origin gates, the sessions and their cap, the stateless revision (`http_server.ts`).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/shared/transport"
import type { Transport } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/transport.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  type JSONRPCMessage,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { jsonRpcFault } from "../contract/json_rpc.ts";
import { after, type CancelTimer } from "../base/timer.ts";
import { WaitQueue } from "../base/wait_queue.ts";
import type { SessionEventStore } from "./event_store.ts";

/** How long a POST's answers are waited for before its stream opens. */
export const QUICK_ANSWER_MS = 250;
/** The most messages in one POST. */
export const MAX_BATCH = 100;
/** How often an open stream carries a comment, so that nothing between drops it as idle. */
const KEEP_ALIVE_MS = 15_000;
/** The first revision whose clients take an event with empty data (the priming event), and so can resume. */
const RESUMABLE_VERSION = "2025-11-25";
/** The revision a client that names none is taken to speak. */
const DEFAULT_VERSION = "2025-03-26";
/** The id of the session's own stream (a GET's), in the event store. */
const STANDALONE = "_GET_stream";

const encoder = new TextEncoder();

type Id = string | number;
type Message = Record<string, unknown>;

/** The waits of every session's POSTs for their answers, all of one length: one timer for them all. */
const WAITS = new WaitQueue();

/** What the transport is told at its start. */
export interface SessionTransportOptions {
  /** The session's events, for resumption. */
  readonly events: SessionEventStore;
  /** How long a client waits before it reconnects to a stream the server closed (the SSE `retry` field). */
  readonly retryMs: number;
  /** Close a request stream still running after this long (0: never); see the module's doc. */
  readonly pollAfterMs: number;
  /** Called once `initialize` made the session, with its id. */
  readonly onInitialized: (id: string) => void;
  /** Called at a DELETE, before it is answered (the session's calls and jobs end there). */
  readonly onDeleted: (id: string) => Promise<void>;
}

/** The requests of one POST and how their answers go out. */
interface Exchange {
  readonly streamId: string;
  readonly ids: readonly Id[];
  /** A batch is answered with an array, even of one. */
  readonly batch: boolean;
  readonly answers: Map<Id, Message>;
  /** Answers or messages waiting for the form to be chosen. */
  readonly early: Message[];
  form: "waiting" | "stream" | "detached" | "done";
  /** The POST's response, while the form is being chosen. */
  respond?: (response: Response) => void;
  /** The open stream, once the form is a stream. */
  stream?: ReadableStreamDefaultController<Uint8Array>;
  cancelWait?: CancelTimer;
  cancelPoll?: CancelTimer;
}

/** An open stream of the session's own (a GET) or resumed from an event id. */
interface OpenStream {
  readonly controller: ReadableStreamDefaultController<Uint8Array>;
  /** The events already replayed on it, not to be written twice. */
  readonly replayed: Set<string>;
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A JSON-RPC error that answers no request (the POST or GET itself was refused). */
export function refusal(
  status: number,
  code: number,
  message: string,
  headers?: Record<string, string>,
): Response {
  return json(status, { jsonrpc: "2.0", error: { code, message }, id: null }, headers);
}

function event(message: unknown, eventId?: string): Uint8Array {
  return encoder.encode(
    `event: message\n${eventId === undefined ? "" : `id: ${eventId}\n`}data: ${JSON.stringify(message)}\n\n`,
  );
}

function isAnswer(message: Message): boolean {
  return !("method" in message) && ("result" in message || "error" in message);
}

function isRequest(message: Message): boolean {
  return typeof message.method === "string" &&
    (typeof message.id === "string" || typeof message.id === "number");
}

/** Is `header` (a Content-Type) JSON, its parameters aside? */
function isJsonType(header: string | null): boolean {
  return header !== null && header.split(";")[0].trim().toLowerCase() === "application/json";
}

const SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
};

/**
 * The transport of one session (see the module's doc).
 *
 * @example Not run as a doc test: it serves a session of an SDK `Server` (tests/mcp/ drive it over HTTP).
 * ```ts ignore
 * const transport = new SessionTransport({ events, retryMs: 1000, pollAfterMs: 0, onInitialized, onDeleted });
 * await server.connect(transport);
 * return await transport.post(request, body);
 * ```
 */
export class SessionTransport implements Transport {
  sessionId?: string;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  /** `performance.now()` of the last request, or of the last answer or stream's end. */
  lastActive: number = performance.now();

  readonly #options: SessionTransportOptions;
  /** The negotiated revision, once `initialize` was answered. */
  #version?: string;
  readonly #exchanges = new Map<Id, Exchange>();
  /** Open streams by their event-store stream id: the session's own, and resumed ones. */
  readonly #open = new Map<string, OpenStream>();
  #closed = false;
  #cancelKeepAlive?: CancelTimer;

  constructor(options: SessionTransportOptions) {
    this.#options = options;
  }

  /** Are requests of this session still unanswered (running, waiting their turn, or waiting for an answer)? */
  get busy(): boolean {
    return this.#exchanges.size > 0;
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  /** Answers a POST whose body was read and parsed. */
  post(request: Request, body: unknown): Promise<Response> {
    this.lastActive = performance.now();
    if (this.#closed) return Promise.resolve(refusal(404, -32001, "Session not found"));
    const accept = request.headers.get("accept") ?? "";
    if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
      return Promise.resolve(
        refusal(
          406,
          -32000,
          "Not Acceptable: Client must accept both application/json and text/event-stream",
        ),
      );
    }
    if (!isJsonType(request.headers.get("content-type"))) {
      return Promise.resolve(
        refusal(415, -32000, "Unsupported Media Type: Content-Type must be application/json"),
      );
    }
    const batch = Array.isArray(body);
    const messages = (batch ? body : [body]) as Message[];
    if (messages.length > MAX_BATCH) {
      return Promise.resolve(
        refusal(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`),
      );
    }
    if (messages.length === 0 || messages.some((message) => jsonRpcFault(message) !== undefined)) {
      return Promise.resolve(refusal(400, -32700, "Parse error: Invalid JSON-RPC message"));
    }
    const initializing = messages.some((message) => message.method === "initialize" && isRequest(message));
    if (initializing) {
      if (this.sessionId !== undefined) {
        return Promise.resolve(refusal(400, -32600, "Invalid Request: Server already initialized"));
      }
      if (messages.length > 1) {
        return Promise.resolve(
          refusal(400, -32600, "Invalid Request: Only one initialization request is allowed"),
        );
      }
      this.sessionId = crypto.randomUUID();
      this.#options.onInitialized(this.sessionId);
    } else {
      const refused = this.#checkSession(request);
      if (refused !== undefined) return Promise.resolve(refused);
    }
    const requests = messages.filter(isRequest);
    if (requests.length === 0) {
      for (const message of messages) this.onmessage?.(message as JSONRPCMessage);
      return Promise.resolve(new Response(null, { status: 202 }));
    }
    // An id already in flight (in this session, or twice in this batch) would take the other request's answer.
    const ids = requests.map((message) => message.id as Id);
    const taken = ids.find((id, at) => this.#exchanges.has(id) || ids.indexOf(id) !== at);
    if (taken !== undefined) {
      return Promise.resolve(
        refusal(
          400,
          -32600,
          `Invalid Request: a request with id ${JSON.stringify(taken)} is already in flight`,
        ),
      );
    }
    const { promise, resolve } = Promise.withResolvers<Response>();
    const exchange: Exchange = {
      streamId: crypto.randomUUID(),
      ids,
      batch,
      answers: new Map(),
      early: [],
      form: "waiting",
      respond: resolve,
    };
    for (const id of exchange.ids) this.#exchanges.set(id, exchange);
    exchange.cancelWait = WAITS.add(QUICK_ANSWER_MS, () => this.#openStream(exchange));
    for (const message of messages) this.onmessage?.(message as JSONRPCMessage);
    return promise;
  }

  /** Answers a GET: the session's own stream, or one resumed from `Last-Event-ID`. */
  get(request: Request): Response {
    this.lastActive = performance.now();
    if (this.#closed) return refusal(404, -32001, "Session not found");
    if (!(request.headers.get("accept") ?? "").includes("text/event-stream")) {
      return refusal(406, -32000, "Not Acceptable: Client must accept text/event-stream");
    }
    const refused = this.#checkSession(request);
    if (refused !== undefined) return refused;
    const lastEventId = request.headers.get("last-event-id");
    if (lastEventId !== null && lastEventId !== "") return this.#resume(lastEventId);
    if (this.#open.has(STANDALONE)) {
      return refusal(409, -32000, "Conflict: Only one SSE stream is allowed per session");
    }
    return this.#streamResponse(STANDALONE, () => {});
  }

  /** Answers a DELETE: the session ends. */
  async delete(request: Request): Promise<Response> {
    this.lastActive = performance.now();
    if (this.#closed) return refusal(404, -32001, "Session not found");
    const refused = this.#checkSession(request);
    if (refused !== undefined) return refused;
    try {
      await this.#options.onDeleted(this.sessionId!);
      return new Response(null, { status: 200 });
    } finally {
      await this.close();
    }
  }

  /**
   * Sends `message`: an answer goes with its request's exchange, a message about a request (its progress, a
   * question) on that request's stream, anything else on the session's own stream (kept for a resume when none
   * is open).
   */
  send(message: JSONRPCMessage, options?: { relatedRequestId?: Id }): Promise<void> {
    const m = message as Message;
    const answer = isAnswer(m);
    const id = answer ? m.id as Id : options?.relatedRequestId;
    if (id === undefined) {
      if (answer) return Promise.reject(new Error("an answer to no request cannot be sent"));
      const eventId = this.#options.events.store(STANDALONE, message);
      const open = this.#open.get(STANDALONE);
      if (open !== undefined) this.#enqueue(open.controller, event(message, eventId));
      return Promise.resolve();
    }
    const exchange = this.#exchanges.get(id);
    if (exchange === undefined) {
      return Promise.reject(new Error(`No connection established for request ID: ${String(id)}`));
    }
    if (answer) {
      if (this.#version === undefined && "result" in m) this.#noteVersion(m);
      exchange.answers.set(id, m);
    }
    if (exchange.form === "waiting") {
      exchange.early.push(m);
      if (!answer) this.#openStream(exchange);
      else if (exchange.answers.size === exchange.ids.length) this.#answerAsJson(exchange);
      return Promise.resolve();
    }
    this.#write(exchange, m);
    if (answer && exchange.answers.size === exchange.ids.length) this.#finish(exchange);
    return Promise.resolve();
  }

  /** Closes a request's stream while its calls run on (polling): the client resumes it with `Last-Event-ID`. */
  closeStream(requestId: Id): void {
    const exchange = this.#exchanges.get(requestId);
    if (exchange === undefined) return;
    if (exchange.form === "waiting") this.#openStream(exchange);
    if (exchange.form !== "stream") return;
    exchange.form = "detached";
    exchange.cancelPoll?.();
    this.#closeController(exchange.stream);
    exchange.stream = undefined;
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#cancelKeepAlive?.();
    for (const exchange of new Set(this.#exchanges.values())) {
      exchange.cancelWait?.();
      exchange.cancelPoll?.();
      exchange.respond?.(refusal(404, -32001, "Session not found"));
      this.#closeController(exchange.stream);
    }
    this.#exchanges.clear();
    for (const open of this.#open.values()) this.#closeController(open.controller);
    this.#open.clear();
    this.onclose?.();
    return Promise.resolve();
  }

  /** The session header (already matched by the server) and the revision header of a request after `initialize`. */
  #checkSession(request: Request): Response | undefined {
    if (this.sessionId === undefined) return refusal(400, -32000, "Bad Request: Server not initialized");
    const id = request.headers.get("mcp-session-id");
    if (id === null) return refusal(400, -32000, "Bad Request: Mcp-Session-Id header is required");
    if (id !== this.sessionId) return refusal(404, -32001, "Session not found");
    const version = request.headers.get("mcp-protocol-version");
    if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return refusal(
        400,
        -32000,
        `Bad Request: Unsupported protocol version: ${version} (supported versions: ${
          SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        })`,
      );
    }
    return undefined;
  }

  /** The revision `initialize` settled on, from the server's answer. */
  #noteVersion(answer: Message): void {
    const result = answer.result as { protocolVersion?: unknown } | undefined;
    if (typeof result?.protocolVersion === "string") this.#version = result.protocolVersion;
  }

  get #resumable(): boolean {
    return (this.#version ?? DEFAULT_VERSION) >= RESUMABLE_VERSION;
  }

  /** Every answer came while waiting, and nothing else: one JSON body (an array for a batch). */
  #answerAsJson(exchange: Exchange): void {
    exchange.cancelWait?.();
    const answers = exchange.ids.map((id) => exchange.answers.get(id)!);
    const headers: Record<string, string> = this.sessionId === undefined
      ? {}
      : { "mcp-session-id": this.sessionId };
    const respond = exchange.respond!;
    exchange.respond = undefined;
    this.#finish(exchange);
    respond(json(200, answers.length === 1 && !exchange.batch ? answers[0] : answers, headers));
  }

  /** The form is a stream now: its headers go out, then what waited. */
  #openStream(exchange: Exchange): void {
    if (exchange.form !== "waiting") return;
    exchange.form = "stream";
    exchange.cancelWait?.();
    const respond = exchange.respond!;
    exchange.respond = undefined;
    respond(this.#streamResponse(exchange.streamId, () => this.#gone(exchange), (controller) => {
      exchange.stream = controller;
      if (this.#resumable) {
        const primingId = this.#options.events.store(exchange.streamId, {});
        controller.enqueue(encoder.encode(`id: ${primingId}\nretry: ${this.#options.retryMs}\ndata: \n\n`));
      }
      for (const message of exchange.early.splice(0)) this.#write(exchange, message);
    }));
    if (exchange.answers.size === exchange.ids.length) {
      this.#finish(exchange);
      return;
    }
    if (this.#options.pollAfterMs > 0 && this.#resumable) {
      exchange.cancelPoll = after(this.#options.pollAfterMs, () => this.closeStream(exchange.ids[0]));
    }
  }

  /** One message on an exchange's stream, kept for a resume (on a resumable client's stream). */
  #write(exchange: Exchange, message: Message): void {
    const eventId = this.#resumable
      ? this.#options.events.store(exchange.streamId, message as JSONRPCMessage)
      : undefined;
    const resumed = this.#open.get(exchange.streamId);
    if (exchange.stream !== undefined) this.#enqueue(exchange.stream, event(message, eventId));
    else if (resumed !== undefined && (eventId === undefined || !resumed.replayed.has(eventId))) {
      this.#enqueue(resumed.controller, event(message, eventId));
    }
  }

  /** Every answer is out: the exchange ends, and its stream (or the stream that resumed it) closes. */
  #finish(exchange: Exchange): void {
    exchange.form = "done";
    exchange.cancelWait?.();
    exchange.cancelPoll?.();
    for (const id of exchange.ids) this.#exchanges.delete(id);
    this.#closeController(exchange.stream);
    exchange.stream = undefined;
    const resumed = this.#open.get(exchange.streamId);
    if (resumed !== undefined) {
      this.#open.delete(exchange.streamId);
      this.#closeController(resumed.controller);
    }
    this.lastActive = performance.now();
  }

  /**
   * The client stopped reading an exchange's stream before its end: it went away, and its calls are cancelled
   * (nothing more of them is sent: the exchange ends here).
   */
  #gone(exchange: Exchange): void {
    if (exchange.form !== "stream") return;
    exchange.stream = undefined;
    const unanswered = exchange.ids.filter((id) => !exchange.answers.has(id));
    this.#finish(exchange);
    for (const id of unanswered) {
      this.onmessage?.({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: id, reason: "the client closed the connection" },
      } as JSONRPCMessage);
    }
  }

  /** A stream resumed after `lastEventId`: what the store kept after it, then what comes. */
  #resume(lastEventId: string): Response {
    const events = this.#options.events;
    const streamId = events.streamOf(lastEventId);
    if (streamId === undefined) return refusal(400, -32000, "Invalid event ID format");
    const live = this.#exchanges.size === 0
      ? undefined
      : [...this.#exchanges.values()].find((e) => e.streamId === streamId);
    if (this.#open.has(streamId) || live?.stream !== undefined) {
      return refusal(409, -32000, "Conflict: Stream already has an active connection");
    }
    return this.#streamResponse(streamId, () => {}, (controller) => {
      const replayed = new Set<string>();
      for (const [eventId, message] of events.after(lastEventId)) {
        replayed.add(eventId);
        controller.enqueue(event(message, eventId));
      }
      // A stream whose requests were all answered has nothing more to come.
      if (streamId !== STANDALONE && live === undefined) {
        this.#closeController(controller);
        return;
      }
      this.#open.set(streamId, { controller, replayed });
    });
  }

  /**
   * An event stream's response: `start` gets its controller, `onCancel` is called when the client stops reading;
   * a stream of the session's own (`STANDALONE`) is registered as open.
   */
  #streamResponse(
    streamId: string,
    onCancel: () => void,
    start?: (controller: ReadableStreamDefaultController<Uint8Array>) => void,
  ): Response {
    let mine: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        mine = controller;
        if (start !== undefined) start(controller);
        else this.#open.set(streamId, { controller, replayed: new Set() });
      },
      cancel: () => {
        if (this.#open.get(streamId)?.controller === mine) this.#open.delete(streamId);
        onCancel();
        this.lastActive = performance.now();
      },
    });
    this.#keepAlive();
    const headers: Record<string, string> = { ...SSE_HEADERS };
    if (this.sessionId !== undefined) headers["mcp-session-id"] = this.sessionId;
    return new Response(body, { status: 200, headers });
  }

  /** A comment on every open stream every {@linkcode KEEP_ALIVE_MS}, while one is open. */
  #keepAlive(): void {
    if (this.#cancelKeepAlive !== undefined || this.#closed) return;
    this.#cancelKeepAlive = after(KEEP_ALIVE_MS, () => {
      this.#cancelKeepAlive = undefined;
      const comment = encoder.encode(": keepalive\n\n");
      let any = false;
      for (const open of this.#open.values()) any = this.#enqueue(open.controller, comment) || any;
      for (const exchange of new Set(this.#exchanges.values())) {
        if (exchange.stream !== undefined) any = this.#enqueue(exchange.stream, comment) || any;
      }
      if (any) this.#keepAlive();
    }, { keepAlive: false });
  }

  #enqueue(controller: ReadableStreamDefaultController<Uint8Array>, bytes: Uint8Array): boolean {
    try {
      controller.enqueue(bytes);
      return true;
    } catch {
      // Closed or cancelled already: nothing more goes on it.
      return false;
    }
  }

  #closeController(controller?: ReadableStreamDefaultController<Uint8Array>): void {
    try {
      controller?.close();
    } catch {
      // Closed or cancelled already.
    }
  }
}
