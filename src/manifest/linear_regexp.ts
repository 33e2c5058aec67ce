/**
 * Schema patterns matched in linear time: ECMAScript patterns (JSON Schema's `pattern`, `patternProperties`, the
 * `url` format) translated to RE2 syntax and matched by re2js, a pure-JavaScript port of RE2.
 *
 * Why RE2, measured: V8's backtracking engine takes seconds on `^(a+)+$` against 29 characters (every added
 * character doubles it) and held the MCP server's event loop 15 s; a model chooses the arguments, so any pattern a
 * manifest holds can be driven to its worst case. re2js answers the same match in about a millisecond, and a
 * million characters in about 12 ms (linear: it never backtracks). Validating patterns at load instead (refusing
 * nested quantifiers) would turn away correct manifests on a guess and still miss polynomial cases such as the
 * `url` format's; bounding the match is impossible in JavaScript without a worker per call. re2js is pure
 * JavaScript (no WebAssembly to load, no permission to grant), kept, and without dependencies.
 *
 * What RE2 does not do, it refuses: lookaround and backreferences need backtracking. A pattern with them does not
 * compile; `toolgate validate` names it, loading warns, and calls of that tool are answered `unavailable` (closed,
 * never a silent fallback to the backtracking engine).
 *
 * @module
 */
import { RE2JS } from "npm:re2js@2.10.0";

/**
 * What ajv's `code.regExp` option takes: a factory of objects with `test`, named by `code` for standalone code.
 *
 * @example
 * ```ts
 * import { Ajv } from "npm:ajv@8.17.1";
 * import { linearRegExp, type LinearRegExpEngine } from "./linear_regexp.ts";
 * const engine: LinearRegExpEngine = linearRegExp;
 * new Ajv({ code: { regExp: engine } });
 * ```
 */
export interface LinearRegExpEngine {
  (pattern: string, flags: string): { test(input: string): boolean; toString(): string };
  /** ajv's standalone code would import this; toolgate never generates standalone code. */
  code: string;
}

/** ECMAScript's `\s`: RE2's is ASCII only. */
const JS_SPACE =
  "\\x{9}-\\x{d}\\x{20}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}" +
  "\\x{3000}\\x{feff}";
/** ECMAScript's `.` without the `s` flag: anything but the four line terminators (RE2's leaves out `\n` only). */
const JS_DOT = "[^\\x{a}\\x{d}\\x{2028}\\x{2029}]";
const ANY = "[\\x{0}-\\x{10ffff}]";
const HEX = /^[0-9A-Fa-f]+$/;

/**
 * Rewrites an ECMAScript pattern in RE2's syntax where the two differ: `\uXXXX` (surrogate pairs joined) and
 * `\u{...}` become `\x{...}`; `\s`, `\S` and `.` keep ECMAScript's meaning (Unicode spaces; `.` stops at `\r`,
 * U+2028 and U+2029 too); `\cX`, `\0`, `[\b]`, `[]` and `[^]` are spelled out; a `[` inside a class is a literal
 * (RE2 would read `[[:alpha:]]` as a POSIX class). Everything else is the same in both. Lookaround and
 * backreferences are left as they are, for RE2 to refuse.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toRe2Syntax } from "./linear_regexp.ts";
 * assert.equal(toRe2Syntax("^\\u00e9+$"), "^\\x{00e9}+$");
 * ```
 */
export function toRe2Syntax(pattern: string, dotAll = false): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === "\\") {
      const [text, next] = escape(pattern, i + 1, inClass);
      out += text;
      i = next - 1;
      continue;
    }
    if (inClass) {
      if (char === "]") inClass = false;
      out += char === "[" ? "\\[" : char;
      continue;
    }
    if (char === "[") {
      if (pattern.startsWith("[^]", i)) {
        out += ANY;
        i += 2;
      } else if (pattern.startsWith("[]", i)) {
        out += `[^${ANY.slice(1)}`;
        i += 1;
      } else {
        inClass = true;
        out += char;
        // A `]` or `^]` right after the opening is a member in RE2, the end of an empty class in ECMAScript; the
        // two empty cases are taken above, so what follows is read the same way by both.
      }
      continue;
    }
    out += char === "." ? (dotAll ? ANY : JS_DOT) : char;
  }
  return out;
}

