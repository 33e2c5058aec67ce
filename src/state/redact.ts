/**
 * Redaction for anything toolgate writes down or hands on: secret values masked in each of the forms JSON escaping
 * gives them (as literals), and, for a value of {@linkcode MIN_RUN} characters or more, in the reversible forms a
 * careless tool prints it in (base64, hex, URL-encoding, reversed, another letter case, a secret-like run of 8 of
 * its characters, spaced out: `secret_matcher.ts`); then the patterns of `TOOLGATE_REDACT`; and the scrubbing of
 * envelopes, which takes the secret values out of everything a model or an MCP client is sent. toolgate's own
 * texts (its warnings, notes and advice) are never masked: a value that shares their words leaves them whole.
 *
 * Masking is a guard against accidents and careless tools, not against a tool that holds a secret and means to
 * leak it (it can always encode it some other way): the way to keep a secret from a hostile tool is not to give it
 * one.
 *
 * One piece: the redactor holds the secret values, the patterns and toolgate's own texts that are never masked,
 * and applies them together in one pass over a text; the matcher of a value's forms is `secret_matcher.ts`.
 *
 * @module
 */
import { type Envelope, mapEnvelopeStrings, withWarnings } from "../contract.ts";
import { type CharEncoder, MIN_RUN, SecretMatcher } from "./secret_matcher.ts";
import { secretName } from "./secret_names.ts";

export { MIN_RUN, secretName };

/** What replaces a secret. */
export const REDACTED = "[REDACTED]";

/** Variables whose values are always secrets, whatever else applies. */
const ALWAYS_SECRET = ["OAI_API_KEY", "OPENAI_API_KEY"];
/** Shorter values cannot leave a fragment worth hiding, and replacing them would garble everything. */
const MIN_SECRET_LENGTH = 4;
/** A `TOOLGATE_REDACT` entry that is a variable's name. */
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Replaces secrets in text. */
export interface Redactor {
  (text: string): string;
}

/**
 * Parses `TOOLGATE_REDACT`: regular expressions separated by commas (write a comma inside a pattern as `\x2c`).
 * An entry that names a variable set in `env` is no pattern: it makes that variable's value a secret
 * ({@linkcode redactNames}), and its name stays readable. Throws a `SyntaxError` naming the pattern that does not
 * compile.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRedactPatterns } from "./redact.ts";
 * assert.deepEqual(parseRedactPatterns("id-\\d+, FOO", { FOO: "foo-value" }), [/id-\d+/g]);
 * ```
 */
export function parseRedactPatterns(
  spec: string | undefined,
  env: Readonly<Record<string, string>> = {},
): RegExp[] {
  if (!spec) return [];
  const named = new Set(redactNames(spec, env));
  return spec.split(",").map((p) => p.trim()).filter((p) => p !== "" && !named.has(p)).map((pattern) => {
    try {
      return new RegExp(pattern, "g");
    } catch (error) {
      throw new SyntaxError(
        `TOOLGATE_REDACT: invalid pattern ${JSON.stringify(pattern)}: ${(error as Error).message}`,
      );
    }
  });
}

/**
 * The variables `TOOLGATE_REDACT` names: its entries that are the names of variables set in `env`, whose values
 * are then secrets; every other entry is a pattern.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { redactNames } from "./redact.ts";
 * assert.deepEqual(redactNames("FOO, id-\\d+, MY_VAR, UNSET", { FOO: "1", MY_VAR: "2" }), ["FOO", "MY_VAR"]);
 * ```
 */
export function redactNames(spec: string | undefined, env: Readonly<Record<string, string>>): string[] {
  if (!spec) return [];
  return spec.split(",").map((entry) => entry.trim()).filter((entry) =>
    VARIABLE_NAME.test(entry) && env[entry] !== undefined
  );
}

