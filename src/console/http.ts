/**
 * The web console's HTTP side, on loopback: reachable only through a one-time URL (its token, used once, becomes
 * an HttpOnly, SameSite=Strict session cookie, as Jupyter does), every POST carrying the session's CSRF token and a
 * same-origin `Origin`, the `Host` one of loopback's (no DNS rebinding), and a strict Content-Security-Policy over
 * the page, its script and its style, all served from here. Live state goes out as server-sent events.
 *
 * @module
 */
import { type ConsoleHub } from "./hub.ts";
import { PAGE_CSS, PAGE_JS, pageHtml } from "./page.ts";
import type { Answer } from "../policy/policy.ts";
import { redactDeep, type Redactor } from "../state/redact.ts";
import { parseSince } from "../run/audit_reader.ts";
import type { TrustSource } from "./trust_view.ts";
import type { ConfinementView } from "./confinement_view.ts";

/** The session cookie's name. */
const COOKIE = "toolgate_console";

/** Headers on every answer: nothing framed, sniffed, cached or referred. */
const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/** What the audit view keeps: by tool, by outcome, and between two times (`since` and `until` as `--since` reads them). */
export interface AuditFilter {
  readonly tool?: string;
  readonly outcome?: string;
  readonly since?: Date;
  readonly until?: Date;
}

/** Where the console reads the audit log, filtered (the workspace's, as `toolgate log` reads it). */
export type AuditSource = (filter: AuditFilter) => Promise<Record<string, unknown>[]>;

/** How {@linkcode serveConsole} serves. */
export interface ConsoleOptions {
  /** The port on 127.0.0.1 (0: a free one). */
  readonly port: number;
  readonly hub: ConsoleHub;
  /** Masks secrets in what the audit view sends. */
  readonly redact: Redactor;
  readonly audit?: AuditSource;
  /** The trust state of the manifest and its servers, and the Trust action. */
  readonly trust?: TrustSource;
  /** What each tool's profile gets here. */
  readonly confinement?: () => Promise<ConfinementView>;
  /** The clock `since` and `until` ages count back from. */
  readonly now?: () => Date;
}

/** A console being served. */
export interface ConsoleServing {
  /** The one-time URL a person opens (it holds the token: print it on stderr only). */
  readonly url: string;
  /** The console's origin, `http://127.0.0.1:PORT`. */
  readonly origin: string;
  readonly port: number;
  close(): Promise<void>;
}

function random(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return bytes.toHex();
}

/** Equal strings, compared in time that does not depend on where they differ. */
function same(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

function answer(
  status: number,
  body: string,
  type = "text/plain; charset=utf-8",
  more: HeadersInit = {},
): Response {
  const headers = new Headers({ ...SECURITY_HEADERS, "content-type": type });
  for (const [name, value] of new Headers(more)) headers.set(name, value);
  return new Response(body, { status, headers });
}

function cookieOf(request: Request): string | undefined {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === COOKIE) return rest.join("=");
  }
  return undefined;
}

const ANSWERS: readonly Answer[] = ["yes", "no", "always"];

/**
 * Serves the console on 127.0.0.1 until closed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConsoleHub } from "./hub.ts";
 * import { serveConsole } from "./http.ts";
 * const redact = (text: string) => text;
 * const serving = serveConsole({ port: 0, hub: new ConsoleHub(redact), redact });
 * assert.match(serving.url, /^http:\/\/127\.0\.0\.1:\d+\//);
 * await serving.close();
 * ```
 */
