/**
 * What the writing tools share: the check that a `path` argument names a file, and content digests (the atomic
 * write itself is `Workspace.writeFile`, which works in a pinned directory).
 *
 * @module
 */
import { invalidArgs } from "./envelope.ts";
import { parseRelative } from "./paths.ts";

/**
 * The workspace-relative form of a `path` argument that must name a file. `notes/` names a directory: refused
 * before anything is looked at or created, whatever exists there.
 *
 * @example
 * ```ts
 * import { filePathArgument } from "./files.ts";
 * filePathArgument("notes/a.md"); // "notes/a.md"
 * ```
 */
export function filePathArgument(path: string): string {
  const { rel, namesDirectory } = parseRelative(path);
  if (namesDirectory && rel !== ".") {
    throw invalidArgs(
      "path",
      `path ends in "/", so it names a directory: ${JSON.stringify(path)}`,
      "a file path",
    );
  }
  return rel;
}

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
  return new Uint8Array(digest).toHex();
}