/**
 * The secret values of an environment: those of `declaredNames` (the secrets a manifest declares), of
 * `OAI_API_KEY` and `OPENAI_API_KEY`, of every variable whose name marks it as a secret ({@linkcode secretName}),
 * and of every variable `TOOLGATE_REDACT` names. A passthrough variable is not a secret for being passed: `TZ`,
 * `LANG` or `PATH` show as they are.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { secretValues } from "./redact.ts";
 * assert.deepEqual(secretValues({ TZ: "Europe/Helsinki", MY_API_KEY: "k-0123456789", FOO: "foo-value", TOOLGATE_REDACT: "FOO" }, []), ["k-0123456789", "foo-value"]);
 * ```
 */
export function secretValues(
  env: Readonly<Record<string, string>>,
  declaredNames: Iterable<string>,
): string[] {
  const names = new Set([...declaredNames, ...ALWAYS_SECRET]);
  for (const name of Object.keys(env)) if (secretName(name)) names.add(name);
  for (const name of redactNames(env.TOOLGATE_REDACT, env)) names.add(name);
  const values = new Set<string>();
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value.length >= MIN_SECRET_LENGTH) values.add(value);
  }
  return [...values].sort((a, b) => b.length - a.length);
}

/** How one JSON serializer writes a string's inside. */
interface JsonStyle {
  /** Characters past ASCII: as they are (`JSON.stringify`, Go), or `\u00e9` (Python, Java: lower or upper hex). */
  readonly nonAscii: "raw" | "lower" | "upper";
  /** `/` written `\/` (PHP, some Java libraries). */
  readonly slash: boolean;
}

const SHORT_ESCAPES: Readonly<Record<string, string>> = {
  '"': '\\"',
  "\\": "\\\\",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
};

function unicodeEscape(code: number, upper: boolean): string {
  const hex = code.toString(16).padStart(4, "0");
  return `\\u${upper ? hex.toUpperCase() : hex}`;
}

function isSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdfff;
}

/** Whether the surrogate at `i` is half of a pair (JSON.stringify escapes a lone one, and keeps a pair as is). */
function paired(text: string, i: number): boolean {
  const code = text.charCodeAt(i);
  const low = (c: number) => c >= 0xdc00 && c <= 0xdfff;
  const high = (c: number) => c >= 0xd800 && c <= 0xdbff;
  return high(code) ? low(text.charCodeAt(i + 1)) : high(text.charCodeAt(i - 1));
}

/** The inside of a JSON string holding `text`, as a serializer of `style` writes it. */
function escapeJson(text: string, style: JsonStyle): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    const code = text.charCodeAt(i);
    const short = SHORT_ESCAPES[char];
    if (short !== undefined) out += short;
    else if (char === "/" && style.slash) out += "\\/";
    else if (code < 0x20) out += unicodeEscape(code, style.nonAscii === "upper");
    else if (code < 0x80) out += char;
    else if (style.nonAscii !== "raw") out += unicodeEscape(code, style.nonAscii === "upper");
    else if (isSurrogate(code) && !paired(text, i)) out += unicodeEscape(code, false);
    else out += char;
  }
  return out;
}

/** The escaping styles of the serializers a secret is likely to have passed through. */
const ONCE: readonly JsonStyle[] = [
  { nonAscii: "raw", slash: false },
  { nonAscii: "lower", slash: false },
  { nonAscii: "upper", slash: false },
  { nonAscii: "raw", slash: true },
  { nonAscii: "lower", slash: true },
];
/** JSON text inside a JSON string was escaped again by toolgate itself, or a serializer like it. */
const AGAIN: readonly JsonStyle[] = [{ nonAscii: "raw", slash: false }, { nonAscii: "lower", slash: false }];

/** Each way of {@linkcode secretForms}, as an escaping of one character (the matcher escapes runs with them). */
const JSON_ESCAPINGS: readonly CharEncoder[] = ONCE.flatMap((style) => [
  (char: string) => escapeJson(char, style),
  ...AGAIN.map((again) => (char: string) => escapeJson(escapeJson(char, style), again)),
]);

