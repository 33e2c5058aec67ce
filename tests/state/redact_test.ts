/** Redaction: which values are secrets, literals before patterns, and no fragment of a secret left behind. */
import assert from "node:assert/strict";
import { failure, success } from "../../src/contract.ts";
import {
  makeRedactor,
  parseRedactPatterns,
  redactDeep,
  REDACTED,
  redactionFor,
  redactNames,
  scrubEnvelope,
  SECRET_REMOVED_WARNING,
  secretForms,
  secretName,
  secretValues,
} from "../../src/state/redact.ts";
import { secretLike } from "../../src/state/secret_like.ts";

/** Every fragment of four characters or more of `secret` that survives in `text`. */
function fragments(text: string, secret: string): string[] {
  const found: string[] = [];
  for (let i = 0; i + 4 <= secret.length; i++) {
    if (text.includes(secret.slice(i, i + 4))) found.push(secret.slice(i, i + 4));
  }
  return found;
}

Deno.test("secretValues: declared variables, the two API keys, and any *KEY*/*TOKEN*/*SECRET*/*PASSWORD*", () => {
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

// --- encoded forms and runs (issue 24, item 3) -------------------------------------------------------------------

/** A secret with a space, a slash, a plus and an equals sign: each URL encoder writes it differently. */
const WORDY = "correct horse/Zq9x7Kp+2026=ok";

function bytesOf(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function base64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

function hex(text: string): string {
  return [...bytesOf(text)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Masks `secret` in `text` and asserts that no run of 8 of the form shown is left. */
function assertMasked(secret: string, form: string, label: string): void {
  const text = `before ${form} after`;
  const out = makeRedactor([secret])(text);
  assert.ok(out.includes(REDACTED), `${label}: not masked in ${text}`);
  for (let i = 0; i + 8 <= form.length; i++) {
    const piece = form.slice(i, i + 8);
    // The edge characters of a base64 stream mix the secret's bits with its neighbours': not the secret's.
    if (/^[A-Za-z0-9]{8}$/.test(piece)) assert.ok(!out.includes(piece), `${label}: ${piece} left in ${out}`);
  }
}

Deno.test("makeRedactor: base64 and base64url of a secret, with each padding, alone or unpadded", () => {
  // Lengths 29, 30 and 31: "=", no padding and "==".
  for (const secret of [WORDY, WORDY + "x", WORDY + "xy"]) {
    const std = base64(bytesOf(secret));
    const url = std.replaceAll("+", "-").replaceAll("/", "_");
    for (const form of [std, std.replace(/=+$/, ""), url, url.replace(/=+$/, "")]) {
      assertMasked(secret, form, `base64 of ${secret.length} chars`);
    }
  }
});

Deno.test("makeRedactor: a secret inside a longer base64 stream, at each of the three alignments", () => {
  for (const before of ["", "a", "ab", "abc", "abcd"]) {
    for (const after of ["", "z", "yz"]) {
      const stream = base64(bytesOf(`${before}${WORDY}${after}`));
      const out = makeRedactor([WORDY])(stream);
      assert.ok(out.includes(REDACTED), `${before.length} bytes before: ${stream}`);
      // What is left is at most the few characters that mix the neighbours' bits with the secret's.
      assert.ok(out.replace(REDACTED, "").length <= 12, `${before.length}+${after.length}: ${out}`);
      const url = stream.replaceAll("+", "-").replaceAll("/", "_");
      assert.ok(makeRedactor([WORDY])(url).includes(REDACTED), `base64url, ${before.length} bytes before`);
    }
  }
});

Deno.test("makeRedactor: hex in either case, URL-encoded as each encoder writes it, reversed, another case", () => {
  const forms: [string, string][] = [
    ["hex", hex(WORDY)],
    ["HEX", hex(WORDY).toUpperCase()],
    ["hex with spaces", hex(WORDY).replace(/(..)(?!$)/g, "$1 ")],
    ["encodeURIComponent", encodeURIComponent(WORDY)],
    [
      "lower-case percent escapes",
      encodeURIComponent(WORDY).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    ],
    ["+ for space (form encoding)", new URLSearchParams({ q: WORDY }).toString().slice(2)],
    [
      "every byte past the unreserved",
      WORDY.replace(/[^A-Za-z0-9\-._~]/g, (c) => `%${hex(c).toUpperCase()}`),
    ],
    ["reversed", [...WORDY].reverse().join("")],
    ["upper case", WORDY.toUpperCase()],
    ["lower case", WORDY.toLowerCase()],
  ];
  for (const [label, form] of forms) assertMasked(WORDY, form, label);
});

Deno.test("makeRedactor: any run of 8 characters of a secret, cut, split in two, or spaced out", () => {
  const secret = "sk-proj-Zq9x7KpL2mN4vB8cX1";
  const forms: [string, string][] = [
    ["all but the last character", secret.slice(0, -1)],
    ["all but the first", secret.slice(1)],
    ["a middle run of 8", secret.slice(9, 17)],
    ["split in two strings", `"${secret.slice(0, 13)}" + "${secret.slice(13)}"`],
    ["spaced out", [...secret].join(" ")],
    ["one character a line", [...secret].join("\n")],
    ["a JSON array of characters", JSON.stringify([...secret])],
    ["dotted", [...secret].join(".")],
  ];
  for (const [label, form] of forms) {
    const out = makeRedactor([secret])(`x ${form} y`);
    assert.ok(out.includes(REDACTED), `${label}: ${out}`);
    const shown = out.replaceAll(/[^A-Za-z0-9]/g, "");
    for (let i = 0; i + 8 <= secret.length; i++) {
      const run = secret.slice(i, i + 8).replaceAll(/[^A-Za-z0-9]/g, "");
      if (run.length >= 6) assert.ok(!shown.includes(run), `${label}: ${run} left in ${out}`);
    }
  }
});

Deno.test("makeRedactor: no false positive on text that shares fewer than 8 characters with a secret", () => {
  const secret = "Zq9x7KpL2mN4vB8cX1";
  const redact = makeRedactor([secret, WORDY]);
  const texts = [
    // Every run of 7 of the secret, each on its own, and the secret's start and end glued to other words.
    ...Array.from({ length: secret.length - 6 }, (_, i) => `id ${secret.slice(i, i + 7)} here`),
    `${secret.slice(0, 7)}-${secret.slice(9, 16)}`,
    "battery staple, a horse of course, correct",
    "The quick brown fox jumps over the lazy dog 0123456789.",
    '{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}',
    hex("an unrelated value of some length") + " " + base64(bytesOf("an unrelated value of some length")),
    "https://example.com/path?q=a%20horse%20of%20course&x=2026",
  ];
  for (const text of texts) assert.equal(redact(text), text);
});

Deno.test("makeRedactor: a secret shorter than 8 characters is masked as it is, and in no other form", () => {
  const redact = makeRedactor(["Zq9x7K"]);
  assert.equal(redact("a Zq9x7K b"), `a ${REDACTED} b`);
  for (const text of ["ZQ9X7K", btoa("Zq9x7K"), hex("Zq9x7K"), "K7x9qZ"]) assert.equal(redact(text), text);
});

Deno.test("makeRedactor: megabytes of text with a secret at the end, in base64", () => {
  const secret = "ghp_Zq9x7KpL2mN4vB8cX1";
  const text = "lorem ipsum dolor sit amet, ".repeat(80_000) + base64(bytesOf(secret));
  const out = makeRedactor([secret])(text);
  assert.ok(out.endsWith(REDACTED));
  assert.equal(out.length, text.length - base64(bytesOf(secret)).length + REDACTED.length);
});

// --- which variables are secrets (issue 24, item 9) --------------------------------------------------------------

Deno.test("secretName: a name part that marks a secret, in any case; TZ, LANG, PATH and the desktop's are not", () => {
  for (
    const name of [
      "MY_API_KEY",
      "APIKEY",
      "githubToken",
      "GH_TOKEN",
      "CLIENT_SECRET",
      "DB_PASSWORD",
      "DB_PASSWD",
      "SMTP_PASS",
      "AWS_CREDENTIALS",
      "HTTP_AUTH",
      "SESSION_COOKIE",
      "FLASK_SESSION",
      "PRIVATE_PEM",
      "REQUEST_SIGNATURE",
      "SENTRY_DSN",
      "my_secret_thing",
    ]
  ) assert.ok(secretName(name), name);
  for (
    const name of [
      "TZ",
      "LANG",
      "PATH",
      "HOME",
      "PWD",
      "OLDPWD",
      "FOO",
      "GIT_AUTHOR_NAME",
      "KEYBOARD_LAYOUT",
      "PASSTHROUGH_MODE",
      "SSL_CERT_FILE",
      "SSH_AUTH_SOCK",
      "XDG_SESSION_TYPE",
      "XDG_SESSION_CLASS",
      "DBUS_SESSION_BUS_ADDRESS",
    ]
  ) assert.ok(!secretName(name), name);
});

Deno.test("secretValues: a passthrough variable is a secret by its name, a declaration or TOOLGATE_REDACT only", () => {
  const env = {
    TZ: "Europe/Helsinki",
    LANG: "en_US.UTF-8",
    PATH: "/usr/local/bin:/usr/bin:/bin",
    MY_API_KEY: "k-0123456789",
    FOO: "foo-value-42",
    BAR: "bar-other-7",
    DECLARED: "declared-value",
    TOOLGATE_REDACT: "FOO, id-\\d+",
  };
  assert.deepEqual(
    new Set(secretValues(env, ["DECLARED"])),
    new Set(["k-0123456789", "foo-value-42", "declared-value"]),
  );
  assert.deepEqual(redactNames(env.TOOLGATE_REDACT, env), ["FOO"]);
  const { redact, scrub } = redactionFor(env, ["DECLARED"]);
  const text = "Europe/Helsinki en_US.UTF-8 k-0123456789 FOO=foo-value-42 bar-other-7 declared-value id-7";
  assert.equal(
    scrub?.(text),
    `Europe/Helsinki en_US.UTF-8 ${REDACTED} FOO=${REDACTED} bar-other-7 ${REDACTED} id-7`,
  );
  assert.equal(
    redact(text),
    `Europe/Helsinki en_US.UTF-8 ${REDACTED} FOO=${REDACTED} bar-other-7 ${REDACTED} ${REDACTED}`,
    "the name FOO is no pattern: it stays readable",
  );
});

// --- ordinary text keeps its words (issue 38) --------------------------------------------------------------------

/** A value that shares the 8-character runs `variable` and `secret v` with English, beside secret-like ones. */
const WORDS_AND_KEY = "my-secret-variable-Zq9x7KpL2mN4";

Deno.test("makeRedactor: a value sharing words with ordinary text leaves the text whole and masks every secret-like run", () => {
  const redact = makeRedactor([WORDS_AND_KEY]);
  const prose = [
    SECRET_REMOVED_WARNING,
    "the variable was set; see the secret variable in the docs",
    "My Secret Variable, a variable-length record",
    "SECRET VARIABLE",
  ];
  for (const text of prose) assert.equal(redact(text), text);
  // Every run of 8 that looks like a secret in any case, shown alone, cut or spaced out, is masked.
  for (let i = 0; i + 8 <= WORDS_AND_KEY.length; i++) {
    const run = WORDS_AND_KEY.slice(i, i + 8);
    if (!secretLike(run.toLowerCase())) continue;
    // Spaced out, a run is found by 8 of its letters and digits.
    const spaced = /^[A-Za-z0-9]{8}$/.test(run) ? [[...run].join(" ")] : [];
    for (const form of [run, run.toUpperCase(), ...spaced]) {
      assert.equal(redact(`saw ${form} here`), `saw ${REDACTED} here`, `${form} of ${run}`);
    }
  }
  // The whole value in any form, though it starts with words.
  for (
    const form of [
      WORDS_AND_KEY.toUpperCase(),
      [...WORDS_AND_KEY].reverse().join(""),
      [...WORDS_AND_KEY].join(" "),
    ]
  ) {
    assert.equal(redact(`[${form}]`), `[${REDACTED}]`, form);
  }
  // A run secret-like by its letter case alone is masked in that case, and its lower case reads as words.
  const camel = makeRedactor(["MySecretVariable"]);
  assert.equal(camel("x ySecretV y"), `x ${REDACTED} y`);
  assert.equal(camel("a secret variable"), "a secret variable");
  // Cut short, the secret-like part is masked from the first run with a digit on; the words before it show.
  assert.equal(redact(WORDS_AND_KEY.slice(0, -1)), `my-secret-var${REDACTED}`);
});

Deno.test("scrubEnvelope: toolgate's own warning stays whole, once, when a secret shares its words or is one of them", () => {
  for (
    const secret of [WORDS_AND_KEY, "a-secret-variable", "tok_secretvar99", "secret variable", "removed"]
  ) {
    const scrub = makeRedactor([secret]);
    const once = scrubEnvelope(success({ out: `value: ${secret}` }), scrub);
    const twice = scrubEnvelope(once, scrub);
    assert.deepEqual(twice.warnings, [SECRET_REMOVED_WARNING], secret);
    assert.deepEqual(twice.result, { out: `value: ${REDACTED}` }, secret);
  }
});

Deno.test("redactionFor: a TOOLGATE_REDACT pattern or a secret spares toolgate's own texts; the text around them is masked", () => {
  const env = { API_TOKEN: "secret variable", TOOLGATE_REDACT: "removed, id-\\d+" };
  const note = "the tool said this note itself";
  const { redact, scrub } = redactionFor(env, [], [], [note]);
  assert.equal(redact(SECRET_REMOVED_WARNING), SECRET_REMOVED_WARNING);
  assert.equal(scrub?.(SECRET_REMOVED_WARNING), SECRET_REMOVED_WARNING);
  assert.equal(
    redact(`${note}: secret variable removed id-4`),
    `${note}: ${REDACTED} ${REDACTED} ${REDACTED}`,
  );
  assert.equal(makeRedactor(["this note itself"], [], [note])(note), note);
  assert.equal(makeRedactor(["this note itself"])(note), `the tool said ${REDACTED}`);
});

Deno.test("makeRedactor: a value of words alone is masked whole, in any case, spaced and encoded, and its words stay words", () => {
  const phrase = "correct horse battery staple";
  const redact = makeRedactor([phrase]);
  const forms = [
    phrase.toUpperCase(),
    [...phrase].reverse().join(""),
    phrase.replaceAll(" ", "-"),
    hex(phrase),
    base64(bytesOf(phrase)),
    encodeURIComponent(phrase),
  ];
  for (const form of forms) assert.ok(!redact(`x ${form} y`).includes(form.slice(2, 12)), form);
  for (const form of [hex(phrase.slice(0, 12)), encodeURIComponent(phrase.slice(3, 20))]) {
    assert.equal(redact(`[${form}]`), `[${REDACTED}]`, `a fragment of its encodings: ${form}`);
  }
  const prose = "a correct horse; the battery staple of the horse battery";
  assert.equal(redact(prose), prose);
});

Deno.test("makeRedactor: the same text asked again is masked the same; a redactor with one more secret masks it", () => {
  const first = makeRedactor(["first-secret-0a1b2c"]);
  const text = "argv: first-secret-0a1b2c second-secret-3d4e5f";
  assert.equal(first(text), `argv: ${REDACTED} second-secret-3d4e5f`);
  assert.equal(first(text), `argv: ${REDACTED} second-secret-3d4e5f`);
  // A secret learnt later is a new redactor: nothing the first one remembered holds it back.
  const both = makeRedactor(["first-secret-0a1b2c", "second-secret-3d4e5f"]);
  assert.equal(both(text), `argv: ${REDACTED} ${REDACTED}`);
  // Thousands of other texts in between, and a long one, still get the same answers.
  for (let i = 0; i < 5000; i++) first(`field-${i}`);
  assert.equal(first(text), `argv: ${REDACTED} second-secret-3d4e5f`);
  const long = `${"x".repeat(300)} first-secret-0a1b2c`;
  assert.equal(first(long), `${"x".repeat(300)} ${REDACTED}`);
  assert.equal(first(long), `${"x".repeat(300)} ${REDACTED}`);
});
