/** Schema patterns in linear time: ECMAScript's meaning kept under RE2, and what needs backtracking refused. */
import assert from "node:assert/strict";
import { linearPatternProblem, linearRegExp, toRe2Syntax } from "../../src/manifest/linear_regexp.ts";
import { patternProblems } from "../../src/manifest/schema_engine.ts";

Deno.test("toRe2Syntax: the escapes and classes RE2 spells otherwise", () => {
  assert.equal(toRe2Syntax("^\\u00e9+$"), "^\\x{00e9}+$");
  assert.equal(toRe2Syntax("\\u{1F600}"), "\\x{1F600}");
  assert.equal(toRe2Syntax("\\uD83D\\uDE00"), "\\x{1f600}", "a surrogate pair is one code point");
  assert.equal(toRe2Syntax("\\cJ\\0"), "\\x{a}\\x{0}");
  assert.equal(toRe2Syntax("[\\b]"), "[\\x{8}]");
  assert.equal(toRe2Syntax("[[a]"), "[\\[a]", "a [ inside a class is a literal, not a POSIX class");
  assert.match(toRe2Syntax("a.b"), /^a\[\^.*\]b$/, "ECMAScript's dot stops at \\r and U+2028 too");
  assert.equal(toRe2Syntax("[.]"), "[.]", "a dot in a class is a dot");
});

/** Short strings over an alphabet that exercises the differences (spaces, line ends, astral characters). */
function* samples(count: number): Generator<string> {
  const alphabet = [
    "a",
    "b",
    "A",
    "Z",
    "_",
    "0",
    "9",
    "-",
    "@",
    "/",
    " ",
    "\t",
    "\n",
    "\r",
    "\v",
    "\u00a0",
    "\u2028",
  ]
    .concat([
      "\u2003",
      "\ufeff",
      "é",
      "\u{1F600}",
      "\u{1F620}",
      "\b",
      "[",
      "]",
      ".",
      "word",
      " word ",
      "\u0000",
    ]);
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let i = 0; i < count; i++) {
    let text = "";
    const length = Math.floor(next() * 6);
    for (let j = 0; j < length; j++) text += alphabet[Math.floor(next() * alphabet.length)];
    yield text;
  }
}

Deno.test("linearRegExp: the same verdicts as ECMAScript's engine on patterns a manifest writes", () => {
  const patterns = [
    "^[A-Za-z_][A-Za-z0-9_]*$",
    "\\s+",
    "^.$",
    "a.b",
    "\\u00e9",
    "[^\\s]",
    "^\\d{3}-\\d{4}$",
    "^\\S+@\\S+$",
    "[\\u0041-\\u005a]+",
    "\\uD83D\\uDE00",
    "^[^]$",
    "[]",
    "\\cJ",
    "[\\b]",
    "(?<year>\\d{4})-\\d\\d",
    "^(a|b)*c$",
    "\\p{L}+",
    "[[a]",
    "^\\/path$",
    "[\\s\\d]",
    "^[\\u{1F600}-\\u{1F64F}]$",
    "\\bword\\b",
    "^\\w+$",
    "^(?:ab){2,3}$",
  ];
  for (const pattern of patterns) {
    const native = new RegExp(pattern, "u");
    const linear = linearRegExp(pattern, "u");
    for (const text of samples(3000)) {
      assert.equal(linear.test(text), native.test(text), `${pattern} on ${JSON.stringify(text)}`);
    }
  }
});

Deno.test("linearRegExp: a catastrophic pattern is linear; each compiled pattern names itself for ajv's cache", () => {
  const started = performance.now();
  assert.equal(linearRegExp("^(a+)+$", "u").test("a".repeat(28) + "!"), false);
  assert.ok(performance.now() - started < 100);
  assert.equal(linearRegExp("^(a+)+$", "u").test("aaa"), true);
  assert.notEqual(String(linearRegExp("a", "u")), String(linearRegExp("b", "u")));
  assert.equal(linearRegExp("^ABC$", "iu").test("abc"), true);
});

Deno.test("linearRegExp: lookaround, backreferences and huge repeat counts are refused, naming the pattern", () => {
  for (const pattern of ["(?=a)b", "(?!a)b", "(?<=a)b", "(a)\\1", "(?<x>a)\\k<x>", "a{1001}"]) {
    const problem = linearPatternProblem(pattern);
    assert.ok(problem?.includes(JSON.stringify(pattern)), `${pattern}: ${problem}`);
    assert.match(problem!, /cannot be matched in linear time/);
  }
  // What ECMAScript rejects stays rejected, with its own error.
  assert.throws(() => linearRegExp("\\z", "u"), SyntaxError);
  assert.equal(linearPatternProblem("^[a-z]+$"), undefined);
});

Deno.test("patternProblems: every pattern and patternProperties key of a schema, at any depth", () => {
  assert.deepEqual(
    patternProblems({ type: "object", properties: { a: { type: "string", pattern: "^a+$" } } }),
    [],
  );
  const problems = patternProblems({
    type: "object",
    properties: {
      // A property named "pattern" is a name, not a pattern.
      pattern: { type: "string" },
      list: { type: "array", items: { type: "string", pattern: "(?=x)" } },
    },
    patternProperties: { "^(a)\\1$": {} },
  });
  assert.equal(problems.length, 2);
});