/**
 * Every form a secret takes in text: the value itself; JSON-escaped once (a tool's JSON output, an envelope in a
 * tool message, a tool call's arguments), as `JSON.stringify` writes it and as ASCII-only serializers do
 * (`\u00e9`, lower or upper hex, `\/` or not); and each of those escaped again (that JSON text inside another
 * JSON string: a request body in `--debug`, a transcript on disk). A value that JSON does not escape has one form.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { secretForms } from "./redact.ts";
 * assert.deepEqual(secretForms("plain-value"), ["plain-value"]);
 * assert.ok(secretForms('pa"ss').includes('pa\\"ss')); // the form JSON.stringify writes
 * assert.ok(secretForms('pa"ss').includes('pa\\\\\\"ss')); // escaped twice
 * ```
 */
export function secretForms(secret: string): string[] {
  const forms = new Set([secret]);
  for (const style of ONCE) {
    const once = escapeJson(secret, style);
    forms.add(once);
    for (const again of AGAIN) forms.add(escapeJson(once, again));
  }
  return [...forms];
}

/**
 * Builds a redactor from literal secrets and patterns. Each secret is masked in every form of
 * {@linkcode secretForms}, so that text holding JSON (a transcript, a request body) cannot carry a secret with a
 * quote, a backslash, a newline or a character past ASCII past it; one of {@linkcode MIN_RUN} characters or more
 * also in base64 or base64url (inside a longer stream too), hex, URL-encoded, reversed, in another letter case,
 * and wherever a secret-like run of 8 of its characters shows, spaced out or not (a run of plain words is not
 * masked: `secret_like.ts`). A shorter one is masked as it is only.
 *
 * toolgate's own texts are never masked: `keep` lists them (its fixed warnings, notes and advice), and every
 * occurrence of one of them, or of {@linkcode SECRET_REMOVED_WARNING}, stays as it is whatever a secret or a
 * pattern matches. Only those words show: a secret around them is masked up to their first and from their last
 * character.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { makeRedactor, SECRET_REMOVED_WARNING } from "./redact.ts";
 * const redact = makeRedactor(["s3cr3t-value", 'pa"ss'], [/value-\d+/g]);
 * assert.equal(redact("token=s3cr3t-value id=value-42"), "token=[REDACTED] id=[REDACTED]");
 * assert.equal(redact(JSON.stringify({ password: 'pa"ss' })), '{"password":"[REDACTED]"}');
 * assert.equal(redact(`b64=${btoa("s3cr3t-value")} up=S3CR3T-VALUE`), "b64=[REDACTED] up=[REDACTED]");
 * // A value that shares words with toolgate's own warning leaves the warning whole.
 * assert.equal(makeRedactor(["my-secret-value-42", "secret"])(SECRET_REMOVED_WARNING), SECRET_REMOVED_WARNING);
 * ```
 */
export function makeRedactor(
  secrets: readonly string[],
  patterns: readonly RegExp[] = [],
  keep: readonly string[] = [],
): Redactor {
  return masker(secretCover(secrets), patterns, keep);
}

/** Marks in `covered` the characters of `text` that belong to a secret; true when any does. */
type Cover = (text: string, covered: Uint8Array) => boolean;

/** The redactor of a secrets' cover, then the patterns, sparing toolgate's own texts. */
function masker(cover: Cover | undefined, patterns: readonly RegExp[], keep: readonly string[]): Redactor {
  const own = [...new Set([SECRET_REMOVED_WARNING, ...keep])].filter((text) => text !== "");
  const global = patterns.map((pattern) =>
    pattern.global ? pattern : new RegExp(pattern.source, `${pattern.flags}g`)
  );
  if (cover === undefined && global.length === 0) return (text: string) => text;
  return memoized((text: string) => {
    const covered = new Uint8Array(text.length);
    let found = cover?.(text, covered) ?? false;
    for (const pattern of global) {
      for (const match of text.matchAll(pattern)) {
        // A pattern that matches the empty string would otherwise put a marker between every two characters.
        if (match[0] === "") continue;
        covered.fill(1, match.index, match.index + match[0].length);
        found = true;
      }
    }
    if (!found) return text;
    for (const words of own) {
      for (let at = text.indexOf(words); at !== -1; at = text.indexOf(words, at + 1)) {
        covered.fill(0, at, at + words.length);
      }
    }
    return masked(text, covered);
  });
}

