/**
 * The filtering proxy outside the sandbox that enforces a profile's host list: an HTTP proxy (CONNECT for TLS,
 * absolute-form requests for plain HTTP) on a Unix socket that is bound into the sandbox, letting through only
 * connections to the listed hosts. A confined tool with a host list has no network of its own: this proxy is
 * its only way out, so a host that is not listed is out of reach whatever the tool does.
 *
 * @module
 */
import { join } from "./paths.ts";

/** The most bytes of a request head the proxy reads before it gives up on it. */
const MAX_HEAD = 16 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Does `host:port` match an entry of the list? An entry is `host` (any port), `host:port`, or an IP literal
 * (`[v6]` with a port); names compare without case, each host exactly.
 *
 * @example
 * ```ts
 * import { hostAllowed } from "./egress_proxy.ts";
 * hostAllowed("api.example.com", 443, ["api.example.com"]); // true
 * hostAllowed("example.com", 80, ["example.com:443"]); // false
 * ```
 */
export function hostAllowed(host: string, port: number, allow: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  return allow.some((raw) => {
    const entry = raw.trim().toLowerCase();
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    const [pattern, entryPort] = bracketed
      ? [bracketed[1], bracketed[2]]
      : entry.split(":").length === 2
      ? entry.split(":")
      : [entry, undefined];
    if (entryPort !== undefined && Number(entryPort) !== port) return false;
    return name === pattern.replace(/\.$/, "");
  });
}

/** What the proxy decided about one connection, for the audit line. */
export interface EgressDecision {
  readonly host: string;
  readonly port: number;
  readonly allowed: boolean;
}

/** Reads a request head (up to the blank line); returns it and whatever came after it. */
async function readHead(conn: Deno.Conn): Promise<{ head: string; rest: Uint8Array } | undefined> {
  const buffer = new Uint8Array(MAX_HEAD);
  let length = 0;
  while (length < MAX_HEAD) {
    const n = await conn.read(buffer.subarray(length));
    if (n === null) return undefined;
    length += n;
    const text = decoder.decode(buffer.subarray(0, length));
    const end = text.indexOf("\r\n\r\n");
    if (end !== -1) {
      const headBytes = encoder.encode(text.slice(0, end + 4)).length;
      return { head: text.slice(0, end + 4), rest: buffer.slice(headBytes, length) };
    }
  }
  return undefined;
}

async function answer(conn: Deno.Conn, status: string, body = ""): Promise<void> {
  const text = `HTTP/1.1 ${status}\r\nContent-Length: ${
    encoder.encode(body).length
  }\r\nConnection: close\r\n\r\n${body}`;
  try {
    await conn.write(encoder.encode(text));
  } catch {
    // The client went away.
  }
  conn.close();
}

async function pipe(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  try {
    await from.readable.pipeTo(to.writable);
  } catch {
    // One side went away.
  }
}

/** `host:port` of a CONNECT target or an absolute URL, or `undefined` for anything else. */
function target(method: string, uri: string): { host: string; port: number; path?: string } | undefined {
  if (method === "CONNECT") {
    const match = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(uri);
    return match ? { host: match[1], port: Number(match[2]) } : undefined;
  }
  if (!URL.canParse(uri)) return undefined;
  const url = new URL(uri);
  if (url.protocol !== "http:") return undefined;
  return {
    host: url.hostname,
    port: url.port === "" ? 80 : Number(url.port),
    path: `${url.pathname}${url.search}`,
  };
}

/** One confined call the proxy serves: its host list, and where its decisions go. */
interface Registered {
  readonly allow: readonly string[];
  readonly onDecision?: (decision: EgressDecision) => void;
}

/** The first line the bridge sends on each connection, naming the call it carries. */
const CALL_LINE = /^toolgate-call ([0-9a-f]{32})$/;

/**
 * The egress proxy of one toolgate process: one Unix socket for every confined call with a host list. Each call
 * is registered under a random token that only its own sandbox's bridge is given; a connection that names no
 * registered token gets nothing.
 *
 * @example
 * ```ts
 * import { EgressProxy } from "./egress_proxy.ts";
 * const proxy = EgressProxy.start(`${await Deno.makeTempDir()}/proxy.sock`);
 * const { token, unregister } = proxy.register(["api.example.com"]);
 * // bind proxy.socket into the sandbox, give the bridge `token`; when the call ends:
 * unregister();
 * proxy.close();
 * ```
 */
export class EgressProxy {
  readonly #listener: Deno.Listener;
  readonly #calls = new Map<string, Registered>();
  readonly #open = new Set<Deno.Conn>();

