/**
 * HMAC-SHA256 and SHA-256 computed in this thread, by `@noble/hashes` (audited, dependency-free). Web Crypto's
 * `subtle.sign` is asynchronous: each digest is a trip through the thread pool, which was most of a warm gateway
 * call's overhead (the audit signs every line); `node:crypto` costs every start-up the loading of Node's whole
 * crypto module. The key's padded blocks are absorbed once per key; each digest clones that state.
 *
 * @module
 */
import { hmac } from "npm:@noble/hashes@2.0.1/hmac.js";
import { sha256 as nobleSha256 } from "npm:@noble/hashes@2.0.1/sha2.js";

/**
 * An HMAC-SHA256 key, ready to sign many messages.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { HmacSha256 } from "./hmac_sha256.ts";
 * const mac = new HmacSha256(new TextEncoder().encode("key"));
 * assert.equal(mac.hex(new TextEncoder().encode("The quick brown fox jumps over the lazy dog")), "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
 * ```
 */
export class HmacSha256 {
  readonly #keyed: ReturnType<typeof hmac.create>;

  /** Takes the key as HMAC does: hashed first when longer than a block. */
  constructor(key: Uint8Array) {
    this.#keyed = hmac.create(nobleSha256, key);
  }

  /** The 32-byte digest of `message`. */
  sign(message: Uint8Array): Uint8Array {
    return this.#keyed.clone().update(message).digest();
  }

  /** The digest of `message` as 64 lowercase hex digits. */
  hex(message: Uint8Array): string {
    return this.sign(message).toHex();
  }
}

/**
 * The SHA-256 digest of `message`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256 } from "./hmac_sha256.ts";
 * assert.equal(sha256(new TextEncoder().encode("abc")).length, 32);
 * ```
 */
export function sha256(message: Uint8Array): Uint8Array {
  return nobleSha256(message);
}
