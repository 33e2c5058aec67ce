/**
 * Plain-HTTP requests through the egress proxy, one at a time on a client's connection, each checked and sent to
 * its own host. A client that keeps its connection to the proxy alive may name another host in its next request:
 * piping the rest of the connection to the first request's host would send that request to the wrong host (an
 * allowed one, but not the one named, and past the host check). So each request goes up with `Connection: close`
 * over a connection of its own, its body is forwarded by its own framing, its answer comes back whole, and only
 * then is the next request's head read and checked like the first. Heads and bodies are read by toolgate's one
 * strict HTTP/1.1 reader (`src/contract/http1.ts`): a framing the upstream could read otherwise is refused, and a
 * chunked body goes up chunked by the proxy, not as the client framed it.
 *
 * Not here: which host a request may reach (`egress_proxy.ts`).
 *
 * @module
 */

import { answer } from "./proxy_wire.ts";
import {
  bodyOf as framedBody,
  ByteReader,
  Http1Error,
  latin1Bytes,
  readRequestHead,
  requestFraming,
  type RequestHead,
} from "../contract/http1.ts";

const encoder = new TextEncoder();

/** One plain-HTTP request head, as the client sent it to the proxy (read by `src/contract/http1.ts`). */
export interface PlainHead {
  /** The head's text (the request line, then the field lines), for a placeholder's search. */
  readonly text: string;
  readonly method: string;
  readonly uri: string;
  readonly version: string;
  /** The field lines, `name: value`. */
  readonly headers: readonly string[];
  /** The head as read. */
  readonly request: RequestHead;
}

/**
 * A request head as the proxy handles it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { plainHead } from "./plain_http.ts";
 * const head = plainHead({ method: "GET", target: "http://a.example/x", version: "HTTP/1.1", fields: [["Host", "a.example"]] });
 * assert.equal(head.text, "GET http://a.example/x HTTP/1.1\r\nHost: a.example");
 * ```
 */
export function plainHead(head: RequestHead): PlainHead {
  const headers = head.fields.map(([name, value]) => `${name}: ${value}`);
  const line = `${head.method} ${head.target} ${head.version}`;
  return {
    text: [line, ...headers].join("\r\n"),
    method: head.method,
    uri: head.target,
    version: head.version,
    headers,
    request: head,
  };
}

/**
 * The next request's head on a client's connection: `undefined` at its end, the reason when it is not one the
 * proxy reads (the client is answered `400`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ByteReader } from "../contract/http1.ts";
 * import { nextHead } from "./plain_http.ts";
 * const reader = new ByteReader(new Blob(["GET http://a/ HTTP/1.1\nHost: a\r\n\r\n"]).stream().values());
 * assert.deepEqual(await nextHead(reader), { refused: "a bare LF ends a line" });
 * ```
 */
export async function nextHead(reader: ByteReader): Promise<PlainHead | { refused: string } | undefined> {
  try {
    const head = await readRequestHead(reader);
    return head === undefined ? undefined : plainHead(head);
  } catch (error) {
    if (!(error instanceof Http1Error)) throw error;
    return error.fault === "cut short" ? undefined : { refused: error.message };
  }
}

/** What the proxy does for one request: check it, and open its upstream. */
export interface PlainHooks {
  /**
   * Checks the request (its host against the list, a credential's placeholder in its head) and dials its host:
   * the upstream connection and the origin-form path, or `undefined` once the client was answered (refused, or
   * the host out of reach).
   */
  readonly admit: (head: PlainHead) => Promise<{ upstream: Deno.Conn; path: string } | undefined>;
  /**
   * Forwards what the client sends in the request's body (or, after an upgrade, on the connection) to the
   * upstream; the default writes it as it is.
   */
  readonly forward?: (chunks: AsyncIterable<Uint8Array>, upstream: Deno.Conn) => Promise<void>;
  /** A request's upstream connection is closed (its answer came back whole). */
  readonly closed?: (upstream: Deno.Conn) => void;
}

