/** Redaction: which values are secrets, literals before patterns, and no fragment of a secret left behind. */
import assert from "node:assert/strict";
import { failure, success } from "../src/contract.ts";
import {
  makeRedactor,
  parseRedactPatterns,
  redactDeep,
  REDACTED,
  scrubEnvelope,
  SECRET_REMOVED_WARNING,
  secretForms,
  secretValues,
} from "../src/redact.ts";

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

/** A secret with everything JSON escapes: a quote, a backslash, newlines, a tab, a slash, non-ASCII, an emoji. */
const NASTY = '-----BEGIN KEY-----\nab"cd\\ef/gh\tij€é😀\n-----END KEY-----';

Deno.test("secretForms: raw, JSON-escaped as JSON.stringify and ASCII-only serializers write it, and twice", () => {
  const forms = secretForms(NASTY);
  const once = JSON.stringify(NASTY).slice(1, -1);
  assert.ok(forms.includes(NASTY));
  assert.ok(forms.includes(once));
  assert.ok(forms.includes(JSON.stringify(once).slice(1, -1)), "escaped twice");
  // Python's json.dumps (ensure_ascii), and PHP's \/ .
  const ascii = once.replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  assert.ok(forms.includes(ascii), ascii);
  assert.ok(forms.includes(ascii.replaceAll("/", "\\/")));
  assert.ok(forms.includes(ascii.replace(/\\u([0-9a-f]{4})/g, (_, hex) => `\\u${hex.toUpperCase()}`)));
  assert.ok(forms.includes(JSON.stringify(ascii).slice(1, -1)), "ASCII-escaped, then escaped again");
  assert.deepEqual(secretForms("plain-Value_123"), ["plain-Value_123"], "nothing to escape, one form");
  // A lone surrogate is escaped by JSON.stringify; its form must match what JSON.stringify writes.
  const lone = "ab\ud800cd";
  assert.ok(secretForms(lone).includes(JSON.stringify(lone).slice(1, -1)));
});

Deno.test("makeRedactor: a secret is masked in JSON text, escaped once or twice, leaving no fragment", () => {
  const redact = makeRedactor([NASTY]);
  const once = JSON.stringify({ key: NASTY });
  const twice = JSON.stringify({ body: once });
  const pretty = JSON.stringify({ messages: [{ content: once }] }, null, 2);
  for (const text of [NASTY, once, twice, pretty]) {
    const out = redact(text);
    assert.ok(out.includes(REDACTED), out);
    for (const piece of ["ab", "cd", "ef/gh", "ij€é"]) {
      assert.ok(!out.includes(piece), `${JSON.stringify(piece)} left in ${out}`);
    }
  }
  assert.equal(redact(once), `{"key":"${REDACTED}"}`);
  assert.equal(JSON.parse(JSON.parse(redact(twice)).body).key, REDACTED, "the JSON stays JSON");
});

Deno.test("scrubEnvelope: secrets out of the result, keys, message and metadata, with one warning", () => {
  const scrub = makeRedactor(["hunter2-token"]);
  const out = scrubEnvelope(
    success({ env: "TOKEN=hunter2-token", list: ["hunter2-token", 1], "hunter2-token": true }, {
      tool: "t",
      warnings: ["saw hunter2-token"],
    }),
    scrub,
  );
  assert.deepEqual(out, {
    ok: true,
    result: { env: `TOKEN=${REDACTED}`, list: [REDACTED, 1], [REDACTED]: true },
    tool: "t",
    warnings: [`saw ${REDACTED}`, SECRET_REMOVED_WARNING],
  });
  const failed = scrubEnvelope(
    failure("execution_error", "login failed for hunter2-token", {
      tool: "t",
      metadata: { stderr: "hunter2-token" },
    }),
    scrub,
  );
  assert.equal(failed.ok, false);
  assert.equal(failed.kind, "execution_error");
  assert.equal(failed.message, `login failed for ${REDACTED}`);
  assert.equal(failed.stderr, REDACTED);
  assert.deepEqual(failed.warnings, [SECRET_REMOVED_WARNING]);
  // Scrubbed again: no second warning.
  assert.deepEqual(scrubEnvelope(failed, scrub).warnings, [SECRET_REMOVED_WARNING]);
  // Nothing to remove: the very same envelope.
  const clean = success({ a: "b" });
  assert.equal(scrubEnvelope(clean, scrub), clean);
});

Deno.test("scrubEnvelope: the contract's own fields stay, even when a secret equals one of their values", () => {
  const scrub = makeRedactor(["execution_error", "tool-name"]);
  const out = scrubEnvelope(
    failure("execution_error", "it was execution_error", { tool: "tool-name" }),
    scrub,
  );
  assert.equal(out.kind, "execution_error");
  assert.equal(out.tool, "tool-name");
  assert.equal(out.retryable, true);
  assert.equal(out.message, `it was ${REDACTED}`);
});