/** The RE2 spelling of the escape whose letter is at `at`, and where the pattern goes on. */
function escape(pattern: string, at: number, inClass: boolean): [string, number] {
  const letter = pattern[at];
  if (letter === undefined) return ["\\", at];
  if (letter === "u") {
    if (pattern[at + 1] === "{") {
      const end = pattern.indexOf("}", at + 2);
      const hex = end === -1 ? "" : pattern.slice(at + 2, end);
      if (HEX.test(hex)) return [`\\x{${hex}}`, end + 1];
      return ["\\u", at + 1];
    }
    const hex = pattern.slice(at + 1, at + 5);
    if (hex.length !== 4 || !HEX.test(hex)) return ["\\u", at + 1];
    const code = parseInt(hex, 16);
    const low = pattern.slice(at + 7, at + 11);
    if (
      code >= 0xd800 && code <= 0xdbff && pattern.startsWith("\\u", at + 5) && low.length === 4 &&
      HEX.test(low)
    ) {
      const second = parseInt(low, 16);
      if (second >= 0xdc00 && second <= 0xdfff) {
        const point = 0x10000 + ((code - 0xd800) << 10) + (second - 0xdc00);
        return [`\\x{${point.toString(16)}}`, at + 11];
      }
    }
    return [`\\x{${hex}}`, at + 5];
  }
  if (letter === "s") return [inClass ? JS_SPACE : `[${JS_SPACE}]`, at + 1];
  // Inside a class RE2 has no way to write "not a Unicode space" beside other members: it keeps its ASCII `\S`.
  if (letter === "S") return [inClass ? "\\S" : `[^${JS_SPACE}]`, at + 1];
  if (letter === "c" && /^[A-Za-z]$/.test(pattern[at + 1] ?? "")) {
    return [`\\x{${(pattern.charCodeAt(at + 1) % 32).toString(16)}}`, at + 2];
  }
  if (letter === "0" && !/^[0-9]$/.test(pattern[at + 1] ?? "")) return ["\\x{0}", at + 1];
  if (letter === "b" && inClass) return ["\\x{8}", at + 1];
  return [`\\${letter}`, at + 1];
}

function re2Flags(flags: string): number {
  let out = 0;
  if (flags.includes("i")) out |= RE2JS.CASE_INSENSITIVE;
  if (flags.includes("m")) out |= RE2JS.MULTILINE;
  if (flags.includes("s")) out |= RE2JS.DOTALL;
  return out;
}

/**
 * Compiles an ECMAScript pattern for linear-time matching. A pattern ECMAScript rejects throws its `SyntaxError`, as
 * before; one that only a backtracking engine can match (lookaround, backreferences, a repeat count past 1000)
 * throws an `Error` saying so.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { linearRegExp } from "./linear_regexp.ts";
 * assert.equal(linearRegExp("^(a+)+$", "u").test("a".repeat(28) + "!"), false); // in about a millisecond
 * ```
 */
export const linearRegExp: LinearRegExpEngine = Object.assign(
  (pattern: string, flags: string) => {
    // ECMAScript's own verdict first: a pattern it rejects stays rejected (RE2 accepts some, such as `\z`).
    new RegExp(pattern, flags);
    let compiled: RE2JS;
    try {
      compiled = RE2JS.compile(toRe2Syntax(pattern, flags.includes("s")), re2Flags(flags));
    } catch (error) {
      throw new Error(
        `the pattern ${JSON.stringify(pattern)} cannot be matched in linear time (${
          (error as Error).message
        }): toolgate matches schema patterns with RE2, which has no lookaround or backreferences`,
      );
    }
    return { test: (input: string) => compiled.test(input), toString: () => `/${pattern}/${flags}` };
  },
  { code: "re2js" },
);

/**
 * Why `pattern` cannot be used (ECMAScript rejects it, or it needs backtracking), or `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { linearPatternProblem } from "./linear_regexp.ts";
 * assert.equal(linearPatternProblem("^[a-z]+$"), undefined);
 * assert.match(linearPatternProblem("^(?=.*\\d)") ?? "", /cannot be matched in linear time .*no lookaround/);
 * ```
 */
export function linearPatternProblem(pattern: string): string | undefined {
  try {
    linearRegExp(pattern, "u");
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
