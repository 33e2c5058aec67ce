/**
 * Canonical JSON: every object's keys sorted, and a key whose value is `undefined` left out (as `JSON.stringify`
 * leaves it out), so that a value and the same value read back from JSON give the same text on every machine.
 * Pins compare tool definitions by it; the pool signs and hashes by it.
 *
 * Not here: the digest of the text (`sha256_hex.ts`), signing (`pool/signing.ts`).
 *
 * @module
 */

import { isRecord } from "../contract.ts";

/**
 * `value` as canonical JSON text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { canonical } from "./canonical_json.ts";
 * assert.equal(canonical({ b: 1, a: [true, "x"] }), '{"a":[true,"x"],"b":1}');
 * assert.equal(canonical({ a: 1, gone: undefined }), canonical(JSON.parse('{"a":1}')));
 * ```
 */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).filter((key) => value[key] !== undefined).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
