/**
 * The one strict reader of HTTP/1.1 (RFC 9112) that toolgate has: a buffered reader of a connection, request and
 * response heads, how a message's body is framed, and the body itself (de-chunked), under one set of limits. The
 * egress proxy, the credential broker and the `http_fetch` tool read through it, so that what one of them reads
 * as a message is what every other reads. It is the contract's because the core and a shipped tool share it
 * (`tools/lib/http1.ts`, `http_fetch`'s client, reads through it); it imports nothing.
 *
 * Strict where a peer that reads leniently could be shown another message than toolgate saw (request smuggling):
 * every line ends in CRLF (a bare CR or LF is refused), no obs-fold, no whitespace before a field's colon, no
 * control byte in a field, a `Content-Length` of digits only and only one, `Transfer-Encoding` exactly `chunked`
 * and never beside a `Content-Length`, chunk sizes in at most 8 hex digits, chunk extensions and trailers within
 * the line and head limits. Stricter than needed where being lenient buys nothing: an identical repeated
 * `Content-Length`, a second `Host`, an empty line before the start line and any coding but `chunked` are
 * refused too.
 *
 * One piece: the reader, the heads and the body framing are one grammar; split, a caller could read a head with
 * one rule and its body with another, which is what this module ends.
 *
 * Not here: what a proxy does with a message (refuse, mask, send on) is `src/sandbox/`'s; writing messages.
 *
 * @module
 */

/** How much of a message the reader holds at once. */
export interface Http1Limits {
  /** The most bytes of a head (start line, fields and their CRLFs), and of a chunked body's trailers. */
  readonly headBytes: number;
  /** The most bytes of one line (a start line, a field line, a chunk-size line with its extensions). */
  readonly lineBytes: number;
  /** The most field lines of a head (and of trailers). */
  readonly headerCount: number;
  /** The most bytes of a body that is read whole (a request the credential broker checks before sending). */
  readonly bodyBytes: number;
}

/**
 * The limits every reader of toolgate's uses.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { HTTP1_LIMITS } from "./http1.ts";
 * assert.equal(HTTP1_LIMITS.headBytes, 64 * 1024);
 * ```
 */
export const HTTP1_LIMITS: Http1Limits = {
  headBytes: 64 * 1024,
  lineBytes: 8 * 1024,
  headerCount: 100,
  bodyBytes: 16 * 1024 * 1024,
};

/** What went wrong: a message that breaks the grammar, one past a limit, or one cut short by its connection. */
export type Http1Fault = "malformed" | "too large" | "cut short";

/**
 * A message toolgate does not read: its reason names what was wrong, and `fault` what kind of wrong.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Http1Error } from "./http1.ts";
 * assert.equal(new Http1Error("malformed", "a bare LF").message, "a bare LF");
 * ```
 */
export class Http1Error extends Error {
  constructor(readonly fault: Http1Fault, message: string) {
    super(message);
    this.name = "Http1Error";
  }
}

/** A field as it came: its name with its case, its value without the whitespace around it. */
export type Field = readonly [name: string, value: string];

/** A request's start line and fields. */
export interface RequestHead {
  readonly method: string;
  readonly target: string;
  readonly version: "HTTP/1.1" | "HTTP/1.0";
  readonly fields: readonly Field[];
}

/** A response's status line and fields. */
export interface ResponseHead {
  readonly version: "HTTP/1.1" | "HTTP/1.0";
  readonly status: number;
  readonly reason: string;
  readonly fields: readonly Field[];
}

/** Where a connection's bytes come from: a Deno connection, or an iterator of chunks (a Node stream's). */
export type ByteSource = { read(into: Uint8Array): Promise<number | null> } | AsyncIterator<Uint8Array>;

const CR = 0x0d;
const LF = 0x0a;

/**
 * Bytes as ISO-8859-1 text, one character per byte (`TextDecoder("latin1")` is windows-1252, which maps
 * 0x80-0x9f elsewhere): a field's obs-text goes on as the bytes it came as.
 */
function latin1(bytes: Uint8Array): string {
  let text = "";
  for (let at = 0; at < bytes.length; at += 8192) {
    text += String.fromCharCode(...bytes.subarray(at, at + 8192));
  }
  return text;
}

/**
 * A head's text (as the reader gave it) back to its bytes, one byte per character.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { latin1Bytes } from "./http1.ts";
 * assert.deepEqual(latin1Bytes("a\u00e9"), new Uint8Array([0x61, 0xe9]));
 * ```
 */
export function latin1Bytes(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i) & 0xff;
  return out;
}

/**
 * A buffered reader of a connection: lines ended by CRLF, and bytes by count.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ByteReader } from "./http1.ts";
 * const reader = new ByteReader(new Blob(["one\r\ntwo"]).stream().values());
 * assert.equal(await reader.line(100), "one");
 * assert.equal(new TextDecoder().decode(await reader.some(10)), "two");
 * assert.equal(await reader.some(10), undefined);
 * ```
 */
