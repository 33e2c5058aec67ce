/**
 * What the credential broker does to the bytes of an answer in the clear before the tool sees them: undo the
 * answer's content coding (gzip, deflate, br) so that a secret is masked where it is, not in a compressed form,
 * and mask every secret in a stream. Masking comes after de-chunking (`src/contract/http1.ts`) and decoding: masked
 * on the wire's bytes, a secret split by a chunk's framing or compressed would pass.
 *
 * Not here: reading the answer's framing (`src/contract/http1.ts`); what is refused and how the answer is framed
 * again (`broker_answer.ts`).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { pipeline, Readable, type Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

/** A request's body is read whole before anything goes up (so that a refusal sends nothing): capped. */
export const MAX_BODY = 16 * 1024 * 1024;

/** The content codings the broker undoes. */
const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  "x-gzip": createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/**
 * The codings of a `Content-Encoding` (its values in order), as the broker would undo them; a string naming the
 * first it cannot undo instead.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { contentCodings } from "./http_body.ts";
 * assert.deepEqual(contentCodings(["gzip, br"]), ["gzip", "br"]);
 * assert.equal(contentCodings(["zstd"]), "zstd");
 * ```
 */
export function contentCodings(values: readonly string[]): string[] | string {
  const codings = values.flatMap((v) => v.split(",")).map((c) => c.trim().toLowerCase()).filter((c) =>
    c !== "" && c !== "identity"
  );
  return codings.find((c) => !(c in DECODERS)) ?? codings;
}

/**
 * `body` with its content codings (as {@linkcode contentCodings} gave them) undone, last applied first. Bytes
 * that do not decode end the stream with an error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gzipSync } from "node:zlib";
 * import { decoded } from "./http_body.ts";
 * const parts = await Array.fromAsync(decoded([gzipSync("hello")], ["gzip"]));
 * assert.equal(Buffer.concat(parts).toString(), "hello");
 * ```
 */
export function decoded(body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, codings: readonly string[]) {
  let out: AsyncIterable<Uint8Array> | Iterable<Uint8Array> = body;
  for (const coding of [...codings].reverse()) {
    out = pipeline(Readable.from(out, { objectMode: false }), DECODERS[coding](), () => {});
  }
  return out;
}

/**
 * Replaces every `secret` in a stream with as many `*` (the same length), holding back only an end that may be
 * the start of a secret split between two pieces.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Masker } from "./http_body.ts";
 * const masker = new Masker("s3cret");
 * const enc = new TextEncoder();
 * assert.equal(`${masker.push(enc.encode("a s3"))}`, "a ");
 * assert.equal(`${masker.push(enc.encode("cret b"))}${masker.flush()}`, "****** b");
 * ```
 */
export class Masker {
  #held = Buffer.alloc(0);
  readonly #secret: Buffer;
  constructor(secret: string) {
    this.#secret = Buffer.from(secret);
  }

  /** What of `chunk` (after what was held) is safe to send, masked. */
  push(chunk: Uint8Array): Buffer {
    const all = Buffer.concat([this.#held, chunk]);
    mask(all, this.#secret);
    // Held back: only an end that may be the start of the secret (an event of a stream is not kept waiting).
    let keep = Math.min(all.length, this.#secret.length - 1);
    while (keep > 0 && !all.subarray(all.length - keep).equals(this.#secret.subarray(0, keep))) keep--;
    this.#held = Buffer.from(all.subarray(all.length - keep));
    return all.subarray(0, all.length - keep);
  }

  /** What is held (never a whole secret). */
  flush(): Buffer {
    const out = this.#held;
    this.#held = Buffer.alloc(0);
    return out;
  }
}

/**
 * Masks every secret of `secrets` in a whole piece of bytes (a head).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { maskWhole } from "./http_body.ts";
 * assert.equal(maskWhole(new TextEncoder().encode("X: s3cret"), ["s3cret"]).toString(), "X: ******");
 * ```
 */
export function maskWhole(bytes: Uint8Array, secrets: readonly string[]): Buffer {
  const out = Buffer.from(bytes);
  for (const secret of secrets) mask(out, Buffer.from(secret));
  return out;
}

function mask(bytes: Buffer, secret: Buffer): void {
  if (secret.length === 0) return;
  for (let at = bytes.indexOf(secret); at !== -1; at = bytes.indexOf(secret, at + secret.length)) {
    bytes.fill(0x2a, at, at + secret.length);
  }
}
