/**
 * The credential broker's reading of HTTP in the clear: a reader of a byte stream by markers and lengths, a
 * request's body (de-chunked, capped), and the masker that hides a secret in what comes back. What is refused or
 * sent on is `credential_broker.ts`'s, which re-exports `MAX_BODY`.
 *
 * @module
 */
import { Buffer } from "node:buffer";

/** The most bytes of a request head the broker holds. */
export const MAX_HEAD = 64 * 1024;
/** A body is read whole before anything goes up (so that a refusal sends nothing): capped. */
export const MAX_BODY = 16 * 1024 * 1024;
/** The end of an HTTP line. */
export const CRLF = Buffer.from("\r\n");
/** The end of an HTTP head. */
export const HEAD_END = Buffer.from("\r\n\r\n");

/**
 * Reads an async source of bytes by markers and lengths.
 *
 * @example
 * ```ts
 * import { Buffer } from "node:buffer";
 * import { Reader } from "./http_body.ts";
 * const reader = new Reader(new Blob(["GET / HTTP/1.1\r\n\r\nrest"]).stream().values());
 * (await reader.until(Buffer.from("\r\n\r\n"), 1024))?.toString(); // "GET / HTTP/1.1\r\n\r\n"
 * ```
 */
export class Reader {
  #buffer = Buffer.alloc(0);
  constructor(readonly source: AsyncIterator<Uint8Array>) {}

  async #more(): Promise<boolean> {
    const next = await this.source.next();
    if (next.done) return false;
    this.#buffer = Buffer.concat([this.#buffer, next.value]);
    return true;
  }

  /** The bytes up to and with `marker`; `undefined` at the end or past `cap`. */
  async until(marker: Buffer, cap: number): Promise<Buffer | undefined> {
    for (;;) {
      const at = this.#buffer.indexOf(marker);
      if (at !== -1) {
        const out = this.#buffer.subarray(0, at + marker.length);
        this.#buffer = this.#buffer.subarray(at + marker.length);
        return out;
      }
      if (this.#buffer.length > cap || !await this.#more()) return undefined;
    }
  }

  /** What was read past the last marker or length, taken. */
  take(): Buffer {
    const out = this.#buffer;
    this.#buffer = Buffer.alloc(0);
    return out;
  }

  async exactly(n: number): Promise<Buffer | undefined> {
    while (this.#buffer.length < n) if (!await this.#more()) return undefined;
    const out = this.#buffer.subarray(0, n);
    this.#buffer = this.#buffer.subarray(n);
    return out;
  }
}

/**
 * A request's body, de-chunked; `undefined` when it is cut short, `"too big"` past the cap.
 *
 * @example
 * ```ts
 * import { Reader, readBody } from "./http_body.ts";
 * const reader = new Reader(new Blob(["hello"]).stream().values());
 * (await readBody(reader, ["Content-Length: 5"]))?.toString(); // "hello"
 * ```
 */
export async function readBody(
  reader: Reader,
  headers: readonly string[],
): Promise<Buffer | undefined | "too big"> {
  const value = (name: string) =>
    headers.find((line) => line.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim();
  if (/chunked/i.test(value("transfer-encoding") ?? "")) {
    const parts: Buffer[] = [];
    let total = 0;
    for (;;) {
      const line = await reader.until(CRLF, 1024);
      if (line === undefined) return undefined;
      const size = parseInt(line.toString("latin1").split(";")[0], 16);
      if (!Number.isFinite(size) || size < 0) return undefined;
      if (size === 0) {
        // Trailers, up to the empty line.
        for (;;) {
          const trailer = await reader.until(CRLF, MAX_HEAD);
          if (trailer === undefined) return undefined;
          if (trailer.length === 2) return Buffer.concat(parts);
        }
      }
      total += size;
      if (total > MAX_BODY) return "too big";
      const data = await reader.exactly(size);
      if (data === undefined || await reader.until(CRLF, 2) === undefined) return undefined;
      parts.push(Buffer.from(data));
    }
  }
  const length = Number(value("content-length") ?? "0");
  if (!Number.isSafeInteger(length) || length < 0) return undefined;
  if (length > MAX_BODY) return "too big";
  return length === 0 ? Buffer.alloc(0) : await reader.exactly(length);
}

/**
 * Replaces every `secret` in a stream with as many `*` (the same length, so that lengths and chunk sizes stay
 * true), holding back just enough bytes to catch one split between two chunks.
 *
 * @example
 * ```ts
 * import { Masker } from "./http_body.ts";
 * const masker = new Masker("s3cret");
 * const enc = new TextEncoder();
 * `${masker.push(enc.encode("a s3"))}${masker.push(enc.encode("cret b"))}${masker.flush()}`; // "a ****** b"
 * ```
 */
export class Masker {
  #held = Buffer.alloc(0);
  readonly #secret: Buffer;
  constructor(secret: string) {
    this.#secret = Buffer.from(secret);
  }

  push(chunk: Uint8Array): Buffer {
    const all = Buffer.concat([this.#held, chunk]);
    mask(all, this.#secret);
    const keep = Math.min(all.length, this.#secret.length - 1);
    this.#held = Buffer.from(all.subarray(all.length - keep));
    return all.subarray(0, all.length - keep);
  }

  flush(): Buffer {
    const out = this.#held;
    this.#held = Buffer.alloc(0);
    return out;
  }
}

function mask(bytes: Buffer, secret: Buffer): void {
  if (secret.length === 0) return;
  for (let at = bytes.indexOf(secret); at !== -1; at = bytes.indexOf(secret, at + secret.length)) {
    bytes.fill(0x2a, at, at + secret.length);
  }
}
