/** Redaction: which values are secrets, literals before patterns, and no fragment of a secret left behind. */
import assert from "node:assert/strict";
import { makeRedactor, parseRedactPatterns, redactDeep, REDACTED, secretValues } from "../src/redact.ts";

/** Every fragment of four characters or more of `secret` that survives in `text`. */
function fragments(text: string, secret: string): string[] {
  const found: string[] = [];
  for (let i = 0; i + 4 <= secret.length; i++) {
    if (text.includes(secret.slice(i, i + 4))) found.push(secret.slice(i, i + 4));
  }
  return found;
}

Deno.test("secretValues: passed variables, the two API keys, and any *KEY*/*TOKEN*/*SECRET*/*PASSWORD*", () => {
  const env = {
    PATH: "/usr/bin:/bin",
    HOME: "/home/someone",
    TZ: "Europe/Helsinki",
    PLAIN: "not-a-secret",
    OAI_API_KEY: "oai-key-value",
    OPENAI_API_KEY: "openai-key-value",
    GITHUB_TOKEN: "ghp_token_value",
    my_secret_thing: "lower-case-secret",
    DB_PASSWORD: "hunter2hunter2",
    MONKEY: "banana-split",
    SHORT_KEY: "abc",
  };
  const secrets = secretValues(env, ["TZ"]);
  assert.deepEqual(
    new Set(secrets),
    new Set([
      "Europe/Helsinki",
      "oai-key-value",
      "openai-key-value",
      "ghp_token_value",
      "lower-case-secret",
      "hunter2hunter2",
      "banana-split",
    ]),
  );
  // Longest first.
  assert.deepEqual(secrets, [...secrets].sort((a, b) => b.length - a.length));
});

Deno.test("makeRedactor: literals go first, longest first, then the patterns", () => {
  const redact = makeRedactor(["abcd", "abcdefgh"], [/id-\d+/g]);
  assert.equal(redact("x abcdefgh y abcd z id-42"), `x ${REDACTED} y ${REDACTED} z ${REDACTED}`);
  assert.equal(redact("nothing to hide"), "nothing to hide");
});

Deno.test("makeRedactor: a secret a pattern partly matches leaves no fragment behind", () => {
  const secret = "ghp_AbCdEfGhIj0123456789";
  // The pattern alone would stop at the digits and leave "0123456789" in clear.
  const patterns = parseRedactPatterns("ghp_[A-Za-z]+");
  assert.equal("x ghp_AbCdEfGhIj0123456789 y".replace(patterns[0], REDACTED), `x ${REDACTED}0123456789 y`);
  const out = makeRedactor([secret], patterns)(`token=${secret}; again:${secret}!`);
  assert.deepEqual(fragments(out, secret), []);
  assert.equal(out, `token=${REDACTED}; again:${REDACTED}!`);
});

Deno.test("makeRedactor: overlapping secrets leave no fragment of either", () => {
  const a = "sk-aaaa1111";
  const b = "1111bbbb";
  const out = makeRedactor([a, b])(`key=${a}bbbb end`);
  assert.deepEqual(fragments(out, a), []);
  assert.deepEqual(fragments(out, b), []);
  assert.equal(out, `key=${REDACTED} end`);
});

Deno.test("makeRedactor: a secret that overlaps itself leaves no fragment", () => {
  const secret = "abcdabcd";
  const out = makeRedactor([secret])("<abcdabcdabcd>");
  assert.deepEqual(fragments(out, secret), []);
});

Deno.test("makeRedactor: a pattern that matches the empty string does not garble the text", () => {
  const redact = makeRedactor([], parseRedactPatterns("x*"));
  assert.equal(redact("abxxc"), `ab${REDACTED}c`);
});

Deno.test("parseRedactPatterns: commas separate patterns; \\x2c is a comma inside one", () => {
  const patterns = parseRedactPatterns(" a+b , c\\x2cd ,, ");
  assert.equal(patterns.length, 2);
  assert.equal(makeRedactor([], patterns)("aab c,d"), `${REDACTED} ${REDACTED}`);
  assert.deepEqual(parseRedactPatterns(undefined), []);
  assert.deepEqual(parseRedactPatterns(""), []);
});

Deno.test("parseRedactPatterns: a pattern that does not compile is a SyntaxError naming it", () => {
  assert.throws(() => parseRedactPatterns("ok,(unclosed"), (error: unknown) => {
    assert.ok(error instanceof SyntaxError);
    assert.match(error.message, /"\(unclosed"/);
    return true;
  });
});

Deno.test("redactDeep: every string, keys included, at any depth; other values untouched", () => {
  const redact = makeRedactor(["s3cr3t"]);
  const value = { a: "x s3cr3t", list: ["s3cr3t", 1, null, true], nested: { s3cr3t: { deep: "s3cr3t!" } } };
  assert.deepEqual(redactDeep(value, redact), {
    a: `x ${REDACTED}`,
    list: [REDACTED, 1, null, true],
    nested: { [REDACTED]: { deep: `${REDACTED}!` } },
  });
});
