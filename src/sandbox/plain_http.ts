/**
 * Plain-HTTP requests through the egress proxy, one at a time on a client's connection, each checked and sent to
 * its own host. A client that keeps its connection to the proxy alive may name another host in its next request:
 * piping the rest of the connection to the first request's host would send that request to the wrong host (an
 * allowed one, but not the one named, and past the host check). So each request goes up with `Connection: close`
 * over a connection of its own, its body is forwarded by its own framing, its answer comes back whole, and only
 * then is the next request's head read and checked like the first.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** The most bytes of a request head the proxy reads (later requests on a connection as the first). */
const MAX_HEAD = 16 * 1024;
const HEAD_END = encoder.encode("\r\n\r\n");
const CRLF = encoder.encode("\r\n");

/** A buffered reader of a connection: heads by their marker, bodies by their length. */
export class ConnReader {
  #buffer: Uint8Array;
  #ended = false;

  /** Reads `conn`, after `first` (bytes already read past the first head). */
  constructor(readonly conn: Deno.Conn, first: Uint8Array = new Uint8Array()) {
    this.#buffer = first;
  }

  async #more(): Promise<boolean> {
    if (this.#ended) return false;
    const chunk = new Uint8Array(64 * 1024);
    const n = await this.conn.read(chunk).catch(() => null);
    if (n === null) {
      this.#ended = true;
      return false;
    }
    const next = new Uint8Array(this.#buffer.length + n);
    next.set(this.#buffer);
    next.set(chunk.subarray(0, n), this.#buffer.length);
    this.#buffer = next;
    return true;
  }

  /** The bytes up to and with `marker`; `undefined` at the end, or once `cap` bytes came without it. */
  async until(marker: Uint8Array, cap: number): Promise<Uint8Array | undefined> {
    for (;;) {
      const at = indexOf(this.#buffer, marker);
      if (at !== -1) return this.#take(at + marker.length);
      if (this.#buffer.length > cap || !await this.#more()) return undefined;
    }
  }

  /** Up to `n` bytes (at least one), as they come; `undefined` at the end. */
  async some(n: number): Promise<Uint8Array | undefined> {
    if (this.#buffer.length === 0 && !await this.#more()) return undefined;
    return this.#take(Math.min(n, this.#buffer.length));
  }

  /** Everything buffered, taken. */
  rest(): Uint8Array {
    return this.#take(this.#buffer.length);
  }

  #take(n: number): Uint8Array {
    const out = this.#buffer.slice(0, n);
    this.#buffer = this.#buffer.subarray(n);
    return out;
  }
}

function indexOf(bytes: Uint8Array, marker: Uint8Array): number {
  outer: for (let i = 0; i + marker.length <= bytes.length; i++) {
    for (let j = 0; j < marker.length; j++) if (bytes[i + j] !== marker[j]) continue outer;
    return i;
  }
  return -1;
}

/** One plain-HTTP request head, as the client sent it to the proxy. */
export interface PlainHead {
  /** The head's text after the request line's CRLF is split: the request line, then the header lines. */
  readonly text: string;
  readonly method: string;
  readonly uri: string;
  readonly version: string;
  readonly headers: readonly string[];
}

/**
 * Parses a request head's text (request line and header lines, without the empty line).
 *
 * @example
 * ```ts
 * import { parseHead } from "./plain_http.ts";
 * parseHead("GET http://a.example/x HTTP/1.1\r\nHost: a.example").uri; // "http://a.example/x"
 * ```
 */
export function parseHead(text: string): PlainHead {
  const [line, ...headers] = text.split("\r\n");
  const [method = "", uri = "", version = ""] = (line ?? "").split(" ");
  return { text, method, uri, version, headers: headers.filter((h) => h !== "") };
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

/** A request's body as the client sends it (chunked framing kept), ended where its framing ends. */
async function* bodyOf(reader: ConnReader, headers: readonly string[]): AsyncGenerator<Uint8Array> {
  if (/chunked/i.test(value(headers, "transfer-encoding") ?? "")) {
    for (;;) {
      const line = await reader.until(CRLF, 1024);
      if (line === undefined) return;
      yield line;
      const size = parseInt(decoder.decode(line).split(";")[0], 16);
      if (!Number.isFinite(size) || size < 0) return;
      if (size === 0) {
        // Trailers, up to the empty line.
        for (;;) {
          const trailer = await reader.until(CRLF, MAX_HEAD);
          if (trailer === undefined) return;
          yield trailer;
          if (trailer.length === 2) return;
        }
      }
      // The data and its CRLF.
      yield* exactly(reader, size + 2);
    }
  }
  const length = Number(value(headers, "content-length") ?? "0");
  if (Number.isSafeInteger(length) && length > 0) yield* exactly(reader, length);
}

async function* exactly(reader: ConnReader, n: number): AsyncGenerator<Uint8Array> {
  while (n > 0) {
    const chunk = await reader.some(n);
    if (chunk === undefined) return;
    n -= chunk.length;
    yield chunk;
  }
}

async function* rawOf(reader: ConnReader): AsyncGenerator<Uint8Array> {
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
 * on the bytes go through as they are, to that request's host only).
 *
 * @example
 * ```ts ignore
 * await servePlain(conn, new ConnReader(conn, rest), parseHead(text), { admit });
 * ```
 */
export async function servePlain(
  client: Deno.Conn,
  reader: ConnReader,
  first: PlainHead,
  hooks: PlainHooks,
): Promise<void> {
  const forward = hooks.forward ?? writeAll;
  let head: PlainHead | undefined = first;
  while (head !== undefined) {
    const admitted = await hooks.admit(head);
    if (admitted === undefined) return;
    const { upstream, path } = admitted;
    try {
      const upgrade = value(head.headers, "upgrade") !== undefined;
      // Forwarded in origin form; the proxy's own headers stop here, and the upstream connection is this
      // request's only (an upgrade keeps the client's Connection header, which names it).
      const kept = head.headers.filter((h) =>
        !/^proxy-/i.test(h) && (upgrade || !/^(connection|keep-alive)\s*:/i.test(h))
      );
      if (!upgrade) kept.push("Connection: close");
      await upstream.write(
        encoder.encode(`${head.method} ${path} ${head.version}\r\n${kept.join("\r\n")}\r\n\r\n`),
      );
      if (upgrade) {
        await Promise.allSettled([forward(rawOf(reader), upstream), relay(upstream, client)]);
        return;
      }
      const [sent, answered] = await Promise.allSettled([
        forward(bodyOf(reader, head.headers), upstream),
        relay(upstream, client),
      ]);
      if (sent.status === "rejected" || answered.status === "rejected") return;
    } finally {
      shut(upstream);
      hooks.closed?.(upstream);
    }
    const next = await reader.until(HEAD_END, MAX_HEAD);
    head = next === undefined ? undefined : parseHead(decoder.decode(next.subarray(0, next.length - 4)));
  }
}
