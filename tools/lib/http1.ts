/**
 * A minimal HTTP/1.1 client over a connection the caller opened: `http_fetch` connects to the very IP address it
 * checked (no second DNS lookup, so no rebinding window) and speaks HTTP itself, because `fetch` resolves the
 * host again and `node:https` needs broad `--allow-sys` and `--allow-env` in Deno.
 *
 * @module
 */

/** A response head and as much of the body as the cap allowed. */
export interface Http1Response {
  status: number;
  statusText: string;
  /** Header names lower-cased; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Uint8Array;
  /** The body went past the cap and was cut. */
  truncated: boolean;
}

/** What to send. */
export interface Http1Request {
  method: "GET" | "HEAD";
  /** Path and query, e.g. `/a?b=1`. */
  target: string;
  /** The Host header value. */
  host: string;
  /** Extra request headers. */
  headers?: Record<string, string>;
  /** The most body bytes to keep. */
  maxBytes: number;
}

const MAX_HEAD_BYTES = 65_536;
const encoder = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/** A malformed or oversized response. */
export class HttpProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HttpProtocolError";
  }
}

/** Buffered reads over a connection: small lines through a buffer, bodies straight into parts. */
class Reader {
  #conn: Deno.Conn;
  #buffer: Uint8Array = new Uint8Array(0);

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  async #read(): Promise<Uint8Array | null> {
    const chunk = new Uint8Array(65_536);
    const n = await this.#conn.read(chunk);
    return n === null ? null : chunk.subarray(0, n);
  }

  #take(n: number): Uint8Array {
    const out = this.#buffer.slice(0, n);
    this.#buffer = this.#buffer.slice(n);
    return out;
  }

  /** Reads through the next `delimiter`, which is dropped; fails past `limit` bytes. */
  async until(delimiter: string, limit: number): Promise<string> {
    const needle = encoder.encode(delimiter);
    let from = 0;
    while (true) {
      const at = indexOf(this.#buffer, needle, from);
      if (at !== -1) {
        const text = latin1.decode(this.#take(at));
        this.#take(needle.length);
        return text;
      }
      if (this.#buffer.length > limit) throw new HttpProtocolError("response head is too large");
      from = Math.max(0, this.#buffer.length - needle.length + 1);
      const chunk = await this.#read();
      if (chunk === null) throw new HttpProtocolError("connection closed in the middle of the response");
      this.#buffer = concat([this.#buffer, chunk]);
    }
  }

  /**
   * Reads `n` bytes (fewer when the connection closes first); with `probe`, also says whether more bytes
   * follow, reading one chunk past `n` when it must.
   */
  async exactly(n: number, probe = false): Promise<{ bytes: Uint8Array; more: boolean }> {
    const parts: Uint8Array[] = [];
    let have = 0;
    if (this.#buffer.length > 0) {
      const first = this.#take(Math.min(n, this.#buffer.length));
      parts.push(first);
      have = first.length;
    }
    while (have < n || (probe && this.#buffer.length === 0 && have === n)) {
      const chunk = await this.#read();
      if (chunk === null) return { bytes: concat(parts), more: false };
      const room = n - have;
      if (chunk.length > room) {
        parts.push(chunk.subarray(0, room));
        this.#buffer = chunk.slice(room);
        have = n;
        break;
      }
      parts.push(chunk);
      have += chunk.length;
    }
    return { bytes: concat(parts), more: this.#buffer.length > 0 };
  }
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i <= haystack.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

async function readHead(
  reader: Reader,
): Promise<{ status: number; statusText: string; headers: Record<string, string> }> {
  const head = await reader.until("\r\n\r\n", MAX_HEAD_BYTES);
  const [statusLine, ...lines] = head.split("\r\n");
  const match = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
  if (!match) {
    throw new HttpProtocolError(`malformed status line ${JSON.stringify(statusLine.slice(0, 100))}`);
  }
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon <= 0) {
      throw new HttpProtocolError(`malformed header line ${JSON.stringify(line.slice(0, 100))}`);
    }
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = Object.hasOwn(headers, name) ? `${headers[name]}, ${value}` : value;
  }
  return { status: Number(match[1]), statusText: match[2] ?? "", headers };
}

/**
 * Sends one request over `conn` (with `Connection: close`) and reads the response, keeping at most
 * `request.maxBytes` of the body.
 *
 * @example
 * ```ts
 * import { http1Request } from "./http1.ts";
 * const conn = await Deno.connect({ hostname: "93.184.215.14", port: 80 });
 * const response = await http1Request(conn, { method: "GET", target: "/", host: "example.com", maxBytes: 1000 });
 * conn.close();
 * ```
 */
export async function http1Request(conn: Deno.Conn, request: Http1Request): Promise<Http1Response> {
  const lines = [
    `${request.method} ${request.target} HTTP/1.1`,
    `Host: ${request.host}`,
    ...Object.entries(request.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
    "Connection: close",
    "",
    "",
  ];
  const bytes = encoder.encode(lines.join("\r\n"));
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));

  const reader = new Reader(conn);
  let head = await readHead(reader);
  // Interim responses (100 Continue, 103 Early Hints) come before the real one.
  while (head.status >= 100 && head.status < 200 && head.status !== 101) head = await readHead(reader);
  const noBody = request.method === "HEAD" || head.status < 200 || head.status === 204 || head.status === 304;
  if (noBody) return { ...head, body: new Uint8Array(0), truncated: false };

  const cap = request.maxBytes;
  const transferEncoding = (head.headers["transfer-encoding"] ?? "").toLowerCase();
  if (transferEncoding.split(",").map((s) => s.trim()).includes("chunked")) {
    const parts: Uint8Array[] = [];
    let kept = 0;
    while (true) {
      const sizeLine = await reader.until("\r\n", 4096);
      const size = parseInt(sizeLine.split(";")[0].trim(), 16);
      if (!Number.isFinite(size) || size < 0) throw new HttpProtocolError("malformed chunk size");
      if (size === 0) break;
      const take = Math.min(size, cap - kept);
      if (take < size) {
        parts.push((await reader.exactly(take)).bytes);
        return { ...head, body: concat(parts), truncated: true };
      }
      const chunk = (await reader.exactly(size)).bytes;
      if (chunk.length < size) throw new HttpProtocolError("connection closed in the middle of a chunk");
      parts.push(chunk);
      kept += size;
      await reader.until("\r\n", 2);
    }
    return { ...head, body: concat(parts), truncated: false };
  }
  const lengthHeader = head.headers["content-length"];
  if (lengthHeader !== undefined) {
    const length = Number(lengthHeader.split(",")[0].trim());
    if (!Number.isSafeInteger(length) || length < 0) throw new HttpProtocolError("malformed Content-Length");
    const { bytes: body } = await reader.exactly(Math.min(length, cap));
    return { ...head, body, truncated: length > cap };
  }
  // No length: the body runs to the end of the connection.
  const { bytes: body, more } = await reader.exactly(cap, true);
  return { ...head, body, truncated: more };
}
