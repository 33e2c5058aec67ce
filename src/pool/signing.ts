/**
 * The pool's message signatures: HMAC-SHA-256 with a key shared by callers and workers, over a canonical
 * serialization of a message and what it is for, compared in constant time. A message is signed as the JSON it
 * travels as (what the other side parses), so both sides sign the same text. The MAC is computed in this thread
 * (`base/hmac_sha256.ts`): eight of them lie on a call's path (the call, the claim, the go and the result, each
 * signed and checked), and Web Crypto's, each a trip through the thread pool, cost a pooled call about a
 * millisecond under load. The signatures are the same bytes Web Crypto makes.
 *
 * Not here: the messages (`protocol.ts`), where the key comes from (`key.ts`).
 *
 * @module
 */
import { timingSafeEqual } from "node:crypto";
import { canonical } from "../base/canonical_json.ts";
import { HmacSha256 } from "../base/hmac_sha256.ts";

/** The fewest bytes a pool key may have: a key shorter than the MAC it makes is a guessable one. */
export const MIN_POOL_KEY_BYTES = 32;

/**
 * What a signature is for: a call, the caller's answer to a claim (the go), a worker's reply, a cancellation, the
 * caller's answer to a tool's question. Each is signed under its own label, so a signature made for one can never
 * pass for another.
 */
export type SignedPurpose = "call" | "go" | "reply" | "cancel" | "answer";

const encoder = new TextEncoder();

/**
 * The pool key, ready to sign: its bytes are absorbed into the HMAC's state once and never shown again (no
 * property, no `toString`, nothing `JSON.stringify` or `Deno.inspect` would print).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { importPoolKey } from "./signing.ts";
 * const key = await importPoolKey("q7M2c3Jk0vV9yXl1oPz8wE4rT6uY5iB3nH2gF1dS0aQ=", "the test key");
 * assert.equal(key.mac(new TextEncoder().encode("a message")).length, 32);
 * assert.equal(JSON.stringify(key), "{}");
 * ```
 */
export class PoolSigningKey {
  readonly #mac: HmacSha256;

  /** Takes the key's bytes (checked by {@linkcode importPoolKey}, which makes one). */
  constructor(bytes: Uint8Array) {
    this.#mac = new HmacSha256(bytes);
  }

  /** The HMAC-SHA-256 of `message` under this key. */
  mac(message: Uint8Array): Uint8Array {
    return this.#mac.sign(message);
  }
}

/**
 * Makes the HMAC key of a pool key's text (a file's or a stored secret's, surrounding white space left out), or
 * throws a `SyntaxError` saying why it is not one (`where` names it: "the pool key file /etc/toolgate/pool.key").
 *
 * @example
 * ```ts
 * import { importPoolKey } from "./signing.ts";
 * const key = await importPoolKey("q7M2c3Jk0vV9yXl1oPz8wE4rT6uY5iB3nH2gF1dS0aQ=", "the test key");
 * ```
 */
// deno-lint-ignore require-await
export async function importPoolKey(text: string, where: string): Promise<PoolSigningKey> {
  const bytes = encoder.encode(text.trim());
  if (bytes.length < MIN_POOL_KEY_BYTES) {
    throw new SyntaxError(
      `${where} holds ${bytes.length} bytes; a pool key needs at least ${MIN_POOL_KEY_BYTES} ` +
        `(make one: head -c 32 /dev/urandom | base64)`,
    );
  }
  return new PoolSigningKey(bytes);
}

/** The bytes a message is signed as: its purpose, then its canonical JSON as the other side will parse it. */
function signedBytes(purpose: SignedPurpose, fields: Record<string, unknown>): Uint8Array<ArrayBuffer> {
  const { sig: _sig, ...rest } = fields;
  // Through JSON and back: what the receiver parses (a Date as text, no undefined) is what both sides sign.
  const wire: unknown = JSON.parse(JSON.stringify(rest));
  return encoder.encode(`toolgate-pool/${purpose}\n${canonical(wire)}`);
}

const toBase64Url = (bytes: Uint8Array): string =>
  bytes.toBase64({ alphabet: "base64url", omitPadding: true });

function fromBase64Url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]{43}$/.test(text)) return undefined;
  return Uint8Array.fromBase64(text, { alphabet: "base64url", lastChunkHandling: "loose" });
}

function mac(key: PoolSigningKey, purpose: SignedPurpose, fields: Record<string, unknown>): Uint8Array {
  return key.mac(signedBytes(purpose, fields));
}

/**
 * The message with its signature (`sig`, base64url) added: over every other field, and `purpose`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { importPoolKey, signed } from "./signing.ts";
 * const key = await importPoolKey("q7M2c3Jk0vV9yXl1oPz8wE4rT6uY5iB3nH2gF1dS0aQ=", "the test key");
 * const beat = await signed(key, "reply", { t: "beat", id: "c1", worker: "w" });
 * assert.equal(beat.sig.length, 43);
 * ```
 */
// deno-lint-ignore require-await
export async function signed<const T extends Record<string, unknown>>(
  key: PoolSigningKey,
  purpose: SignedPurpose,
  fields: T,
): Promise<T & { readonly sig: string }> {
  return { ...fields, sig: toBase64Url(mac(key, purpose, fields)) };
}

/**
 * Whether `fields.sig` is the signature of the other fields for `purpose` under `key`; the MACs are compared in
 * constant time. A missing or malformed signature is no signature.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { importPoolKey, signed, verified } from "./signing.ts";
 * const key = await importPoolKey("q7M2c3Jk0vV9yXl1oPz8wE4rT6uY5iB3nH2gF1dS0aQ=", "the test key");
 * const beat = await signed(key, "reply", { t: "beat", id: "c1", worker: "w" });
 * assert.ok(await verified(key, "reply", beat));
 * assert.equal(await verified(key, "reply", { ...beat, worker: "x" }), false);
 * assert.equal(await verified(key, "cancel", beat), false); // signed for another purpose
 * ```
 */
// deno-lint-ignore require-await
export async function verified(
  key: PoolSigningKey,
  purpose: SignedPurpose,
  fields: Record<string, unknown>,
): Promise<boolean> {
  const given = typeof fields.sig === "string" ? fromBase64Url(fields.sig) : undefined;
  if (given === undefined) return false;
  const expected = mac(key, purpose, fields);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