export class ByteReader {
  #buffer: Uint8Array;
  #ended = false;
  readonly #source: ByteSource;

  /** Reads `source`, after `first` (bytes already read from it). */
  constructor(source: ByteSource, first: Uint8Array = new Uint8Array()) {
    this.#source = source;
    this.#buffer = first;
  }

  /** How many bytes are read but not taken. */
  get buffered(): number {
    return this.#buffer.length;
  }

  async #more(): Promise<boolean> {
    if (this.#ended) return false;
    let chunk: Uint8Array | null;
    try {
      if ("read" in this.#source) {
        const into = new Uint8Array(64 * 1024);
        const n = await this.#source.read(into);
        chunk = n === null ? null : into.subarray(0, n);
      } else {
        const next = await this.#source.next();
        chunk = next.done ? null : next.value;
      }
    } catch {
      // A connection reset is an end like any other.
      chunk = null;
    }
    if (chunk === null) {
      this.#ended = true;
      return false;
    }
    if (this.#buffer.length === 0) {
      this.#buffer = chunk;
    } else {
      const next = new Uint8Array(this.#buffer.length + chunk.length);
      next.set(this.#buffer);
      next.set(chunk, this.#buffer.length);
      this.#buffer = next;
    }
    return true;
  }

  /**
   * The next line without its CRLF; `undefined` when the source ended with nothing left. A bare LF, a bare CR,
   * a line over `max` bytes or one cut short by the end is an {@linkcode Http1Error}.
   */
  async line(max: number): Promise<string | undefined> {
    let from = 0;
    for (;;) {
      const at = this.#buffer.indexOf(LF, from);
      if (at !== -1) {
        if (at === 0 || this.#buffer[at - 1] !== CR) {
          throw new Http1Error("malformed", "a bare LF ends a line");
        }
        if (at - 1 > max) throw new Http1Error("too large", `a line over ${max} bytes`);
        const bytes = this.#take(at + 1).subarray(0, at - 1);
        if (bytes.includes(CR)) throw new Http1Error("malformed", "a bare CR in a line");
        return latin1(bytes);
      }
      if (this.#buffer.length > max + 1) throw new Http1Error("too large", `a line over ${max} bytes`);
      from = this.#buffer.length;
      if (!await this.#more()) {
        if (this.#buffer.length === 0) return undefined;
        throw new Http1Error("cut short", "the connection ended in the middle of a line");
      }
    }
  }

  /** Exactly `n` bytes; fewer (the source ended) is an {@linkcode Http1Error}. */
  async exactly(n: number): Promise<Uint8Array> {
    while (this.#buffer.length < n) {
      if (!await this.#more()) {
        throw new Http1Error("cut short", "the connection ended in the middle of a body");
      }
    }
    return this.#take(n);
  }

  /** Up to `n` bytes (at least one), as they come; `undefined` at the end. */
  async some(n: number): Promise<Uint8Array | undefined> {
    if (this.#buffer.length === 0 && !await this.#more()) return undefined;
    return this.#take(Math.min(n, this.#buffer.length));
  }

  /** Everything read but not taken. */
  rest(): Uint8Array {
    return this.#take(this.#buffer.length);
  }

  #take(n: number): Uint8Array {
    const out = this.#buffer.subarray(0, n);
    this.#buffer = this.#buffer.subarray(n);
    return out;
  }
}

const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
const REQUEST_LINE = new RegExp(`^(${TOKEN}) ([\\x21-\\x7e]+) HTTP/1\\.([01])$`);
const STATUS_LINE = /^HTTP\/1\.([01]) ([0-9]{3})(?: ([\t\x20-\x7e\x80-\xff]*))?$/;
const FIELD_LINE = new RegExp(`^(${TOKEN}):[ \\t]*(.*?)[ \\t]*$`, "s");
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Reads field lines up to the empty line that ends them, within the limits; `used` bytes are spent already. */
async function readFields(reader: ByteReader, limits: Http1Limits, used: number): Promise<Field[]> {
  const fields: Field[] = [];
  for (;;) {
    const line = await reader.line(limits.lineBytes);
    if (line === undefined) throw new Http1Error("cut short", "the connection ended in the middle of a head");
    used += line.length + 2;
    if (used > limits.headBytes) throw new Http1Error("too large", `a head over ${limits.headBytes} bytes`);
    if (line === "") return fields;
    fields.push(parseField(line));
    if (fields.length > limits.headerCount) {
      throw new Http1Error("too large", `more than ${limits.headerCount} header fields`);
    }
  }
}

/**
 * One field line (`name: value`), checked: no obs-fold, no whitespace before the colon, no control byte.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseField } from "./http1.ts";
 * assert.deepEqual(parseField("Host:  a.example "), ["Host", "a.example"]);
 * assert.throws(() => parseField("Host : a.example"), /malformed header line/);
 * ```
 */
export function parseField(line: string): Field {
  if (line.startsWith(" ") || line.startsWith("\t")) {
    throw new Http1Error("malformed", "a folded header line (obs-fold)");
  }
  const match = FIELD_LINE.exec(line);
  if (match === null) throw new Http1Error("malformed", `a malformed header line ${quote(line)}`);
  if (!FIELD_VALUE.test(match[2])) {
    throw new Http1Error("malformed", `a control character in the header ${match[1]}`);
  }
  return [match[1], match[2]];
}

function quote(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}...` : text);
}

/**
 * Every value of the field `name` (case-insensitive), in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fieldValues } from "./http1.ts";
 * assert.deepEqual(fieldValues([["Accept", "a"], ["accept", "b"]], "ACCEPT"), ["a", "b"]);
 * ```
 */
export function fieldValues(fields: readonly Field[], name: string): string[] {
  const lower = name.toLowerCase();
  return fields.filter(([n]) => n.toLowerCase() === lower).map(([, v]) => v);
}

/**
 * The next request's head from `reader`; `undefined` when the connection ended before a byte of it. A second
 * `Host` is refused here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ByteReader, readRequestHead } from "./http1.ts";
 * const reader = new ByteReader(new Blob(["GET /a HTTP/1.1\r\nHost: x\r\n\r\n"]).stream().values());
 * assert.deepEqual(await readRequestHead(reader), {
 *   method: "GET", target: "/a", version: "HTTP/1.1", fields: [["Host", "x"]],
 * });
 * ```
 */
export async function readRequestHead(
  reader: ByteReader,
  limits: Http1Limits = HTTP1_LIMITS,
): Promise<RequestHead | undefined> {
  const line = await reader.line(limits.lineBytes);
  if (line === undefined) return undefined;
  const match = REQUEST_LINE.exec(line);
  if (match === null) throw new Http1Error("malformed", `a malformed request line ${quote(line)}`);
  const fields = await readFields(reader, limits, line.length + 2);
  if (fieldValues(fields, "host").length > 1) throw new Http1Error("malformed", "more than one Host");
  return { method: match[1], target: match[2], version: match[3] === "1" ? "HTTP/1.1" : "HTTP/1.0", fields };
}

/**
 * The next response's head from `reader` (an interim `1xx` answer is a head like any other).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ByteReader, readResponseHead } from "./http1.ts";
 * const reader = new ByteReader(new Blob(["HTTP/1.1 404 Not Found\r\n\r\n"]).stream().values());
 * assert.equal((await readResponseHead(reader)).status, 404);
 * ```
 */
export async function readResponseHead(
  reader: ByteReader,
  limits: Http1Limits = HTTP1_LIMITS,
): Promise<ResponseHead> {
  const line = await reader.line(limits.lineBytes);
  if (line === undefined) throw new Http1Error("cut short", "the connection ended before an answer");
  const match = STATUS_LINE.exec(line);
  if (match === null) throw new Http1Error("malformed", `a malformed status line ${quote(line)}`);
  const fields = await readFields(reader, limits, line.length + 2);
  return {
    version: match[1] === "1" ? "HTTP/1.1" : "HTTP/1.0",
    status: Number(match[2]),
    reason: match[3] ?? "",
    fields,
  };
}

/** How a message's body ends: after `length` bytes, at a chunked body's last chunk, or where the connection does. */
export type BodyFraming =
  | { readonly kind: "length"; readonly length: number }
  | { readonly kind: "chunked" }
  | { readonly kind: "close" };

/** The framing its fields give a message; `absent` when they give none. */
function framing(head: { version: string; fields: readonly Field[] }, absent: BodyFraming): BodyFraming {
  const codings = fieldValues(head.fields, "transfer-encoding");
  const lengths = fieldValues(head.fields, "content-length");
  if (codings.length > 0) {
    if (lengths.length > 0) throw new Http1Error("malformed", "both Transfer-Encoding and Content-Length");
    if (head.version === "HTTP/1.0") throw new Http1Error("malformed", "Transfer-Encoding in HTTP/1.0");
    const list = codings.flatMap((value) => value.split(",")).map((coding) => coding.trim().toLowerCase());
    if (list.length !== 1 || list[0] !== "chunked") {
      throw new Http1Error(
        "malformed",
        `Transfer-Encoding ${quote(codings.join(", "))}: only "chunked" is read`,
      );
    }
    return { kind: "chunked" };
  }
  if (lengths.length > 1) throw new Http1Error("malformed", "more than one Content-Length");
  if (lengths.length === 1) {
    if (!/^[0-9]{1,15}$/.test(lengths[0])) {
      throw new Http1Error("malformed", `Content-Length ${quote(lengths[0])} is not a number of bytes`);
    }
    return { kind: "length", length: Number(lengths[0]) };
  }
  return absent;
}

/**
 * How a request's body is framed (no length and no coding: no body).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestFraming } from "./http1.ts";
 * const head = (fields: [string, string][]) => ({ method: "POST", target: "/", version: "HTTP/1.1", fields } as const);
 * assert.deepEqual(requestFraming(head([["Content-Length", "5"]])), { kind: "length", length: 5 });
 * assert.throws(() => requestFraming(head([["Content-Length", "0x10"]])), /not a number of bytes/);
 * ```
 */
export function requestFraming(head: RequestHead): BodyFraming {
  return framing(head, { kind: "length", length: 0 });
}

/**
 * How a response's body is framed: none for a `HEAD` request's answer and for `1xx`, `204` and `304`; else by its
 * fields, or up to the connection's end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { responseFraming } from "./http1.ts";
 * const head = { version: "HTTP/1.1", status: 200, reason: "OK", fields: [] } as const;
 * assert.deepEqual(responseFraming(head, "GET"), { kind: "close" });
 * assert.deepEqual(responseFraming(head, "HEAD"), { kind: "length", length: 0 });
 * ```
 */
export function responseFraming(head: ResponseHead, method: string): BodyFraming {
  if (method === "HEAD" || head.status < 200 || head.status === 204 || head.status === 304) {
    return { kind: "length", length: 0 };
  }
  return framing(head, { kind: "close" });
}

const CHUNK_LINE = new RegExp(
  `^([0-9A-Fa-f]{1,8})((?:[ \\t]*;[ \\t]*${TOKEN}(?:[ \\t]*=[ \\t]*(?:${TOKEN}|"(?:[\\t\\x20!\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t\\x20-\\x7e\\x80-\\xff])*"))?)*)$`,
);

/**
 * A message's body as its framing gives it, de-chunked (trailers read, checked and dropped), in pieces as they
 * come. A body past `cap` bytes, a malformed chunk or an early end is an {@linkcode Http1Error}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bodyOf, ByteReader } from "./http1.ts";
 * const reader = new ByteReader(new Blob(["3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n"]).stream().values());
 * const parts = await Array.fromAsync(bodyOf(reader, { kind: "chunked" }));
 * assert.equal(parts.map((p) => new TextDecoder().decode(p)).join(""), "abcde");
 * ```
 */
export async function* bodyOf(
  reader: ByteReader,
  frame: BodyFraming,
  cap = Infinity,
  limits: Http1Limits = HTTP1_LIMITS,
): AsyncGenerator<Uint8Array> {
  const over = () => new Http1Error("too large", `a body over ${cap} bytes`);
  if (frame.kind === "length") {
    if (frame.length > cap) throw over();
    for (let left = frame.length; left > 0;) {
      const piece = await reader.some(left);
      if (piece === undefined) {
        throw new Http1Error("cut short", "the connection ended in the middle of a body");
      }
      left -= piece.length;
      yield piece;
    }
    return;
  }
  if (frame.kind === "close") {
    let total = 0;
    for (;;) {
      const piece = await reader.some(64 * 1024);
      if (piece === undefined) return;
      total += piece.length;
      if (total > cap) throw over();
      yield piece;
    }
  }
  let total = 0;
  for (;;) {
    const line = await reader.line(limits.lineBytes);
    if (line === undefined) throw new Http1Error("cut short", "the connection ended in the middle of a body");
    const match = CHUNK_LINE.exec(line);
    if (match === null) throw new Http1Error("malformed", `a malformed chunk-size line ${quote(line)}`);
    const size = parseInt(match[1], 16);
    if (size === 0) {
      await readFields(reader, limits, 0);
      return;
    }
    total += size;
    if (total > cap) throw over();
    for (let left = size; left > 0;) {
      const piece = await reader.some(left);
      if (piece === undefined) {
        throw new Http1Error("cut short", "the connection ended in the middle of a chunk");
      }
      left -= piece.length;
      yield piece;
    }
    const end = await reader.exactly(2);
    if (end[0] !== CR || end[1] !== LF) throw new Http1Error("malformed", "a chunk's data not ended by CRLF");
  }
}

/**
 * A whole body, at most `cap` bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ByteReader, readBody } from "./http1.ts";
 * const reader = new ByteReader(new Blob(["hello"]).stream().values());
 * assert.equal(new TextDecoder().decode(await readBody(reader, { kind: "length", length: 5 }, 10)), "hello");
 * ```
 */
export async function readBody(
  reader: ByteReader,
  frame: BodyFraming,
  cap: number,
  limits: Http1Limits = HTTP1_LIMITS,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const part of bodyOf(reader, frame, cap, limits)) {
    parts.push(part.slice());
    length += part.length;
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
