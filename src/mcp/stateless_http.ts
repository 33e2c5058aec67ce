/**
 * The stateless revision (2026-07-28) over Streamable HTTP: a POST whose body is one request of that revision
 * (`stateless.ts` says which) is answered on its own, with no session. Its standard headers are checked against
 * its body first: `MCP-Protocol-Version` against `_meta`'s version, `Mcp-Method` against the method, `Mcp-Name`
 * against the tool's name (values compared exactly, around optional whitespace), and a tool's `Mcp-Param-*` headers
 * against its arguments (`manifest/param_headers.ts`); a mismatch, or a missing one, is
 * refused with `400` and the revision's `HeaderMismatch` error (-32020), so that nothing routed by a header can
 * act on a different body. The answer is JSON, or an SSE stream when the client takes one and the call may send
 * notifications (its progress, its tool's log messages) before it. A client that goes away ends its call.
 *
 * Not here: the token and Origin gates and the sessions of 2025-11-25 (`http_server.ts`); the requests themselves
 * (`stateless.ts`); the secret pages (`secret_page.ts`), which this module routes to.
 *
 * @module
 */
// The SDK's "./*" export points `x.js` at types in `x.js.d.ts`, which do not exist: name the types beside each import.
import { isRecord } from "../contract.ts";
import { paramHeaderMismatch } from "../manifest/param_headers.ts";
import type { CallNotification } from "./client_asks.ts";
import {
  isStateless,
  type ListenNotification,
  META,
  requestId,
  STATELESS_ERRORS,
  type StatelessAnswer,
} from "./stateless_wire.ts";
import { StatelessRequests } from "./stateless.ts";
import { SECRET_PATH, SecretPages } from "./secret_page.ts";
import type { ToolService } from "./server.ts";

/** The connection name of every stateless HTTP caller: the server has one bearer token, so one principal. */
export const HTTP_CONNECTION = "http";

/** The `Mcp-Name` a method's body names: a tool's, a prompt's name, a resource's URI, a task's id. */
function bodyName(method: string, params: Record<string, unknown>): string | undefined {
  const field = method === "tools/call" || method === "prompts/get"
    ? "name"
    : method === "resources/read"
    ? "uri"
    : method === "tasks/get" || method === "tasks/update" || method === "tasks/cancel"
    ? "taskId"
    : undefined;
  const value = field === undefined ? undefined : params[field];
  return typeof value === "string" ? value : undefined;
}

/**
 * What is wrong with a stateless request's standard headers against its body, or undefined when they agree.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { headerMismatch } from "./stateless_http.ts";
 * const body = {
 *   jsonrpc: "2.0", id: 1, method: "tools/call",
 *   params: { name: "echo", _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } },
 * };
 * const headers = new Headers({ "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": " echo " });
 * assert.equal(headerMismatch(headers, body), undefined);
 * headers.set("mcp-name", "rm");
 * assert.equal(headerMismatch(headers, body), "the Mcp-Name header does not match the body's name");
 * ```
 */
export function headerMismatch(headers: Headers, body: Record<string, unknown>): string | undefined {
  const method = typeof body.method === "string" ? body.method : "";
  const params = isRecord(body.params) ? body.params : {};
  const meta = isRecord(params._meta) ? params._meta : {};
  const version = headers.get("mcp-protocol-version")?.trim();
  if (version === undefined) return "the MCP-Protocol-Version header is missing";
  if (meta[META.protocolVersion] !== undefined && meta[META.protocolVersion] !== version) {
    return "the MCP-Protocol-Version header does not match _meta's protocol version";
  }
  const named = headers.get("mcp-method")?.trim();
  if (named === undefined) return "the Mcp-Method header is missing";
  if (named !== method) return "the Mcp-Method header does not match the body's method";
  const name = bodyName(method, params);
  const header = headers.get("mcp-name")?.trim();
  if (name !== undefined && header === undefined) return "the Mcp-Name header is missing";
  if (header !== undefined && header !== name) return "the Mcp-Name header does not match the body's name";
  return undefined;
}

const encoder = new TextEncoder();
const sse = (message: unknown) => encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);

/** Will the request send notifications before its answer (a listen stream; a call with a progress token, or a
 * log level to send messages at)? */
function notifies(body: Record<string, unknown>): boolean {
  const params = isRecord(body.params) ? body.params : {};
  const meta = isRecord(params._meta) ? params._meta : {};
  return body.method === "subscriptions/listen" ||
    body.method === "tools/call" && (meta.progressToken !== undefined || meta[META.logLevel] !== undefined);
}