  private constructor(readonly socket: string, listener: Deno.Listener) {
    this.#listener = listener;
    // The proxy serves calls while they run; it must not keep toolgate alive on its own.
    listener.unref();
    void this.#accept();
  }

  /** Listens on `socket` (a stale socket file there is replaced); only this user may connect. */
  static start(socket: string): EgressProxy {
    try {
      Deno.removeSync(socket);
    } catch {
      // Nothing there.
    }
    const listener = Deno.listen({ transport: "unix", path: socket });
    Deno.chmodSync(socket, 0o600);
    return new EgressProxy(socket, listener);
  }

  /** Registers a call with its host list; returns the token its bridge sends, and how to forget the call. */
  register(
    allow: readonly string[],
    onDecision?: (decision: EgressDecision) => void,
  ): { token: string; unregister: () => void } {
    const token = Array.from(
      crypto.getRandomValues(new Uint8Array(16)),
      (b) => b.toString(16).padStart(2, "0"),
    )
      .join("");
    this.#calls.set(token, { allow, onDecision });
    return { token, unregister: () => void this.#calls.delete(token) };
  }

  async #accept(): Promise<void> {
    try {
      for await (const conn of this.#listener) void this.#serve(conn);
    } catch {
      // Closed.
    }
  }

  async #serve(conn: Deno.Conn): Promise<void> {
    this.#open.add(conn);
    try {
      const read = await readHead(conn).catch(() => undefined);
      if (!read) return conn.close();
      const [callLine, line, ...headers] = read.head.split("\r\n");
      const call = this.#calls.get(CALL_LINE.exec(callLine)?.[1] ?? "");
      if (!call) return await answer(conn, "403 Forbidden", "toolgate proxy: not a call this proxy serves\n");
      const [method, uri, version] = (line ?? "").split(" ");
      const where = method && uri ? target(method, uri) : undefined;
      if (!where) return await answer(conn, "400 Bad Request", "toolgate proxy: CONNECT or an http:// URL\n");
      const allowed = hostAllowed(where.host, where.port, call.allow);
      call.onDecision?.({ host: where.host, port: where.port, allowed });
      if (!allowed) {
        return await answer(
          conn,
          "403 Forbidden",
          `toolgate proxy: ${where.host}:${where.port} is not in this tool's host list\n`,
        );
      }
      let upstream: Deno.Conn;
      try {
        upstream = await Deno.connect({ hostname: where.host.replace(/^\[|\]$/g, ""), port: where.port });
      } catch (error) {
        return await answer(conn, "502 Bad Gateway", `toolgate proxy: ${(error as Error).message}\n`);
      }
      this.#open.add(upstream);
      if (method === "CONNECT") {
        await conn.write(encoder.encode("HTTP/1.1 200 Connection Established\r\n\r\n"));
      } else {
        // Forwarded in origin form; the proxy's own headers stop here.
        const kept = headers.filter((h) => h !== "" && !/^proxy-/i.test(h));
        await upstream.write(
          encoder.encode(`${method} ${where.path} ${version}\r\n${kept.join("\r\n")}\r\n\r\n`),
        );
      }
      if (read.rest.length > 0) await upstream.write(read.rest);
      await Promise.allSettled([pipe(conn, upstream), pipe(upstream, conn)]);
      this.#open.delete(upstream);
    } finally {
      this.#open.delete(conn);
    }
  }

  /** Stops listening, cuts every connection, removes the socket. */
  close(): void {
    try {
      this.#listener.close();
    } catch {
      // Already closed.
    }
    for (const conn of this.#open) {
      try {
        conn.close();
      } catch {
        // Already closed.
      }
    }
    try {
      Deno.removeSync(this.socket);
    } catch {
      // Already gone.
    }
  }
}

/** The variable in which the launcher names the proxy's socket (so that its run may listen there). */
export const PROXY_SOCKET_ENV = "TOOLGATE_PROXY_SOCKET";

/**
 * Where this process's proxy listens: the launcher's choice, else a socket of its own in toolgate's state.
 *
 * @example
 * ```ts
 * import { proxySocketPath } from "./egress_proxy.ts";
 * proxySocketPath({}, "/home/me/.local/state/toolgate"); // "/home/me/.local/state/toolgate/proxy/1234.sock"
 * ```
 */
export function proxySocketPath(env: Readonly<Record<string, string>>, stateDir: string): string {
  return env[PROXY_SOCKET_ENV] || join(stateDir, "proxy", `${Deno.pid}.sock`);
}
