/**
 * Text for a person's terminal: control characters made visible, so that nothing an endpoint, a tool or an MCP
 * client wrote can drive the terminal (an OSC window title, an OSC 52 clipboard write, a CSI that moves the cursor
 * or clears the screen) or reorder what the person reads (bidi overrides, invisible format characters).
 *
 * @module
 */

/**
 * What is made visible: C0 controls but tab and newline (ESC among them, and CR, which could overwrite a line), DEL,
 * C1 controls (U+009B is a CSI of its own to many terminals), the bidi embeddings, overrides, isolates and marks
 * (the "Trojan Source" set), and the zero-width and invisible format characters that hide text in plain sight.
 */
const UNSAFE =
  // deno-lint-ignore no-control-regex
  /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/** Unicode's own pictures of C0 controls (U+2400 + code, ␛ for ESC) and of DEL (␡). */
function visible(char: string): string {
  const code = char.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return "\u2421";
  return `\\u{${code.toString(16)}}`;
}

/**
 * Makes every control character of `text` visible: a C0 control becomes its Unicode picture (`\x1b` -> `␛`,
 * `\r` -> `␍`), DEL `␡`, and a C1 control or a bidi or invisible format character its code (`\u{202e}`). Tabs and
 * newlines stay. Every place where toolgate writes text that others supplied to a terminal goes through this (the
 * CLI's stdout on a terminal, and its stderr always: see `processIo`).
 *
 * @example
 * ```ts
 * import { neutralizeControls } from "./terminal.ts";
 * neutralizeControls("\x1b]0;pwned\x07title"); // "␛]0;pwned␇title"
 * neutralizeControls("abc\u202edef\n"); // "abc\\u{202e}def\n"
 * ```
 */
export function neutralizeControls(text: string): string {
  return text.replace(UNSAFE, visible);
}
