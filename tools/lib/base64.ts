/**
 * Base64 of bytes, for binary file contents and response bodies (no `@std/encoding`: JSR is out of reach).
 *
 * @module
 */

/**
 * Encodes bytes as standard base64 with padding.
 *
 * @example
 * ```ts
 * import { encodeBase64 } from "./base64.ts";
 * encodeBase64(new TextEncoder().encode("hi")); // "aGk="
 * ```
 */
export function encodeBase64(bytes: Uint8Array): string {
  let binary = "";
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) {
    binary += String.fromCharCode(...bytes.subarray(i, i + step));
  }
  return btoa(binary);
}

/**
 * Decodes standard base64 (whitespace ignored), or returns `undefined` when the text is not base64.
 *
 * @example
 * ```ts
 * import { decodeBase64 } from "./base64.ts";
 * new TextDecoder().decode(decodeBase64("aGk=")); // "hi"
 * ```
 */
export function decodeBase64(text: string): Uint8Array | undefined {
  try {
    const binary = atob(text.replace(/\s+/g, ""));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}