/** The longest text whose redaction is remembered: an audit line's keys and fields, a tool's name, its argv. */
const MEMO_TEXT = 256;
/** The most texts remembered by one redactor; past it, it forgets them all and starts again. */
const MEMO_ENTRIES = 4096;

/**
 * `redact`, remembering its answer for short texts: the same strings (an audit line's keys, the tool's name, its
 * command line, the working folder) come back on every call, and scanning them for every form of every secret was
 * most of a line's cost. The answer depends on the text alone: a redactor's secrets and patterns never change
 * (a secret learnt later makes a new redactor, with nothing remembered), so nothing it remembers can go stale.
 */
function memoized(redact: Redactor): Redactor {
  const known = new Map<string, string>();
  return (text: string) => {
    if (text.length > MEMO_TEXT) return redact(text);
    let out = known.get(text);
    if (out === undefined) {
      out = redact(text);
      if (known.size >= MEMO_ENTRIES) known.clear();
      known.set(text, out);
    }
    return out;
  };
}

/**
 * Covers the secrets alone: every character of any occurrence of any literal form, or of anything the matcher
 * finds (marking, not replacing one literal after another, which would leave the tail of a secret that overlaps
 * another, or itself, in clear); none: undefined.
 */
function secretCover(secrets: readonly string[]): Cover | undefined {
  const values = [...new Set(secrets.filter((s) => s.length > 0))];
  if (values.length === 0) return undefined;
  const literals = [...new Set(values.flatMap(secretForms))].sort((a, b) => b.length - a.length);
  const matcher = new SecretMatcher(values, JSON_ESCAPINGS);
  return (text, covered) => {
    let found = false;
    for (const secret of literals) {
      for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) {
        covered.fill(1, at, at + secret.length);
        found = true;
      }
    }
    return (!matcher.empty && text.length >= MIN_RUN && matcher.cover(text, covered)) || found;
  };
}

/** The text with each stretch of covered characters replaced by one marker. */
function masked(text: string, covered: Uint8Array): string {
  let out = "";
  let start = 0;
  while (start < text.length) {
    let end = start;
    const secret = covered[start] === 1;
    while (end < text.length && (covered[end] === 1) === secret) end++;
    out += secret ? REDACTED : text.slice(start, end);
    start = end;
  }
  return out;
}

/**
 * What one run keeps secret, built once where a command starts and handed to everything that writes: `redact`
 * masks the secret values and the `TOOLGATE_REDACT` patterns (the audit log, transcripts, debug output, prompts);
 * `scrub` masks the secret values alone, in every envelope handed back (absent when there are none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { redactionFor } from "./redact.ts";
 * const { redact, scrub } = redactionFor({ API_TOKEN: "tok-0123456789", TOOLGATE_REDACT: "id-\\d+" }, []);
 * assert.equal(redact("tok-0123456789 id-42"), "[REDACTED] [REDACTED]");
 * assert.equal(scrub?.("tok-0123456789 id-42"), "[REDACTED] id-42");
 * ```
 */
export interface Redaction {
  /** Masks the secret values and the `TOOLGATE_REDACT` patterns. */
  readonly redact: Redactor;
  /** Masks the secret values alone; absent when there are none. */
  readonly scrub?: Redactor;
}

/**
 * The {@linkcode Redaction} of a run in `env` whose tools declare the secrets `declaredNames`, and that knows
 * `moreValues` besides (the secrets of toolgate's store), sparing toolgate's own texts `keep`
 * ({@linkcode makeRedactor}). Which variables are secrets: {@linkcode secretValues}. Throws a `SyntaxError` naming a `TOOLGATE_REDACT` pattern that does not compile.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { redactionFor } from "./redact.ts";
 * const redaction = redactionFor({ GITHUB_TOKEN: "ghp_example123" }, ["GITHUB_TOKEN"]);
 * assert.equal(redaction.redact("token ghp_example123"), "token [REDACTED]");
 * ```
 */
