/**
 * The MCP server over Streamable HTTP (`POST/GET/DELETE /mcp`), on `Deno.serve`: every request must carry
 * `Authorization: Bearer <token>` (compared in constant time), and each MCP session gets its own server over the
 * one shared {@linkcode ToolService}.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
// The SDK's "./*" export points `x.js` at types in `x.js.d.ts`, which do not exist: name the types beside each import.
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/index"
import type { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/server/webStandardStreamableHttp.js";
import type { ToolService } from "./server.ts";

/** The one path the server answers on. */
export const MCP_PATH = "/mcp";

/** Where and how to listen. */
export interface HttpOptions {
  /** The interface to bind (toolgate's default is 127.0.0.1). */
  readonly hostname: string;
  /** The port; 0 picks a free one (see {@linkcode HttpServing.url}). */
  readonly port: number;
  /** The bearer token every request must carry; must not be empty. */
  readonly token: string;
  /** Called once the socket is bound, with the URL clients connect to. */
  readonly onListen?: (url: URL) => void;
  /** Where trouble while answering a request is reported; never stdout. */
  readonly onError?: (message: string) => void;
}

/** A running HTTP server. */
export interface HttpServing {
  /** The URL clients connect to, e.g. `http://127.0.0.1:8765/mcp`. */
  readonly url: URL;
  /** Resolves when the server has stopped. */
  readonly finished: Promise<void>;
  /** Closes every session (aborting the calls in flight) and stops listening. */
  close(): Promise<void>;
}

interface Session {
  readonly server: Server;
  readonly transport: WebStandardStreamableHTTPServerTransport;
}

const sha256 = (text: string): Uint8Array => createHash("sha256").update(text, "utf8").digest();

/**
 * A check of `Authorization` headers against `token` that takes the same time whatever the header holds: both
 * sides are hashed first, so neither the length nor a common prefix shows in the timing.
 *
 * @example
 * ```ts
 * import { bearerCheck } from "./http.ts";
 * const check = bearerCheck("s3cret");
 * check("Bearer s3cret"); // true
 * check("Bearer guess"); // false
 * check(null); // false
 * ```
 */
export function bearerCheck(token: string): (header: string | null) => boolean {
  const expected = sha256(token);
  return (header) => {
    const match = /^Bearer[ \t]+(\S.*)$/i.exec(header ?? "");
    // A missing header still costs one comparison, so that it cannot be told from a wrong token by its timing.
    const given = sha256(match ? match[1].trim() : "");
    return timingSafeEqual(given, expected) && match !== null;
  };
}

function jsonRpcError(status: number, code: number, message: string, headers: HeadersInit = {}): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers });
}

function hostForUrl(hostname: string): string {
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}

/**
 * Serves `service` over Streamable HTTP until {@linkcode HttpServing.close}.
 *
 * @example
 * ```ts
 * import { serveHttp } from "./http.ts";
 * // const serving = serveHttp(service, { hostname: "127.0.0.1", port: 0, token: "s3cret" });
 * // console.error(`listening on ${serving.url}`);
 * ```
 */
export function serveHttp(service: ToolService, options: HttpOptions): HttpServing {
  if (options.token === "") throw new Error("serveHttp needs a token");
  const authorized = bearerCheck(options.token);
  const sessions = new Map<string, Session>();

  const newSession = async (): Promise<Session> => {
    const server = service.server();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, session),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    const session = { server, transport };
    server.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return session;
  };

  const handle = async (request: Request): Promise<Response> => {
    if (new URL(request.url).pathname !== MCP_PATH) return jsonRpcError(404, -32000, "Not found: use /mcp");
    if (!authorized(request.headers.get("authorization"))) {
      return jsonRpcError(401, -32001, "Unauthorized: a valid Authorization: Bearer token is required", {
        "WWW-Authenticate": 'Bearer realm="toolgate"',
      });
    }
    const id = request.headers.get("mcp-session-id");
    if (id !== null) {
      const session = sessions.get(id);
      if (!session) return jsonRpcError(404, -32001, "Session not found");
      return await session.transport.handleRequest(request);
    }
    if (request.method !== "POST") {
      return jsonRpcError(400, -32000, "Bad Request: no valid session ID; initialize with a POST first");
    }
    const session = await newSession();
    const response = await session.transport.handleRequest(request);
    // Anything but an initialize request leaves the transport without a session: nothing will use it again.
    if (session.transport.sessionId === undefined) await session.server.close();
    return response;
  };

  const server = Deno.serve({
    hostname: options.hostname,
    port: options.port,
    // Deno's default prints the address on stdout; the caller says where it goes.
    onListen: () => {},
    onError: (error) => {
      options.onError?.(`toolgate: mcp: ${error instanceof Error ? error.message : String(error)}`);
      return jsonRpcError(500, -32603, "Internal error");
    },
  }, handle);
  const address = server.addr as Deno.NetAddr;
  const url = new URL(`http://${hostForUrl(options.hostname)}:${address.port}${MCP_PATH}`);
  options.onListen?.(url);

  let closing: Promise<void> | undefined;
  const close = () =>
    closing ??= (async () => {
      // Closing a session aborts its calls in flight and ends its open SSE streams, so that shutdown can finish.
      await Promise.allSettled([...sessions.values()].map((session) => session.server.close()));
      sessions.clear();
      await server.shutdown();
    })();
  return { url, finished: server.finished, close };
}
