/**
 * Redaction for anything toolgate writes down: secret values replaced as literals (longest first, so that no
 * fragment of a longer secret survives a shorter one's or a pattern's replacement), then the patterns of
 * `TOOLGATE_REDACT`.
 *
 * @module
 */

/** What replaces a secret. */
export const REDACTED = "[REDACTED]";

/** Variable names whose values are always treated as secrets. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD/i;
/** Variables whose values are always secrets, whatever else applies. */
const ALWAYS_SECRET = ["OAI_API_KEY", "OPENAI_API_KEY"];
/** Shorter values cannot leave a fragment worth hiding, and replacing them would garble everything. */
const MIN_SECRET_LENGTH = 4;

/** Replaces secrets in text. */
export interface Redactor {
  (text: string): string;
}

/**
 * Parses `TOOLGATE_REDACT`: regular expressions separated by commas (write a comma inside a pattern as `\x2c`).
 * Throws a `SyntaxError` naming the pattern that does not compile.
 */
export function parseRedactPatterns(spec: string | undefined): RegExp[] {
  if (!spec) return [];
  return spec.split(",").map((p) => p.trim()).filter((p) => p !== "").map((pattern) => {
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
 * The secret values of an environment: those of `passedNames` (variables handed to tools), of `OAI_API_KEY` and
 * `OPENAI_API_KEY`, and of every variable whose name contains KEY, TOKEN, SECRET or PASSWORD.
 */
export function secretValues(env: Readonly<Record<string, string>>, passedNames: Iterable<string>): string[] {
  const names = new Set([...passedNames, ...ALWAYS_SECRET]);
  for (const name of Object.keys(env)) if (SECRET_NAME.test(name)) names.add(name);
  const values = new Set<string>();
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value.length >= MIN_SECRET_LENGTH) values.add(value);
  }
  return [...values].sort((a, b) => b.length - a.length);
}

/**
 * Builds a redactor from literal secrets and patterns.
 *
 * @example
 * ```ts
 * import { makeRedactor } from "./redact.ts";
 * const redact = makeRedactor(["s3cr3t-value"], [/value-\d+/g]);
 * redact("token=s3cr3t-value id=value-42"); // "token=[REDACTED] id=[REDACTED]"
 * ```
 */
export function makeRedactor(secrets: readonly string[], patterns: readonly RegExp[] = []): Redactor {
  const literals = [...secrets].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
  return (text: string) => {
    let out = maskLiterals(text, literals);
    // A pattern that matches the empty string would otherwise put a marker between every two characters.
    for (const pattern of patterns) out = out.replace(pattern, (match) => match === "" ? "" : REDACTED);
    return out;
  };
}

/**
 * Replaces every run of characters covered by any occurrence of any literal with one marker. Replacing one
 * literal after another would leave the tail of a secret that overlaps another (or itself) in clear.
 */
function maskLiterals(text: string, literals: readonly string[]): string {
  let covered: Uint8Array | undefined;
  for (const secret of literals) {
    for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) {
      covered ??= new Uint8Array(text.length);
      covered.fill(1, at, at + secret.length);
    }
  }
  if (!covered) return text;
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
