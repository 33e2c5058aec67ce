/**
 * The credential broker's answer to the tool: the upstream's answer read by its own framing (de-chunked), its
 * content coding undone, every secret masked in its head and its body, and framed again by the broker for the
 * tool, so that no framing the server chose can split a secret where the masker does not see it: with the
 * server's `Content-Length` where it gave one and nothing was decoded (masking keeps lengths), else chunked by
 * the broker (or up to the close, for an HTTP/1.0 request). It streams: an event stream reaches the tool as it
 * comes, less the few bytes the masker holds back. An answer whose head the broker cannot take (a malformed head
 * or framing, an unknown content coding, a `206` partial answer, which could hold a piece of a secret too short
 * to mask) is refused before the tool gets a byte of it; a body that breaks midway (bytes that do not inflate, a
 * malformed chunk) is cut there, short of its framing.
 *
 * Not here: the request's side (`credential_broker.ts`); the reader of HTTP/1.1 (`src/contract/http1.ts`); masking
 * and decoding (`http_body.ts`).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import {
  bodyOf,
  ByteReader,
  type ByteSource,
  fieldValues,
  Http1Error,
  readResponseHead,
  responseFraming,
  type ResponseHead,
} from "../contract/http1.ts";
import { contentCodings, decoded, Masker, maskWhole } from "./http_body.ts";

/** The answer's fields the broker replaces with its own framing (a body-less answer keeps its length). */
const FRAMING =
  /^(connection|keep-alive|proxy-connection|transfer-encoding|trailer|content-length|content-encoding)$/i;
const HOP = /^(connection|keep-alive|proxy-connection|transfer-encoding|trailer)$/i;

/** What the broker sent the upstream: its method, and the tool's HTTP version (how the answer may be framed). */
export interface AnsweredRequest {
  readonly method: string;
  readonly version: "HTTP/1.1" | "HTTP/1.0";
}

/**
 * Reads the upstream's answer from `source` and writes it to the tool through `write`, every secret masked.
 * Returns why the answer was refused when it was before a byte went to the tool (the caller answers `502`), else
 * `undefined` (a body that fails later is cut: the tool sees it end short of its framing).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { relayAnswer } from "./broker_answer.ts";
 * const wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ns3c\r\n3\r\nret\r\n0\r\n\r\n";
 * const out: Uint8Array[] = [];
 * const refused = await relayAnswer(new Blob([wire]).stream().values(), { method: "GET", version: "HTTP/1.1" },
 *   ["s3cret"], async (bytes) => void out.push(bytes));
 * assert.equal(refused, undefined);
 * assert.match(new TextDecoder().decode(Buffer.concat(out)), /chunked\r\nConnection: close\r\n\r\n(.|\r\n)*0\r\n\r\n$/);
 * assert.ok(!Buffer.concat(out).includes("s3c"));
 * ```
 */
export async function relayAnswer(
  source: ByteSource,
  request: AnsweredRequest,
  secrets: readonly string[],
  write: (bytes: Uint8Array) => Promise<void>,
): Promise<string | undefined> {
  const reader = new ByteReader(source);
  let head: ResponseHead;
  let frame;
  try {
    head = await readResponseHead(reader);
    // Interim answers (100 Continue, 103 Early Hints) are the broker's: the tool gets the final one.
    while (head.status >= 100 && head.status < 200) {
      if (head.status === 101) return "a 101 answer to a request that asked for no upgrade";
      head = await readResponseHead(reader);
    }
    frame = responseFraming(head, request.method);
  } catch (error) {
    if (error instanceof Http1Error) return `an answer the broker does not read (${error.message})`;
    throw error;
  }
  if (head.status === 206) {
    return "a partial answer (206), which could hold a piece of a secret too short to mask";
  }
  const codings = contentCodings(fieldValues(head.fields, "content-encoding"));
  if (typeof codings === "string") {
    return `an answer in the content coding ${
      JSON.stringify(codings)
    }, which the broker cannot decode to mask`;
  }
  const empty = frame.kind === "length" && frame.length === 0 &&
    (request.method === "HEAD" || head.status === 204 || head.status === 304);
  const lines = head.fields.filter(([name]) => !(empty ? HOP : FRAMING).test(name)).map(([n, v]) =>
    `${n}: ${v}`
  );
  const headBytes = (framing: readonly string[]) =>
    maskWhole(
      Buffer.from(
        `HTTP/1.1 ${head.status} ${head.reason}\r\n${
          [...lines, ...framing, "Connection: close"].join("\r\n")
        }\r\n\r\n`,
        "latin1",
      ),
      secrets,
    );
  if (empty) {
    await write(headBytes([]));
    return undefined;
  }

  // Masking keeps every length, so an answer whose length the server gave and that needs no decoding keeps it;
  // any other is chunked by the broker (its chunks cut after masking), or runs to the close for HTTP/1.0.
  const known = frame.kind === "length" && codings.length === 0 ? frame.length : undefined;
  const chunked = known === undefined && request.version === "HTTP/1.1";
  await write(
    headBytes(
      known !== undefined ? [`Content-Length: ${known}`] : chunked ? ["Transfer-Encoding: chunked"] : [],
    ),
  );
  const maskers = secrets.map((secret) => new Masker(secret));
  const send = async (bytes: Buffer) => {
    if (bytes.length === 0) return;
    await write(
      chunked
        ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from("\r\n")])
        : bytes,
    );
  };
  try {
    for await (const piece of decoded(bodyOf(reader, frame), codings)) {
      await send(maskers.reduce((bytes: Buffer, m) => m.push(bytes), Buffer.from(piece)));
    }
    // What each masker still holds (never a whole secret), in order.
    let rest = Buffer.alloc(0);
    for (const m of maskers) rest = Buffer.concat([m.push(rest), m.flush()]);
    await send(rest);
  } catch {
    // Bytes that do not decode, or a framing broken midway: the answer is cut, short of its framing.
    return undefined;
  }
  if (chunked) await write(Buffer.from("0\r\n\r\n"));
  return undefined;
}