export function serveConsole(options: ConsoleOptions): ConsoleServing {
  const { hub, redact } = options;
  let startToken: string | undefined = random();
  /** Session cookie -> its CSRF token. */
  const sessions = new Map<string, string>();
  const streams = new Set<ReadableStreamDefaultController<Uint8Array>>();
  const encoder = new TextEncoder();
  let origin = "";
  let hosts: string[] = [];
  let origins: string[] = [];

  const push = () => {
    const data = encoder.encode(`event: state\ndata: ${JSON.stringify(hub.state())}\n\n`);
    for (const stream of streams) {
      try {
        stream.enqueue(data);
      } catch {
        streams.delete(stream);
      }
    }
  };
  const unlisten = hub.listen(push);

  const handle = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    // DNS rebinding: a page of another name that resolves to 127.0.0.1 sends its own Host.
    if (!hosts.includes(request.headers.get("host") ?? "")) return answer(403, "wrong host\n");
    const from = request.headers.get("origin");
    if (from !== null && !origins.includes(from)) return answer(403, "foreign origin\n");
    if (request.method === "GET" && url.pathname === "/" && url.searchParams.has("token")) {
      const token = url.searchParams.get("token") ?? "";
      if (startToken === undefined || !same(token, startToken)) {
        return answer(
          403,
          "this console link was used already or is wrong: restart toolgate for a new one\n",
        );
      }
      startToken = undefined;
      const session = random();
      sessions.set(session, random());
      return answer(303, "", undefined, {
        location: "/",
        "set-cookie": `${COOKIE}=${session}; HttpOnly; SameSite=Strict; Path=/`,
      });
    }
    const session = cookieOf(request);
    const csrf = session === undefined ? undefined : sessions.get(session);
    if (csrf === undefined) {
      return answer(403, "open the console through the link toolgate printed when it started\n");
    }
    if (request.method === "POST") {
      if (from === null) return answer(403, "a POST needs an Origin\n");
      if (!same(request.headers.get("x-csrf-token") ?? "", csrf)) return answer(403, "missing CSRF token\n");
      let body: Record<string, unknown>;
      try {
        body = await request.json();
      } catch {
        return answer(400, "not JSON\n");
      }
      if (url.pathname === "/api/approve") {
        const given = body.answer as Answer;
        if (typeof body.id !== "number" || !ANSWERS.includes(given)) return answer(400, "bad answer\n");
        return hub.answer(body.id, given)
          ? answer(200, "{}", "application/json")
          : answer(409, "not waiting\n");
      }
      if (url.pathname === "/api/form") {
        if (typeof body.id !== "number") return answer(400, "bad form\n");
        const said = hub.answerForm(body.id, body.action, body.content);
        return said === "answered"
          ? answer(200, "{}", "application/json")
          : answer(said === "not waiting" ? 409 : 400, `${said}\n`);
      }
      if (url.pathname === "/api/trust") {
        if (typeof body.version !== "string" || options.trust === undefined) {
          return answer(400, "bad trust\n");
        }
        // Only what the person read is recorded: a view that changed since is shown again instead.
        const done = await options.trust.trust(body.version);
        return done === "trusted"
          ? answer(200, "{}", "application/json")
          : answer(409, "the manifest or a server's tools changed since the view was read: look again\n");
      }
      if (url.pathname === "/api/calls/stop") {
        if (typeof body.id !== "number") return answer(400, "bad call\n");
        return hub.stopCall(body.id) ? answer(200, "{}", "application/json") : answer(409, "not running\n");
      }
      if (url.pathname === "/api/jobs/stop") {
        if (typeof body.id !== "string" || typeof body.scope !== "string") return answer(400, "bad job\n");
        return hub.stopJob(body.id, body.scope)
          ? answer(200, "{}", "application/json")
          : answer(409, "not running\n");
      }
      return answer(404, "not found\n");
    }
    if (request.method !== "GET") return answer(405, "method not allowed\n");
    switch (url.pathname) {
      case "/":
        return answer(200, pageHtml(csrf), "text/html; charset=utf-8");
      case "/console.js":
        return answer(200, PAGE_JS, "text/javascript; charset=utf-8");
      case "/console.css":
        return answer(200, PAGE_CSS, "text/css; charset=utf-8");
      case "/api/state":
        return answer(200, JSON.stringify(hub.state()), "application/json");
      case "/api/audit": {
        const tool = url.searchParams.get("tool") || undefined;
        const outcome = url.searchParams.get("outcome") || undefined;
        const now = (options.now ?? (() => new Date()))();
        const times: { since?: Date; until?: Date } = {};
        for (const name of ["since", "until"] as const) {
          const text = url.searchParams.get(name) || undefined;
          if (text === undefined) continue;
          const time = parseSince(text, now);
          if (time === undefined) {
            return answer(
              400,
              `${name} takes an age (30s, 10m, 2h, 7d) or a time (2026-11-26, 2026-11-26T10:00:00Z)\n`,
            );
          }
          times[name] = time;
        }
        const records = options.audit ? await options.audit({ tool, outcome, ...times }) : [];
        return answer(200, JSON.stringify(redactDeep(records, redact)), "application/json");
      }
      case "/api/trust": {
        const view = options.trust ? await options.trust.view() : null;
        // The version is a digest the Trust action hands back as it is (no secret: a hash of what is shown).
        const shown = view === null ? null : { ...redactDeep(view, redact), version: view.version };
        return answer(200, JSON.stringify(shown), "application/json");
      }
      case "/api/confinement": {
        const view = options.confinement ? await options.confinement() : null;
        return answer(200, JSON.stringify(redactDeep(view, redact)), "application/json");
      }
      case "/events": {
        let mine: ReadableStreamDefaultController<Uint8Array> | undefined;
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            mine = controller;
            streams.add(controller);
            controller.enqueue(encoder.encode(`event: state\ndata: ${JSON.stringify(hub.state())}\n\n`));
          },
          cancel() {
            if (mine) streams.delete(mine);
          },
        });
        return new Response(body, {
          headers: { ...SECURITY_HEADERS, "content-type": "text/event-stream" },
        });
      }
      default:
        return answer(404, "not found\n");
    }
  };

  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: options.port,
    onListen: () => {},
  }, (request) => handle(request).catch((error) => answer(500, `console: ${(error as Error).message}\n`)));
  const port = server.addr.port;
  origin = `http://127.0.0.1:${port}`;
  hosts = [`127.0.0.1:${port}`, `localhost:${port}`];
  origins = hosts.map((host) => `http://${host}`);
  return {
    url: `${origin}/?token=${startToken}`,
    origin,
    port,
    async close() {
      unlisten();
      hub.close();
      for (const stream of streams) {
        try {
          stream.close();
        } catch {
          // Closed by its reader already.
        }
      }
      streams.clear();
      await server.shutdown();
    },
  };
}
