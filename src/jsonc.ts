/**
 * Reads JSONC (comments, trailing commas) strictly: syntax errors and keys repeated inside one object become
 * `PATH:LINE:COL: message` lines instead of being silently accepted.
 *
 * @module
 */
import { createScanner, type ParseError, parseTree, printParseErrorCode } from "npm:jsonc-parser@3.3.1";

/** The outcome of {@linkcode parseJsonc}: a value, or every problem found. */
export type JsoncResult = { ok: true; value: unknown } | { ok: false; errors: string[] };

/** Turns a character offset into a 1-based `line:column`. */
export function lineColumn(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return `${line}:${offset - lineStart + 1}`;
}

const MESSAGES: Record<string, string> = {
  InvalidSymbol: "invalid symbol",
  InvalidNumberFormat: "invalid number format",
  PropertyNameExpected: "property name expected",
  ValueExpected: "value expected",
  ColonExpected: "colon expected",
  CommaExpected: "comma expected",
  CloseBraceExpected: "closing brace expected",
  CloseBracketExpected: "closing bracket expected",
  EndOfFileExpected: "end of file expected",
  InvalidCommentToken: "invalid comment",
  UnexpectedEndOfComment: "unterminated comment",
  UnexpectedEndOfString: "unterminated string",
  UnexpectedEndOfNumber: "unterminated number",
  InvalidUnicode: "invalid unicode escape",
  InvalidEscapeCharacter: "invalid escape character",
  InvalidCharacter: "invalid character",
};

interface Frame {
  readonly object: boolean;
  readonly keys: Set<string>;
  expectKey: boolean;
}

/** jsonc-parser's `SyntaxKind` and `ScanError` values: const enums, which isolated modules cannot read. */
const TOKEN = {
  openBrace: 1,
  closeBrace: 2,
  openBracket: 3,
  closeBracket: 4,
  comma: 5,
  string: 10,
  unknown: 16,
  eof: 17,
} as const;
const NO_SCAN_ERROR = 0;

/**
 * One pass of jsonc-parser's scanner: the text as plain JSON (comments and trailing commas cut out) for the
 * native `JSON.parse`, and the keys repeated inside one object. `undefined` when the scanner meets anything it
 * cannot read: the slower tree parser then names the error.
 */
function scan(text: string, label: string): { json: string; duplicates: string[] } | undefined {
  // Whitespace and comments are skipped by the scanner; a comment shows as a "/" between two tokens.
  const scanner = createScanner(text, true);
  const kept: string[] = [];
  const duplicates: string[] = [];
  const stack: Frame[] = [];
  let from = 0;
  let comma = -1;
  let previousEnd = 0;
  let slash = text.indexOf("/");
  const cut = (start: number, end: number) => {
    kept.push(text.slice(from, start));
    from = Math.max(from, end);
  };
  for (let kind: number = scanner.scan(); kind !== TOKEN.eof; kind = scanner.scan()) {
    if (scanner.getTokenError() !== NO_SCAN_ERROR || kind === TOKEN.unknown) return undefined;
    const offset = scanner.getTokenOffset();
    const closing = kind === TOKEN.closeBrace || kind === TOKEN.closeBracket;
    // A trailing comma: the JSONC allowance JSON.parse does not have (cut before the gap that follows it).
    if (closing && comma >= 0) cut(comma, comma + 1);
    if (slash !== -1 && slash < previousEnd) slash = text.indexOf("/", previousEnd);
    if (slash !== -1 && slash < offset) cut(previousEnd, offset);
    previousEnd = offset + scanner.getTokenLength();
    const top = stack[stack.length - 1];
    if (kind === TOKEN.comma) {
      if (top?.object) top.expectKey = true;
      comma = offset;
      continue;
    }
    if (closing) {
      stack.pop();
    } else if (kind === TOKEN.openBrace || kind === TOKEN.openBracket) {
      stack.push({ object: kind === TOKEN.openBrace, keys: new Set(), expectKey: kind === TOKEN.openBrace });
    } else if (kind === TOKEN.string && top?.object && top.expectKey) {
      const key = scanner.getTokenValue();
      if (top.keys.has(key)) {
        duplicates.push(`${label}:${lineColumn(text, offset)}: duplicate key ${JSON.stringify(key)}`);
      }
      top.keys.add(key);
      top.expectKey = false;
    }
    comma = -1;
  }
  if (slash !== -1 && slash < previousEnd) slash = text.indexOf("/", previousEnd);
  kept.push(slash === -1 ? text.slice(from) : text.slice(from, Math.max(from, previousEnd)));
  return { json: kept.join(""), duplicates };
}

function syntaxErrors(text: string, label: string): string[] {
  const syntax: ParseError[] = [];
  const tree = parseTree(text, syntax, { allowTrailingComma: true, disallowComments: false });
  if (syntax.length === 0 && !tree) return [`${label}:1:1: value expected`];
  return syntax.map((e) => {
    const code = printParseErrorCode(e.error);
    return `${label}:${lineColumn(text, e.offset)}: ${MESSAGES[code] ?? code}`;
  });
}

/**
 * Parses JSONC text; `label` (usually the file's path) prefixes every error.
 *
 * @example
 * ```ts
 * import { parseJsonc } from "./jsonc.ts";
 * parseJsonc('{"a": 1, // note\n}', "x.json"); // { ok: true, value: { a: 1 } }
 * parseJsonc('{"a": 1, "a": 2}', "x.json"); // { ok: false, errors: ['x.json:1:10: duplicate key "a"'] }
 * ```
 */
export function parseJsonc(text: string, label: string): JsoncResult {
  // Editors on Windows save a byte-order mark; it is not content, and columns count from after it.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const scanned = scan(text, label);
  let value: unknown;
  try {
    if (scanned === undefined) throw new SyntaxError("unreadable token");
    value = JSON.parse(scanned.json);
  } catch {
    const errors = syntaxErrors(text, label);
    return { ok: false, errors: errors.length > 0 ? errors : [`${label}:1:1: value expected`] };
  }
  if (scanned.duplicates.length > 0) return { ok: false, errors: scanned.duplicates };
  return { ok: true, value };
}
