/**
 * Reads JSONC (comments, trailing commas) strictly: syntax errors and keys repeated inside one object become
 * `PATH:LINE:COL: message` lines instead of being silently accepted. The common case, a well-formed file, takes
 * one scan of our own and the native `JSON.parse`; jsonc-parser is loaded only to say what is wrong with a file
 * that is not (loading an npm package costs a start-up tens of milliseconds).
 *
 * @module
 */

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

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);

/** The end of the string token that starts at `start` (its closing quote + 1), or -1 when it does not end. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i + 1;
    else if (c === 0x0a || c === 0x0d) return -1;
  }
  return -1;
}

/**
 * One pass over the text: the text as plain JSON (comments and trailing commas cut out) for the native
 * `JSON.parse`, and the keys repeated inside one object. `undefined` for anything it does not expect (an
 * unterminated string or comment): the error path then names the problem.
 */
function scan(text: string, label: string): { json: string; duplicates: string[] } | undefined {
  /** Spans to leave out: comments and trailing commas. */
  const cuts: [number, number][] = [];
  const duplicates: string[] = [];
  const stack: Frame[] = [];
  /** Where the last comma sits while only whitespace and comments follow it. */
  let comma = -1;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (WHITESPACE.has(ch)) {
      i++;
      continue;
    }
    if (ch === "/" && (text[i + 1] === "/" || text[i + 1] === "*")) {
      const block = text[i + 1] === "*";
      const end = block ? text.indexOf("*/", i + 2) : text.indexOf("\n", i);
      if (block && end === -1) return undefined;
      const stop = end === -1 ? text.length : block ? end + 2 : end;
      cuts.push([i, stop]);
      i = stop;
      continue;
    }
    const top = stack[stack.length - 1];
    if (ch === "}" || ch === "]") {
      // A trailing comma: the JSONC allowance JSON.parse does not have.
      if (comma >= 0) cuts.push([comma, comma + 1]);
      stack.pop();
      comma = -1;
      i++;
      continue;
    }
    comma = -1;
    if (ch === ",") {
      if (top?.object) top.expectKey = true;
      comma = i;
      i++;
      continue;
    }
    if (ch === "{" || ch === "[") {
      stack.push({ object: ch === "{", keys: new Set(), expectKey: ch === "{" });
      i++;
      continue;
    }
    if (ch === '"') {
      const end = stringEnd(text, i);
      if (end === -1) return undefined;
      if (top?.object && top.expectKey) {
        let key: string;
        try {
          key = JSON.parse(text.slice(i, end));
        } catch {
          return undefined;
        }
        if (top.keys.has(key)) {
          duplicates.push(`${label}:${lineColumn(text, i)}: duplicate key ${JSON.stringify(key)}`);
        }
        top.keys.add(key);
        top.expectKey = false;
      }
      i = end;
      continue;
    }
    // A colon, a number, true, false, null, or something JSON.parse will refuse.
    i++;
  }
  if (cuts.length === 0) return { json: text, duplicates };
  cuts.sort((a, b) => a[0] - b[0]);
  const kept: string[] = [];
  let from = 0;
  for (const [start, end] of cuts) {
    kept.push(text.slice(from, start));
    // A comment's place keeps a space, so that tokens on both sides of it stay apart.
    kept.push(" ");
    from = end;
  }
  kept.push(text.slice(from));
  return { json: kept.join(""), duplicates };
}

/** What is wrong with text that does not parse, by jsonc-parser's tree parser (loaded now, only for this). */
async function syntaxErrors(text: string, label: string, strict = false): Promise<string[]> {
  const { parseTree, printParseErrorCode } = await import("npm:jsonc-parser@3.3.1");
  const syntax: { error: number; offset: number }[] = [];
  const tree = parseTree(text, syntax as never, { allowTrailingComma: !strict, disallowComments: strict });
  if (syntax.length === 0 && !tree) return [`${label}:1:1: value expected`];
  return syntax.map((e) => {
    const code = printParseErrorCode(e.error as never);
    return `${label}:${lineColumn(text, e.offset)}: ${MESSAGES[code] ?? code}`;
  });
}

/**
 * Where plain JSON text (no comments, no trailing commas) first goes wrong, as `LINE:COLUMN: message`, or
 * `undefined` when it is JSON: for a person who typed arguments by hand.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonSyntaxError } from "./jsonc.ts";
 * assert.equal(await jsonSyntaxError('{"a": 1,}'), "1:9: property name expected");
 * assert.equal(await jsonSyntaxError('{"a": 1}'), undefined);
 * ```
 */
export async function jsonSyntaxError(text: string): Promise<string | undefined> {
  if (parsePlainJson(text) !== undefined) return undefined;
  const [first] = await syntaxErrors(text, "", true);
  return first?.replace(/^:/, "") ?? "1:1: value expected";
}

/**
 * The value of `text` when it is plain JSON (a byte-order mark aside: no comments, no trailing commas), else
 * `undefined`. Repeated keys are not looked for: the last one wins.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePlainJson } from "./jsonc.ts";
 * assert.deepEqual(parsePlainJson('{"a": 1}'), { value: { a: 1 } });
 * assert.equal(parsePlainJson('{"a": 1, }'), undefined);
 * ```
 */
export function parsePlainJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) };
  } catch {
    return undefined;
  }
}

/**
 * Reads well-formed JSONC quickly: the value, or `undefined` for text with a problem (a syntax error; a repeated
 * key outside plain JSON, where the last one wins). For callers that only need the value and leave reporting to
 * {@linkcode parseJsonc}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readJsonc } from "./jsonc.ts";
 * assert.deepEqual(readJsonc('{"a": 1, /* note *\/ }'), { a: 1 });
 * assert.equal(readJsonc('{"a": 1 "b": 2}'), undefined);
 * ```
 */
export function readJsonc(text: string): unknown {
  // Most manifests are plain JSON: the runtime's own parser reads them in a fraction of the scan's time. Where
  // a key repeats, JSON.parse keeps the last one; the scan below would give up instead. Either way, what reads
  // the manifest for real (parseJsonc) refuses it.
  const plain = parsePlainJson(text);
  if (plain) return plain.value;
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const scanned = scan(text, "");
  if (scanned === undefined || scanned.duplicates.length > 0) return undefined;
  try {
    return JSON.parse(scanned.json);
  } catch {
    return undefined;
  }
}

/**
 * Parses JSONC text; `label` (usually the file's path) prefixes every error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseJsonc } from "./jsonc.ts";
 * assert.deepEqual(await parseJsonc('{"a": 1, // note\n}', "x.json"), { ok: true, value: { a: 1 } });
 * assert.deepEqual(await parseJsonc('{"a": 1, "a": 2}', "x.json"), { ok: false, errors: ['x.json:1:10: duplicate key "a"'] });
 * ```
 */
export async function parseJsonc(text: string, label: string): Promise<JsoncResult> {
  // Editors on Windows save a byte-order mark; it is not content, and columns count from after it.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const scanned = scan(text, label);
  let value: unknown;
  try {
    if (scanned === undefined) throw new SyntaxError("unreadable token");
    value = JSON.parse(scanned.json);
  } catch {
    const errors = await syntaxErrors(text, label);
    return { ok: false, errors: errors.length > 0 ? errors : [`${label}:1:1: value expected`] };
  }
  if (scanned.duplicates.length > 0) return { ok: false, errors: scanned.duplicates };
  return { ok: true, value };
}
