/**
 * The egress proxy's handling of one connection's bytes: answering and closing, piping a tunnel, and reading
 * where a request goes. No decision is made here: what may pass is `egress_proxy.ts`'s.
 *
 * Not here: reading a request (`src/contract/http1.ts`).
 *
 * @module
 */

const encoder = new TextEncoder();

/**
 * Answers a request with `status` (and a short body), then closes the connection.
 *
 * @example Not run as a doc test: it needs a client's connection.
 * ```ts ignore
 * import { answer } from "./proxy_wire.ts";
 * await answer(conn, "403 Forbidden", "host not allowed");
 * ```
 */
export async function answer(conn: Deno.Conn, status: string, body = ""): Promise<void> {
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

/**
 * Copies one side of a tunnel into the other until either side goes away.
 *
 * @example Not run as a doc test: it needs two open connections.
 * ```ts ignore
 * import { pipe } from "./proxy_wire.ts";
 * await Promise.all([pipe(client, upstream), pipe(upstream, client)]);
 * ```
 */
export async function pipe(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  try {
    await from.readable.pipeTo(to.writable);
  } catch {
    // One side went away.
  }
}

/**
 * `host:port` of a CONNECT target or an absolute URL, or `undefined` for anything else.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { target } from "./proxy_wire.ts";
 * assert.deepEqual(target("CONNECT", "api.example.com:443"), { host: "api.example.com", port: 443 });
 * assert.deepEqual(target("GET", "http://example.com/a?b"), { host: "example.com", port: 80, path: "/a?b" });
 * ```
 */
export function target(
  method: string,
  uri: string,
): { host: string; port: number; path?: string } | undefined {
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

/**
 * Closes a connection that may be closed already.
 *
 * @example Not run as a doc test: it needs an open connection.
 * ```ts ignore
 * import { shut } from "./proxy_wire.ts";
 * shut(conn); shut(conn); // the second is a no-op
 * ```
 */
export function shut(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}

/**
 * `decodeURIComponent`, or the text as it is where it is no valid encoding.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeURIComponentSafe } from "./proxy_wire.ts";
 * assert.equal(decodeURIComponentSafe("a%20b"), "a b");
 * assert.equal(decodeURIComponentSafe("%E0%A4%A"), "%E0%A4%A");
 * ```
 */
export function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
