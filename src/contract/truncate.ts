/**
 * What a model may read of a tool's text: the limit, and the head-and-tail cut with its marker. Re-exported by
 * `src/contract.ts`.
 *
 * @module
 */

/**
 * The default size, in UTF-16 code units, of text handed to a model.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MODEL_TEXT_LIMIT, truncateForModel } from "../contract.ts";
 * assert.ok(truncateForModel("x".repeat(60_000)).length <= MODEL_TEXT_LIMIT);
 * ```
 */
export const MODEL_TEXT_LIMIT = 50_000;

/**
 * The marker {@linkcode truncateForModel} puts where it cut.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { truncationMarker } from "../contract.ts";
 * assert.equal(truncationMarker(100, 1000), "\n…[truncated 100 of 1000 characters]…\n");
 * ```
 */
export function truncationMarker(removed: number, total: number): string {
  return `\n…[truncated ${removed} of ${total} characters]…\n`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Cuts text to at most `maxChars` characters, keeping 40% from the head and 60% from the tail around one marker
 * that says how much was cut out of how much. Text at or under the limit comes back unchanged; a surrogate pair
 * is never split.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { truncateForModel } from "../contract.ts";
 * assert.equal(truncateForModel("short"), "short");
 * assert.ok(truncateForModel("x".repeat(1000), 200).length <= 200);
 * ```
 */
export function truncateForModel(body: string, maxChars: number = MODEL_TEXT_LIMIT): string {
  if (body.length <= maxChars) return body;
  // The marker's length depends on the count it reports, so size it for the largest count it could report.
  const markerSize = truncationMarker(body.length, body.length).length;
  if (maxChars < markerSize) {
    // No room for the marker: a plain cut is the only way to stay within the limit.
    let end = Math.max(0, Math.floor(maxChars));
    if (end > 0 && isHighSurrogate(body.charCodeAt(end - 1))) end -= 1;
    return body.slice(0, end);
  }
  const budget = maxChars - markerSize;
  let headEnd = Math.floor(budget * 0.4);
  let tailStart = body.length - (budget - headEnd);
  if (headEnd > 0 && isHighSurrogate(body.charCodeAt(headEnd - 1))) headEnd -= 1;
  if (tailStart < body.length && tailStart > 0 && isHighSurrogate(body.charCodeAt(tailStart - 1))) {
    tailStart += 1;
  }
  return body.slice(0, headEnd) + truncationMarker(tailStart - headEnd, body.length) + body.slice(tailStart);
}
