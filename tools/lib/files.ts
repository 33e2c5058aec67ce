/**
 * File helpers shared by the writing tools: the atomic write (a temporary file in the same directory, then a
 * rename) and the sha256 of contents.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";

/** The sha256 of bytes, as lowercase hex. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Writes `bytes` to `target` atomically: a reader sees the old file or the new one, never half of either. The
 * temporary file lives next to the target (so the rename never crosses a file system), takes the mode of the
 * file it replaces, and is removed when anything fails.
 *
 * @example
 * ```ts
 * import { atomicWrite } from "./files.ts";
 * await atomicWrite("/tmp/ws/notes.txt", new TextEncoder().encode("hello\n"));
 * ```
 */
export async function atomicWrite(target: string, bytes: Uint8Array, mode?: number): Promise<void> {
  const suffix = crypto.randomUUID().slice(0, 8);
  const temp = join(dirname(target), `.${basename(target)}.${suffix}.tmp`);
  let file: Deno.FsFile | undefined;
  try {
    file = await Deno.open(temp, { write: true, createNew: true, mode: mode ?? 0o644 });
    let written = 0;
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
    await file.syncData();
    file.close();
    file = undefined;
    if (mode !== undefined) await Deno.chmod(temp, mode);
    await Deno.rename(temp, target);
  } catch (error) {
    file?.close();
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}
