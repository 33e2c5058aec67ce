/**
 * The one SHA-256 digest as text: lowercase hex, by Web Crypto (native, off the main thread for large input).
 * Bytes to hex everywhere else is the runtime's own `Uint8Array.prototype.toHex()`.
 *
 * Not here: HMAC-SHA256 and the synchronous digest for many small messages (`hmac_sha256.ts`).
 *
 * @module
 */

const encoder = new TextEncoder();

/**
 * The SHA-256 digest of `data` (text is taken as its UTF-8 bytes), as 64 lowercase hex digits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256Hex } from "./sha256_hex.ts";
 * assert.equal(await sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
 * assert.equal(await sha256Hex(new TextEncoder().encode("abc")), await sha256Hex("abc"));
 * ```
 */
export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)).toHex();
}
