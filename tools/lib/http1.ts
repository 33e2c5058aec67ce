/**
 * A minimal HTTP/1.1 client over a connection the caller opened: `http_fetch` connects to the very IP address it
 * checked (no second DNS lookup, so no rebinding window) and speaks HTTP itself, because `fetch` resolves the
 * host again and `node:https` needs broad `--allow-sys` and `--allow-env` in Deno. The answer is read by
 * toolgate's one strict HTTP/1.1 reader (`src/contract/http1.ts`), the egress proxy's and the broker's.
 *
 * @module
 */
import {
  bodyOf,
  ByteReader,
  Http1Error,
  readResponseHead,
  responseFraming,
  type ResponseHead,
} from "../../src/contract/http1.ts";

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

const encoder = new TextEncoder();

/** A malformed or oversized response. */
export class HttpProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HttpProtocolError";
  }
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

function headersOf(head: ResponseHead): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [field, value] of head.fields) {
    const name = field.toLowerCase();
    headers[name] = Object.hasOwn(headers, name) ? `${headers[name]}, ${value}` : value;
  }
  return headers;
}

/** The response, its body cut at `cap` bytes. */
async function readResponse(reader: ByteReader, method: string, cap: number): Promise<Http1Response> {
  let head = await readResponseHead(reader);
  // Interim responses (100 Continue, 103 Early Hints) come before the real one.
  while (head.status >= 100 && head.status < 200 && head.status !== 101) {
    head = await readResponseHead(reader);
  }
  const frame = responseFraming(head, method);
  const answer = { status: head.status, statusText: head.reason, headers: headersOf(head) };
  if (frame.kind === "length" && frame.length > cap) {
    const body = concat(await Array.fromAsync(bodyOf(reader, { kind: "length", length: cap })));
    return { ...answer, body, truncated: true };
  }
  const parts: Uint8Array[] = [];
  let kept = 0;
  const pieces = bodyOf(reader, frame);
  for (;;) {
    const next = await pieces.next();
    if (next.done) return { ...answer, body: concat(parts), truncated: false };
    const room = cap - kept;
    if (next.value.length > room) {
      parts.push(next.value.subarray(0, room));
      return { ...answer, body: concat(parts), truncated: true };
    }
    parts.push(next.value.slice());
    kept += next.value.length;
  }
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
  try {
    return await readResponse(new ByteReader(conn), request.method, request.maxBytes);
  } catch (error) {
    if (error instanceof Http1Error) throw new HttpProtocolError(error.message);
    throw error;
  }
}
