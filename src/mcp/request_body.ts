/**
 * A POST's body read as text, bounded: a declared `Content-Length` over the bound is refused without reading
 * anything, a declared one within it is read whole at once (the server holds a body to its declared length), and
 * a body without one (chunked) is read until it ends or passes the bound. What the SDK's `readRequestBody` does,
 * without its reader's `releaseLock`, whose error for the closed reader cost every request more than the read.
 *
 * @module
 */

/** The largest body read (4 MiB), as the SDK's HTTP entry points bound theirs. */
export const MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024;

/** A body read: its text, or `tooLarge` (nothing kept). */
export type BodyRead = { readonly tooLarge: false; readonly text: string } | { readonly tooLarge: true };

/**
 * Reads `request`'s body as UTF-8 text, at most `maxBytes`; a failed stream rejects.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readPostBody } from "./request_body.ts";
 * const post = (body: BodyInit) => new Request("http://127.0.0.1/mcp", { method: "POST", body });
 * assert.deepEqual(await readPostBody(post('{"a":1}'), 16), { tooLarge: false, text: '{"a":1}' });
 * assert.deepEqual(await readPostBody(post("x".repeat(17)), 16), { tooLarge: true });
 * const chunked = new ReadableStream({ start(c) { c.enqueue(new Uint8Array(10)); c.enqueue(new Uint8Array(10)); c.close(); } });
 * assert.deepEqual(await readPostBody(post(chunked), 16), { tooLarge: true });
 * ```
 */
export async function readPostBody(
  request: Request,
  maxBytes: number = MAX_REQUEST_BODY_BYTES,
): Promise<BodyRead> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) return { tooLarge: true };
  if (request.body === null) return { tooLarge: false, text: "" };
  if (declared !== null && /^\d+$/.test(declared.trim())) {
    return { tooLarge: false, text: await request.text() };
  }
  const reader = request.body.getReader();
  const decoder = new TextDecoder();
  let received = 0;
  let text = "";
  while (true) {
    const { done, value } = await reader.read();
    if (done) return { tooLarge: false, text: text + decoder.decode() };
    received += value.byteLength;
    if (received > maxBytes) {
      await reader.cancel().catch(() => {});
      return { tooLarge: true };
    }
    text += decoder.decode(value, { stream: true });
  }
}
