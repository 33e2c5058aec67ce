/**
 * The audit line's digest: each line written with the audit key carries, as its last field (`mac`), an
 * HMAC-SHA256 of the text before it under a domain of its own, so that `toolgate log` can tell a line changed by
 * hand from one toolgate wrote. The writer (`audit_log.ts`) seals; the reader (`run/audit_reader.ts`) checks.
 *
 * @module
 */
import type { HmacSha256 } from "../base/hmac_sha256.ts";

const encoder = new TextEncoder();

/**
 * What a line's digest covers before the line: a line's digest can then never equal an arguments digest under the
 * same key (a caller who chose arguments text that reads as a line would otherwise find that line's digest logged).
 */
const LINE_DOMAIN = "toolgate audit line\n";

/** The field that holds a line's digest; always the last, so that what it covers is the text before it. */
const MAC_TAIL = /,?"mac":"([0-9a-f]{64})"\}$/;

function hex(bytes: ArrayBuffer): string {
  return new Uint8Array(bytes).toHex();
}

/**
 * The audit key as a Web Crypto HMAC-SHA256 key, for signing lines and arguments and checking lines.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditHmacKey } from "./audit_seal.ts";
 * const key = await auditHmacKey(crypto.getRandomValues(new Uint8Array(32)));
 * assert.equal(key.algorithm.name, "HMAC");
 * ```
 */
export function auditHmacKey(raw: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    "raw",
    raw as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign", "verify"],
  );
}

/**
 * A record's JSON text (one object) with its digest as the last field, `mac`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditHmacKey, checkLineMac, sealLine } from "./audit_seal.ts";
 * const key = await auditHmacKey(new Uint8Array(32));
 * const line = await sealLine('{"tool":"t"}', key);
 * assert.match(line, /^\{"tool":"t","mac":"[0-9a-f]{64}"\}$/);
 * assert.equal(await checkLineMac(line, key), "verified");
 * assert.equal(await checkLineMac(line.replace('"t"', '"u"'), key), "altered");
 * ```
 */
export async function sealLine(json: string, key: CryptoKey): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(LINE_DOMAIN + json));
  return sealed(json, hex(mac));
}

/** A record's JSON text with `mac` (hex) as its last field. */
function sealed(json: string, mac: string): string {
  return `${json.slice(0, -1)}${json === "{}" ? "" : ","}"mac":"${mac}"}`;
}

/**
 * {@linkcode sealLine} in this thread, with the key's pads absorbed once (see {@linkcode HmacSha256}): what the
 * writer does at every line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { HmacSha256 } from "../base/hmac_sha256.ts";
 * import { auditHmacKey, checkLineMac, sealWith } from "./audit_seal.ts";
 * const raw = new Uint8Array(32).fill(7);
 * const line = sealWith('{"tool":"t"}', new HmacSha256(raw));
 * assert.equal(await checkLineMac(line, await auditHmacKey(raw)), "verified");
 * ```
 */
export function sealWith(json: string, key: HmacSha256): string {
  return sealed(json, key.hex(encoder.encode(LINE_DOMAIN + json)));
}

/**
 * Checks a line's digest: `verified`, `altered` (its digest does not match what it says), or `unsigned` (it has
 * none: written without the key, or by a toolgate that did not sign lines).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditHmacKey, checkLineMac } from "./audit_seal.ts";
 * assert.equal(await checkLineMac('{"tool":"t"}', await auditHmacKey(new Uint8Array(32))), "unsigned");
 * ```
 */
export async function checkLineMac(
  line: string,
  key: CryptoKey,
): Promise<"verified" | "altered" | "unsigned"> {
  const tail = MAC_TAIL.exec(line);
  if (tail === null) return "unsigned";
  const json = line.slice(0, tail.index) + "}";
  const mac = new Uint8Array(tail[1].match(/../g)!.map((byte) => parseInt(byte, 16)));
  const ok = await crypto.subtle.verify("HMAC", key, mac, encoder.encode(LINE_DOMAIN + json));
  return ok ? "verified" : "altered";
}