/**
 * Answers one POSTed request of the stateless revision (its body already read and parsed): a header mismatch is
 * refused before anything runs; a notification gets `202`; a call that may notify, to a client that takes SSE,
 * is answered as a stream.
 *
 * @example Not run as a doc test: it needs a ToolService (tests/mcp/stateless_test.ts serves one).
 * ```ts ignore
 * import { answerStatelessHttp } from "./stateless_http.ts";
 * return await answerStatelessHttp(requests, body, request);
 * ```
 */
export async function answerStatelessHttp(
  requests: StatelessRequests,
  body: unknown,
  request: Request,
  schemaOf: (tool: string) => Readonly<Record<string, unknown>> | undefined = () => undefined,
): Promise<Response> {
  if (!isRecord(body)) {
    return Response.json({
      jsonrpc: "2.0",
      id: null,
      error: {
        code: STATELESS_ERRORS.invalidRequest,
        message: "Invalid Request: one JSON-RPC request per POST",
      },
    }, { status: 400 });
  }
  const params = isRecord(body.params) ? body.params : {};
  const schema = body.method === "tools/call" && typeof params.name === "string"
    ? schemaOf(params.name)
    : undefined;
  const mismatch = headerMismatch(request.headers, body) ??
    (schema === undefined ? undefined : paramHeaderMismatch(request.headers, schema, params.arguments));
  if (mismatch !== undefined) {
    return Response.json({
      jsonrpc: "2.0",
      id: requestId(body),
      error: { code: STATELESS_ERRORS.headerMismatch, message: `Header mismatch: ${mismatch}` },
    }, { status: 400 });
  }
  const accept = request.headers.get("accept") ?? "";
  if (!notifies(body) || !accept.includes("text/event-stream")) {
    const answer = await requests.answer(body, { connection: HTTP_CONNECTION, signal: request.signal });
    return answer === undefined ? new Response(null, { status: 202 }) : asJson(answer);
  }
  // The client went away when Deno cancels the stream (request.signal would also abort once the answer starts).
  const ended = new AbortController();
  const signal = ended.signal;
  let stream!: ReadableStreamDefaultController<Uint8Array>;
  const body$ = new ReadableStream<Uint8Array>({
    start: (controller) => void (stream = controller),
    // The client stopped reading: it went away, and its call ends.
    cancel: () => ended.abort(),
  });
  const notify = (notification: CallNotification | ListenNotification) => {
    if (!signal.aborted) stream.enqueue(sse({ jsonrpc: "2.0", ...notification }));
  };
  requests.answer(body, { connection: HTTP_CONNECTION, signal, notify }).then((answer) => {
    if (signal.aborted) return;
    if (answer !== undefined) stream.enqueue(sse(answer.response));
    stream.close();
  }, (error) => {
    if (!signal.aborted) stream.error(error);
  });
  return new Response(body$, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

function asJson(answer: StatelessAnswer): Response {
  return Response.json(answer.response, { status: answer.status });
}

/**
 * The stateless revision in front of one HTTP server: its requests (a POST without a session), the secret pages
 * its `store_secret` rounds open, and its callers' end when the server stops.
 *
 * @example Not run as a doc test: it needs a ToolService (tests/mcp/stateless_test.ts serves one).
 * ```ts ignore
 * import { StatelessHttp } from "./stateless_http.ts";
 * const stateless = new StatelessHttp(service, () => url);
 * const answered = await stateless.answer(request, body); // undefined: a session's request
 * ```
 */
export class StatelessHttp {
  readonly #service: ToolService;
  readonly #pages: SecretPages;
  readonly #requests: StatelessRequests;

  /** `url`: the server's URL once it listens (the secret pages' origin). */
  constructor(service: ToolService, url: () => URL) {
    this.#service = service;
    this.#pages = new SecretPages(url);
    this.#requests = new StatelessRequests(service, { secretPages: this.#pages });
  }

  /** Is `path` a secret page's? */
  isPage(path: string): boolean {
    return path.startsWith(SECRET_PATH);
  }

  /** Answers a person's browser on a secret page. */
  page(request: Request): Promise<Response> {
    return this.#pages.handle(request);
  }

  /**
   * Answers a POST whose `body` (read and parsed) is a stateless request; undefined for any other (a session's, an
   * `initialize`).
   */
  async answer(request: Request, body: unknown): Promise<Response | undefined> {
    if (!isStateless(body, request.headers.get("mcp-protocol-version"))) return undefined;
    return await answerStatelessHttp(
      this.#requests,
      body,
      request,
      (tool) => this.#service.inputSchema(tool),
    );
  }

  /** The server stops: the stateless callers' background jobs end, as a session's do with it. */
  close(): Promise<void> {
    this.#requests.close();
    return this.#service.forgetCallers(`${HTTP_CONNECTION}|`);
  }
}
