/**
 * Reads JSONC (comments, trailing commas) strictly: syntax errors and keys repeated inside one object become
 * `PATH:LINE:COL: message` lines instead of being silently accepted.
 *
 * @module
 */
import { getNodeValue, type Node, type ParseError, parseTree, printParseErrorCode } from "jsonc-parser";

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

function duplicateKeys(node: Node | undefined, text: string, label: string, out: string[]): void {
  if (!node) return;
  if (node.type === "object") {
    const seen = new Set<string>();
    for (const property of node.children ?? []) {
      const key = property.children?.[0];
      if (key && typeof key.value === "string") {
        if (seen.has(key.value)) {
          out.push(`${label}:${lineColumn(text, key.offset)}: duplicate key ${JSON.stringify(key.value)}`);
        }
        seen.add(key.value);
      }
      duplicateKeys(property.children?.[1], text, label, out);
    }
  } else if (node.type === "array") {
    for (const child of node.children ?? []) duplicateKeys(child, text, label, out);
  }
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
  const syntax: ParseError[] = [];
  const tree = parseTree(text, syntax, { allowTrailingComma: true, disallowComments: false });
  if (syntax.length > 0) {
    return {
      ok: false,
      errors: syntax.map((e) => {
        const code = printParseErrorCode(e.error);
        return `${label}:${lineColumn(text, e.offset)}: ${MESSAGES[code] ?? code}`;
      }),
    };
  }
  if (!tree) return { ok: false, errors: [`${label}:1:1: value expected`] };
  const duplicates: string[] = [];
  duplicateKeys(tree, text, label, duplicates);
  if (duplicates.length > 0) return { ok: false, errors: duplicates };
  return { ok: true, value: getNodeValue(tree) };
}