const value = (headers: readonly string[], name: string): string | undefined =>
  headers.find((line) => line.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim();

/**
 * A request's body as it goes up: by its length, or de-chunked by the strict reader and chunked again by the proxy
 * (no chunk extension, no trailer), so that the upstream reads the very body the proxy read.
 */
async function* bodyOf(reader: ByteReader, head: RequestHead): AsyncGenerator<Uint8Array> {
  const frame = requestFraming(head);
  if (frame.kind !== "chunked") return yield* framedBody(reader, frame);
  for await (const piece of framedBody(reader, frame)) {
    yield encoder.encode(`${piece.length.toString(16)}\r\n`);
    yield piece;
    yield encoder.encode("\r\n");
  }
  yield encoder.encode("0\r\n\r\n");
}

async function* rawOf(reader: ByteReader): AsyncGenerator<Uint8Array> {
  const rest = reader.rest();
  if (rest.length > 0) yield rest;
  for (;;) {
    const chunk = await reader.some(64 * 1024);
    if (chunk === undefined) return;
    yield chunk;
  }
}

async function writeAll(chunks: AsyncIterable<Uint8Array>, to: Deno.Conn): Promise<void> {
  for await (const chunk of chunks) await to.write(chunk);
}

/** Copies `from` to `to` until `from` ends; `to` stays open (the client's next request may follow). */
async function relay(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const chunk = new Uint8Array(64 * 1024);
  for (;;) {
    const n = await from.read(chunk).catch(() => null);
    if (n === null) return;
    await to.write(chunk.subarray(0, n));
  }
}

function shut(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Closed already.
  }
}

/**
 * Serves a client's plain-HTTP requests, starting with `first` (its head already read, `reader` holding what came
 * after it), until the client ends, a request is refused, or one upgrades the connection (a WebSocket: from then
 * on the bytes go through as they are, to that request's host only). A request whose framing the strict reader
 * refuses is answered `400` and ends the connection; each goes up with its target's own `Host`.
 *
 * @example Not run as a doc test: it needs a sandboxed client's connection.
 * ```ts ignore
 * await servePlain(conn, reader, head, { admit });
 * ```
 */
export async function servePlain(
  client: Deno.Conn,
  reader: ByteReader,
  first: PlainHead,
  hooks: PlainHooks,
): Promise<void> {
  const forward = hooks.forward ?? writeAll;
  let head: PlainHead | undefined = first;
  while (head !== undefined) {
    try {
      requestFraming(head.request);
    } catch (error) {
      if (!(error instanceof Http1Error)) throw error;
      return await answer(client, "400 Bad Request", `toolgate proxy: ${error.message}\n`);
    }
    const admitted = await hooks.admit(head);
    if (admitted === undefined) return;
    const { upstream, path } = admitted;
    try {
      const upgrade = value(head.headers, "upgrade") !== undefined;
      // Forwarded in origin form with the target's Host (RFC 9112 3.2.2); the proxy's own headers stop here, and
      // the upstream connection is this request's only (an upgrade keeps the client's Connection header, which
      // names it).
      const kept = head.headers.filter((h) =>
        !/^(proxy-[a-z-]*|host)\s*:/i.test(h) && (upgrade || !/^(connection|keep-alive)\s*:/i.test(h))
      );
      kept.unshift(`Host: ${new URL(head.uri).host}`);
      if (!upgrade) kept.push("Connection: close");
      await upstream.write(
        latin1Bytes(`${head.method} ${path} ${head.version}\r\n${kept.join("\r\n")}\r\n\r\n`),
      );
      if (upgrade) {
        await Promise.allSettled([forward(rawOf(reader), upstream), relay(upstream, client)]);
        return;
      }
      const [sent, answered] = await Promise.allSettled([
        forward(bodyOf(reader, head.request), upstream),
        relay(upstream, client),
      ]);
      if (sent.status === "rejected" || answered.status === "rejected") return;
    } finally {
      shut(upstream);
      hooks.closed?.(upstream);
    }
    const next = await nextHead(reader);
    if (next !== undefined && "refused" in next) {
      return await answer(client, "400 Bad Request", `toolgate proxy: ${next.refused}\n`);
    }
    head = next;
  }
}
