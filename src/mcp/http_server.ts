/**
 * The MCP server over Streamable HTTP (`POST/GET/DELETE /mcp`), on `Deno.serve`: every request must carry
 * `Authorization: Bearer <token>` (compared in constant time) and, when a browser sends one, an `Origin` of this
 * server or of a loopback host (against DNS rebinding). Each MCP session gets its own server (and scheduler) over
 * the one shared {@linkcode ToolService} and a transport of toolgate's own (`session_transport.ts`: answers as
 * JSON or as resumable event streams, polling, a client that goes away cancelling its calls); sessions are
 * capped in number and closed when idle; a POST without a session that holds a request of the 2026-07-28
 * revision is answered on its own (`stateless_http.ts`).
 *
 * @module
 */
// The SDK's "./*" export points `x.js` at types in `x.js.d.ts`, which do not exist: name the types beside each import.
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/index"
import type { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
import type { ToolService } from "./server.ts";
import { MAX_REQUEST_BODY_BYTES, readPostBody } from "./request_body.ts";
import { type EventLimits, SessionEventStore } from "./event_store.ts";
import { serveLasting } from "./lasting_serve.ts";
import { bearerCheck, hostForUrl, originCheck } from "./http_gates.ts";
import { StatelessHttp } from "./stateless_http.ts";
import { refusal, SessionTransport } from "./session_transport.ts";

/** The one path the server answers on. */
export const MCP_PATH = "/mcp";

import { SESSION_LIMITS } from "./limits.ts";

/** Where and how to listen. */
export interface HttpOptions {
  /** The interface to bind (toolgate's default is 127.0.0.1). */
  readonly hostname: string;
  /** The port; 0 picks a free one (see {@linkcode HttpServing.url}). */
  readonly port: number;
  /** The bearer token every request must carry; must not be empty. */
  readonly token: string;
  /** The most sessions open at once (default {@linkcode SESSION_LIMITS}); past it, `initialize` gets 503. */
  readonly maxSessions?: number;
  /** A session idle this long is closed (default {@linkcode SESSION_LIMITS}). */
  readonly sessionIdleMs?: number;
  /**
   * Close a call's SSE stream once the call has run this long (0 or absent: never), so that no connection is
   * held for a long call: a client that can resume (it negotiated 2025-11-25 or later, so its stream began with
   * a priming event) reconnects with `Last-Event-ID` and gets the rest. Older clients' streams stay open.
   */
  readonly pollAfterMs?: number;
  /** What each session keeps for resumption (default {@linkcode EVENT_LIMITS}). */
  readonly eventLimits?: EventLimits;
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
  readonly transport: SessionTransport;
}

/** How long a client waits before it reconnects to a stream the server closed (the SSE `retry` field). */
const RETRY_MS = 1000;

/** A POST's body, read (bounded) and parsed; the error answer when it cannot be. */
async function readPosted(request: Request): Promise<{ body: unknown } | Response> {
  const read = await readPostBody(request).catch(() => undefined);
  if (read === undefined) return refusal(400, -32700, "Parse error: the request body could not be read");
  if (read.tooLarge) {
    return refusal(413, -32000, `Payload Too Large: at most ${MAX_REQUEST_BODY_BYTES} bytes`);
  }
  try {
    return { body: JSON.parse(read.text) };
  } catch {
    return refusal(400, -32700, "Parse error: Invalid JSON");
  }
}

/**
 * Serves `service` over Streamable HTTP until {@linkcode HttpServing.close}.
 *
 * @example Not run as a doc test: it needs a ToolService (tests/mcp/ serves one).
 * ```ts ignore
 * import { serveHttp } from "./http_server.ts";
 * const serving = serveHttp(service, { hostname: "127.0.0.1", port: 0, token: "s3cret" });
 * console.error(`listening on ${serving.url}`);
 * ```
 */
export function serveHttp(service: ToolService, options: HttpOptions): HttpServing {
  if (options.token === "") throw new Error("serveHttp needs a token");
  const authorized = bearerCheck(options.token);
  const originAllowed = originCheck(options.hostname);
  const maxSessions = options.maxSessions ?? SESSION_LIMITS.maxSessions;
  const idleMs = options.sessionIdleMs ?? SESSION_LIMITS.idleSec * 1000;
  const pollAfterMs = options.pollAfterMs ?? 0;
  const sessions = new Map<string, Session>();
  const stateless = new StatelessHttp(service, () => url); // the 2026-07-28 revision, and its secret pages
  /** Sessions being made (an initialize in progress): counted against the cap before they have an id. */
  let opening = 0;

  const newSession = async (): Promise<Session> => {
    const server = service.server(() => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      // Nothing can resume a stream of a session that ended: its events go with it.
      events.clear();
    });
    const events = new SessionEventStore(options.eventLimits);
    const transport = new SessionTransport({
      events,
      retryMs: RETRY_MS,
      pollAfterMs,
      onInitialized: (id) => void sessions.set(id, session),
      // A DELETE ends the session (its calls in flight are aborted, its background jobs end). It is answered
      // once every process of its jobs is gone.
      onDeleted: async (id) => {
        sessions.delete(id);
        try {
          await server.close();
        } catch (error) {
          options.onError?.(`toolgate: mcp: closing a deleted session: ${(error as Error).message}`);
        }
        await service.jobsEnded(server);
      },
    });
    const session: Session = { server, transport };
    await server.connect(transport);
    return session;
  };

  /** Hands a request to a session's transport. */
  const forward = async (
    session: Session,
    request: Request,
    posted?: { body: unknown },
  ): Promise<Response> => {
    switch (request.method) {
      case "POST": {
        if (posted === undefined) {
          const read = await readPosted(request);
          if (read instanceof Response) return read;
          posted = read;
        }
        return await session.transport.post(request, posted.body);
      }
      case "GET":
        return session.transport.get(request);
      case "DELETE":
        return await session.transport.delete(request);
      default:
        return refusal(405, -32000, "Method not allowed.", { allow: "GET, POST, DELETE" });
    }
  };

  const handle = async (request: Request): Promise<Response> => {
    const path = new URL(request.url).pathname;
    if (path !== MCP_PATH && !stateless.isPage(path)) return refusal(404, -32000, "Not found: use /mcp");
    if (!originAllowed(request.headers.get("origin"))) {
      return refusal(403, -32000, "Forbidden: the Origin is not this server's");
    }
    // A person's browser opens a secret's page: its unguessable path stands for the token a browser cannot send.
    if (path !== MCP_PATH) return await stateless.page(request);
    if (!authorized(request.headers.get("authorization"))) {
      return refusal(401, -32001, "Unauthorized: a valid Authorization: Bearer token is required", {
        "WWW-Authenticate": 'Bearer realm="toolgate"',
      });
    }
    const id = request.headers.get("mcp-session-id");
    if (id !== null) {
      const session = sessions.get(id);
      if (!session) return refusal(404, -32001, "Session not found");
      return await forward(session, request);
    }
    if (request.method !== "POST") {
      return refusal(400, -32000, "Bad Request: no valid session ID; initialize with a POST first");
    }
    const posted = await readPosted(request);
    if (posted instanceof Response) return posted;
    const answered = await stateless.answer(request, posted.body);
    if (answered !== undefined) return answered;
    if (sessions.size + opening >= maxSessions) {
      return refusal(
        503,
        -32000,
        `Too many sessions (at most ${maxSessions}); close one, or retry later`,
        {
          "Retry-After": "10",
        },
      );
    }
    opening += 1;
    try {
      const session = await newSession();
      const response = await forward(session, request, posted);
      // Anything but an initialize request leaves the transport without a session: nothing will use it again.
      if (session.transport.sessionId === undefined) await session.server.close();
      return response;
    } finally {
      opening -= 1;
    }
  };

  // Idle sessions are closed (their streams end, anything still waiting in them is aborted): a client that went
  // away without saying so must not hold a session, or its memory, for ever.
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const session of [...sessions.values()]) {
      if (!session.transport.busy && now - session.transport.lastActive >= idleMs) {
        if (session.transport.sessionId !== undefined) sessions.delete(session.transport.sessionId);
        session.server.close().catch((error) =>
          options.onError?.(`toolgate: mcp: closing an idle session: ${(error as Error).message}`)
        );
      }
    }
  }, Math.max(50, Math.min(idleMs / 4, 30_000)));

  const server = serveLasting({
    hostname: options.hostname,
    port: options.port,
    onError: (error) => {
      options.onError?.(`toolgate: mcp: ${error instanceof Error ? error.message : String(error)}`);
      return refusal(500, -32603, "Internal error");
    },
    // A failed accept (a tool took every file descriptor) ends no session: the server listens again.
    onAcceptError: (message) => options.onError?.(`toolgate: mcp: ${message}`),
  }, handle);
  const address = server.addr;
  const url = new URL(`http://${hostForUrl(options.hostname)}:${address.port}${MCP_PATH}`);
  options.onListen?.(url);

  let closing: Promise<void> | undefined;
  const close = () =>
    closing ??= (async () => {
      clearInterval(sweep);
      // Closing a session aborts its calls in flight and ends its open SSE streams, so that shutdown can finish.
      await Promise.allSettled([...sessions.values()].map((session) => session.server.close()));
      sessions.clear();
      await stateless.close();
      await server.shutdown();
    })();
  server.finished.then(() => clearInterval(sweep));
  return { url, finished: server.finished, close };
}
