/**
 * The one detector of invisible and control characters in text a person is asked to trust (an MCP server's tool
 * descriptions and titles, a manifest's model-facing text): `toolgate trust` flags them in its prompt and
 * `toolgate lint` in its findings (rule `text-visible`), with the same answer.
 *
 * @module
 */

/** Zero-width characters, bidi controls, other format characters, and C0/C1 controls but tab and newline. */
const INVISIBLE =
  // deno-lint-ignore no-control-regex -- control characters are exactly what this finds
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFEFF\uFFF9-\uFFFB]|\uDB40[\uDC00-\uDC7F]/g;

/**
 * The invisible or control characters in `text` (zero-width, bidi overrides, escapes, tag characters), each as
 * `U+XXXX`, de-duplicated: a description carrying them says something to a model that a person does not see.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invisibleCharacters } from "./invisible.ts";
 * assert.deepEqual(invisibleCharacters("read\u200Bme \u001b[31m"), ["U+200B", "U+001B"]);
 * ```
 */
export function invisibleCharacters(text: string): string[] {
  const found = new Set<string>();
  for (const match of text.matchAll(INVISIBLE)) {
    const code = match[0].codePointAt(0)!;
    found.add(`U+${code.toString(16).toUpperCase().padStart(4, "0")}`);
  }
  return [...found];
}

/**
 * `text` with every character {@linkcode invisibleCharacters} finds shown as `\u{XXXX}`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { showInvisible } from "./invisible.ts";
 * assert.equal(showInvisible("a\u202Eb"), "a\\u{202E}b");
 * ```
 */
export function showInvisible(text: string): string {
  return text.replace(INVISIBLE, (c) => `\\u{${c.codePointAt(0)!.toString(16).toUpperCase()}}`);
}
