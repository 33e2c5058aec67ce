/** Writing a whole buffer to a stream, a pipe or a socket that may take less at each write. @module */

/**
 * Writes all of `bytes` to `writer`; false when its reader went away (a broken pipe: `| head` is not toolgate's
 * failure). Any other error is thrown.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { writeAll } from "./write_all.ts";
 * assert.ok(await writeAll(Deno.stdout, new TextEncoder().encode("")));
 * ```
 */
export async function writeAll(
  writer: { write(bytes: Uint8Array): Promise<number> },
  bytes: Uint8Array,
): Promise<boolean> {
  try {
    for (let written = 0; written < bytes.length;) written += await writer.write(bytes.subarray(written));
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.BrokenPipe) return false;
    throw error;
  }
}