export function redactionFor(
  env: Readonly<Record<string, string>>,
  declaredNames: Iterable<string>,
  moreValues: Iterable<string> = [],
  keep: readonly string[] = [],
): Redaction {
  const more = [...moreValues].filter((value) => value.length >= MIN_SECRET_LENGTH);
  const secrets = [...new Set([...secretValues(env, declaredNames), ...more])].sort((a, b) =>
    b.length - a.length
  );
  const patterns = parseRedactPatterns(env.TOOLGATE_REDACT, env);
  if (secrets.length === 0) return { redact: masker(undefined, patterns, keep) };
  // One matcher for both: it is the costly part to build.
  const cover = secretCover(secrets);
  return { redact: masker(cover, patterns, keep), scrub: masker(cover, [], keep) };
}

/** Applies a redactor to every string inside a JSON-like value. */
export function redactDeep<T>(value: T, redact: Redactor): T {
  if (typeof value === "string") return redact(value) as T;
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, redact)) as T;
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [redact(key), redactDeep(item, redact)]),
    ) as T;
  }
  return value;
}

/**
 * {@linkcode redactDeep} for a value that is serialized at once and never changed: what no redaction changed is
 * shared with `value` (`value` itself when nothing changed), so that a value with no secret in it (nearly every
 * audit record) costs a walk, not a copy.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { makeRedactor, redactShared } from "./redact.ts";
 * const redact = makeRedactor(["hunter2-token"]);
 * const record = { tool: "t", argv: ["--key", "hunter2-token"], env: { HOME: "/home/me" } };
 * assert.equal(redactShared(record.env, redact), record.env);
 * const shown = redactShared(record, redact);
 * assert.deepEqual(shown.argv, ["--key", "[REDACTED]"]);
 * assert.equal(shown.env, record.env);
 * assert.deepEqual(record.argv, ["--key", "hunter2-token"]); // the original is left alone
 * ```
 */
export function redactShared<T>(value: T, redact: Redactor): T {
  if (typeof value === "string") return redact(value) as T;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = redactShared(value[i], redact);
      if (item !== value[i]) (copy ??= [...value])[i] = item;
    }
    return (copy ?? value) as T;
  }
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value);
    let changed = false;
    const redacted = entries.map(([key, item]) => {
      const shownKey = redact(key);
      const shownItem = redactShared(item, redact);
      if (shownKey !== key || shownItem !== item) changed = true;
      return [shownKey, shownItem];
    });
    return (changed ? Object.fromEntries(redacted) : value) as T;
  }
  return value;
}

/**
 * The warning an envelope carries once a secret value was taken out of it: the model (or the MCP client) learns
 * why a value reads `[REDACTED]`, and that asking again will not show it.
 */
export const SECRET_REMOVED_WARNING = "a value of a secret variable was removed from the result";

/**
 * Takes every secret value out of an envelope before it goes to a model or an MCP client: each string it carries
 * (the result at any depth, keys included, the message, the metadata) goes through `scrub`, and when anything was
 * removed the envelope says so with {@linkcode SECRET_REMOVED_WARNING} (once). `scrub` is a redactor of the secret
 * values alone: the patterns of `TOOLGATE_REDACT` are for what toolgate writes down, not for tool results. The
 * same envelope comes back when nothing was removed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { makeRedactor, SECRET_REMOVED_WARNING, scrubEnvelope } from "./redact.ts";
 * import { success } from "../contract.ts";
 * const scrub = makeRedactor(["hunter2-token"]);
 * assert.deepEqual(scrubEnvelope(success({ env: "TOKEN=hunter2-token" }), scrub), {
 *   ok: true,
 *   result: { env: "TOKEN=[REDACTED]" },
 *   warnings: [SECRET_REMOVED_WARNING],
 * });
 * ```
 */
export function scrubEnvelope<E extends Envelope>(envelope: E, scrub: Redactor): E {
  let removed = false;
  const scrubbed = mapEnvelopeStrings(envelope, (text) => {
    const out = scrub(text);
    if (out !== text) removed = true;
    return out;
  });
  if (!removed) return envelope;
  const warned = Array.isArray(scrubbed.warnings) && scrubbed.warnings.includes(SECRET_REMOVED_WARNING);
  return warned ? scrubbed : withWarnings(scrubbed, [SECRET_REMOVED_WARNING]);
}
