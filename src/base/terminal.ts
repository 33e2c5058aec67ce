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
 * import assert from "node:assert/strict";
 * import { neutralizeControls } from "./terminal.ts";
 * assert.equal(neutralizeControls("\x1b]0;pwned\x07title"), "␛]0;pwned␇title");
 * assert.equal(neutralizeControls("abc\u202edef\n"), "abc\\u{202e}def\n");
 * ```
 */
export function neutralizeControls(text: string): string {
  return text.replace(UNSAFE, visible);
}

/**
 * The escape sequences a program writes to colour or move its output: CSI (`ESC [` ... final byte, or the C1
 * CSI), OSC and the other string commands (DCS, SOS, PM, APC, up to BEL or `ESC \`; one left open runs to the
 * end), and two-character escapes.
 */
const ESCAPES =
  // deno-lint-ignore no-control-regex
  /(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[\x20-\x7e]?/g;

/** Every other character a terminal acts on or a reader cannot see (see {@linkcode neutralizeControls}). */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]|[\uD800-\uDFFF]/gu;

/**
 * One line of a program's own output made plain for a status line: escape sequences (colours, cursor moves, an
 * OSC title) removed whole, every other control or invisible character removed, runs of white space made one
 * space, trimmed. Unlike {@linkcode neutralizeControls}, which shows what was there, this keeps only the words:
 * a tool's coloured `step 1/3` shows as `step 1/3`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { plainLine } from "./terminal.ts";
 * assert.equal(plainLine("\x1b[32mstep 1/3\x1b[0m\t ok"), "step 1/3 ok");
 * assert.equal(plainLine("\x1b]0;pwned\x07done\u202e"), "done");
 * ```
 */
export function plainLine(text: string): string {
  return text.replace(ESCAPES, "").replace(/[\t\n\v\f\r]/g, " ").replace(INVISIBLE, "").replace(/ {2,}/g, " ")
    .trim();
}
