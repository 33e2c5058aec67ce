/**
 * Content digests for the writing tools (the atomic write itself is `Workspace.writeFile`, which works in a pinned
 * directory).
 *
 * @module
 */

/**
 * The sha256 of bytes, as lowercase hex.
 *
 * @example
 * ```ts
 * import { sha256Hex } from "./files.ts";
 * await sha256Hex(new TextEncoder().encode("")); // "e3b0c442...b855"
 * ```
 */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
