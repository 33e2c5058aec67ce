/**
 * The tool envelope contract: the one shape every tool result takes, success or failure, and the only module
 * that builds, writes, reads or truncates envelopes.
 *
 * @module
 */

/**
 * The failure kinds, each with the default `retryable` a model should assume.
 *
 * @example
 * ```ts
 * import { FAILURE_KINDS } from "./contract.ts";
 * FAILURE_KINDS.timeout; // true: a timeout may pass on a retry
 * FAILURE_KINDS.rejected; // false
 * ```
 */
export const FAILURE_KINDS = {
  invalid_args: true,
  rejected: false,
  user_denied: false,
  timeout: true,
  execution_error: true,
  not_found: false,
  unavailable: true,
  tool_not_found: false,
} as const;

/**
 * The JSON Schema of a failure envelope (draft-07): `ok: false`, a known `kind`, a `message` and `retryable`,
 * with `field`, `expected`, `tool` and `credential` when present, and any metadata besides. The MCP server admits it beside a
 * tool's own `outputSchema`, since a failure's `structuredContent` is the envelope.
 *
 * @example
 * ```ts
 * import { FAILURE_ENVELOPE_SCHEMA } from "./contract.ts";
 * FAILURE_ENVELOPE_SCHEMA.required; // ["ok", "kind", "message", "retryable"]
 * ```
 */
export const FAILURE_ENVELOPE_SCHEMA: {
  readonly type: "object";
  readonly properties: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly required: readonly string[];
} = Object.freeze({
  type: "object",
  properties: Object.freeze({
    ok: Object.freeze({ const: false }),
    kind: Object.freeze({ type: "string", enum: Object.freeze(Object.keys(FAILURE_KINDS)) }),
    message: Object.freeze({ type: "string" }),
    retryable: Object.freeze({ type: "boolean" }),
    field: Object.freeze({ type: "string" }),
    expected: Object.freeze({ type: "string" }),
    tool: Object.freeze({ type: "string" }),
    credential: Object.freeze({ type: "string" }),
  }),
  required: Object.freeze(["ok", "kind", "message", "retryable"]),
});

/**
 * A failure classification the agent loop routes on.
 *
 * @example
 * ```ts
 * import type { FailureKind } from "./contract.ts";
 * const kind: FailureKind = "not_found";
 * ```
 */
export type FailureKind = keyof typeof FAILURE_KINDS;

/**
 * A JSON value as it crosses a process boundary.
 *
 * @example
 * ```ts
 * import type { JsonValue } from "./contract.ts";
 * const value: JsonValue = { path: "a.txt", lines: [1, 2], binary: false };
 * ```
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * The success shape: `ok: true` and the tool's payload.
 *
 * @example
 * ```ts
 * import { success, type SuccessEnvelope } from "./contract.ts";
 * const envelope: SuccessEnvelope = success({ size: 123 }, { tool: "fs_stat", warnings: ["slow disk"] });
 * ```
 */
export interface SuccessEnvelope {
  /** Always `true`. */
  readonly ok: true;
  /** The tool's payload: any JSON value (`null` when the tool gave none). */
  readonly result: unknown;
  /** The tool's name. */
  readonly tool?: string;
  /** Non-fatal notes the model should read. */
  readonly warnings?: readonly string[];
  /** MCP content blocks the tool answered (toolgate/1 tools), in their order, beside or instead of `result`. */
  readonly content?: readonly ContentBlock[];
}

/**
 * One MCP content block as a tool answers it: `text`, `image` or `audio` (base64 `data` and a `mimeType`),
 * `resource` (an embedded resource) or `resource_link`, checked by `tool_protocol.ts` before it gets here.
 *
 * @example
 * ```ts
 * import type { ContentBlock } from "./contract.ts";
 * const block: ContentBlock = { type: "text", text: "hello" };
 * ```
 */
export interface ContentBlock {
  /** The block's kind, as MCP names it. */
  readonly type: "text" | "image" | "audio" | "resource" | "resource_link";
  /** The kind's own fields (`text`; `data` and `mimeType`; `resource`; `uri` and `name`; `annotations`...). */
  readonly [field: string]: unknown;
}

/**
 * The failure shape: `ok: false`, a kind, a message and whether a retry might succeed, plus metadata.
 *
 * @example
 * ```ts
 * import { failure, type FailureEnvelope } from "./contract.ts";
 * const envelope: FailureEnvelope = failure("execution_error", "exit status 3", { metadata: { exit_code: 3 } });
 * envelope.exit_code; // 3
 * ```
 */
export interface FailureEnvelope {
  /** Always `false`. */
  readonly ok: false;
  /** The classification a caller routes on. */
  readonly kind: FailureKind;
  /** The explanation, for people and models alike. */
  readonly message: string;
  /** Whether a retry might succeed (defaulted by kind, see {@linkcode FAILURE_KINDS}). */
  readonly retryable: boolean;
  /** The offending argument, for `invalid_args`. */
  readonly field?: string;
  /** What the argument should look like. */
  readonly expected?: string;
  /** The tool's name. */
  readonly tool?: string;
  /**
   * The secret (by name, never by value) that is missing or was refused: the caller may ask the person for a new
   * one (`store_secret`) and retry.
   */
  readonly credential?: string;
  /** An MCP server's content blocks beside its `isError` answer (see {@linkcode withContent}). */
  readonly content?: readonly ContentBlock[];
  /** Extra facts about the failure: `exit_code`, `signal`, `cancelled`, `timeout_sec`, ... */
  readonly [metadata: string]: unknown;
}

/**
 * Either envelope; discriminate on `ok`.
 *
 * @example
 * ```ts
 * import type { Envelope } from "./contract.ts";
 * function describe(envelope: Envelope): string {
 *   return envelope.ok ? "done" : `${envelope.kind}: ${envelope.message}`;
 * }
 * ```
 */
export type Envelope = SuccessEnvelope | FailureEnvelope;

/**
 * Options shared by the success constructors.
 *
 * @example
 * ```ts
 * import { success } from "./contract.ts";
 * success([1, 2], { tool: "list", warnings: [] }).warnings; // undefined: an empty list is left out
 * ```
 */
export interface SuccessOptions {
  /** The tool's name. */
  tool?: string;
  /** Non-fatal notes for the model; an empty list is left out. */
  warnings?: readonly string[];
  /** Content blocks (toolgate/1 tools); an empty list is left out. */
  content?: readonly ContentBlock[];
}

/**
 * Options of {@linkcode failure}.
 *
 * @example
 * ```ts
 * import { failure } from "./contract.ts";
 * failure("timeout", "slow", { retryable: false, metadata: { timeout_sec: 5, ok: true } });
 * // { timeout_sec: 5, ok: false, kind: "timeout", message: "slow", retryable: false }: metadata never wins
 * ```
 */
export interface FailureOptions {
  /** The offending argument, for `invalid_args`. */
  field?: string;
  /** What the argument should look like. */
  expected?: string;
  /** The tool's name. */
  tool?: string;
  /** Overrides the kind's default. */
  retryable?: boolean;
  /** The secret, by name, that is missing or was refused. */
  credential?: string;
  /** Extra keys (exit_code, signal, truncated, ...); they never overwrite a contract key. */
  metadata?: Readonly<Record<string, unknown>>;
}

const CONTRACT_KEYS = new Set([
  "ok",
  "kind",
  "message",
  "retryable",
  "field",
  "expected",
  "tool",
  "result",
  "warnings",
  "credential",
  "content",
]);

/**
 * Builds a success envelope.
 *
 * @example
 * ```ts
 * import { success } from "./contract.ts";
 * success({ iso8601: "2026-01-01T00:00:00Z" }, { tool: "get_time" });
 * // { ok: true, result: { iso8601: "2026-01-01T00:00:00Z" }, tool: "get_time" }
 * ```
 */
export function success(result: unknown, options: SuccessOptions = {}): SuccessEnvelope {
  const envelope: {
    ok: true;
    result: unknown;
    tool?: string;
    warnings?: readonly string[];
    content?: readonly ContentBlock[];
  } = {
    ok: true,
    result: result === undefined ? null : result,
  };
  if (options.tool !== undefined) envelope.tool = options.tool;
  if (options.warnings && options.warnings.length > 0) envelope.warnings = [...options.warnings];
  if (options.content && options.content.length > 0) envelope.content = [...options.content];
  return envelope;
}

/**
 * Builds a success envelope whose result is `{text}`: for tools whose output is one human-readable string.
 *
 * @example
 * ```ts
 * import { text } from "./contract.ts";
 * text("Found 3 matches", { tool: "search" }).result; // { text: "Found 3 matches" }
 * ```
 */
export function text(body: string, options: SuccessOptions = {}): SuccessEnvelope {
  return success({ text: body }, options);
}

/**
 * Builds a failure envelope; `retryable` defaults by kind, and metadata never overwrites a contract key.
 *
 * @example
 * ```ts
 * import { failure } from "./contract.ts";
 * failure("invalid_args", "Missing required argument `timezone`.", { field: "timezone", expected: "string" });
 * // { ok: false, kind: "invalid_args", message: "...", retryable: true, field: "timezone", expected: "string" }
 * ```
 */
export function failure(kind: FailureKind, message: string, options: FailureOptions = {}): FailureEnvelope {
  const envelope: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options.metadata ?? {})) {
    if (!CONTRACT_KEYS.has(key) && value !== undefined) envelope[key] = value;
  }
  envelope.ok = false;
  envelope.kind = kind;
  envelope.message = message;
  envelope.retryable = options.retryable ?? FAILURE_KINDS[kind];
  if (options.field !== undefined) envelope.field = options.field;
  if (options.expected !== undefined) envelope.expected = options.expected;
  if (options.tool !== undefined) envelope.tool = options.tool;
  if (options.credential !== undefined) envelope.credential = options.credential;
  return envelope as unknown as FailureEnvelope;
}

/**
 * Returns the envelope with `tool` set, unless it already names one.
 *
 * @example
 * ```ts
 * import { success, withTool } from "./contract.ts";
 * withTool(success(1), "count").tool; // "count"
 * ```
 */
export function withTool<E extends Envelope>(envelope: E, tool: string): E {
  return envelope.tool === undefined ? { ...envelope, tool } : envelope;
}

/**
 * Returns the envelope with more warnings; on a failure the warnings ride along as metadata.
 *
 * @example
 * ```ts
 * import { success, withWarnings } from "./contract.ts";
 * withWarnings(success(1), ["slow disk"]).warnings; // ["slow disk"]
 * ```
 */
export function withWarnings<E extends Envelope>(envelope: E, warnings: readonly string[]): E {
  if (warnings.length === 0) return envelope;
  const previous = Array.isArray(envelope.warnings) ? envelope.warnings as string[] : [];
  return { ...envelope, warnings: [...previous, ...warnings] };
}

/**
 * Returns the envelope with `content` blocks added after any it has (toolgate/1 tools; an MCP server's answer,
 * an `isError` one included); none: as it is.
 *
 * @example
 * ```ts
 * import { failure, success, withContent } from "./contract.ts";
 * withContent(success(null), [{ type: "text", text: "hi" }]).content; // [{ type: "text", text: "hi" }]
 * withContent(failure("execution_error", "it broke"), [{ type: "text", text: "it broke" }]).ok; // false
 * ```
 */
export function withContent<E extends Envelope>(envelope: E, content: readonly ContentBlock[]): E {
  if (content.length === 0) return envelope;
  const previous = Array.isArray(envelope.content) ? envelope.content as ContentBlock[] : [];
  return { ...envelope, content: [...previous, ...content] };
}

/**
 * Returns the failure with `retryable` set: for a caller that knows better than the kind's default or the tool
 * (a call of a tool with side effects that started is never safe to run again).
 *
 * @example
 * ```ts
 * import { failure, withRetryable } from "./contract.ts";
 * withRetryable(failure("timeout", "slow"), false).retryable; // false
 * ```
 */
export function withRetryable<E extends FailureEnvelope>(envelope: E, retryable: boolean): E {
  return envelope.retryable === retryable ? envelope : { ...envelope, retryable };
}

/**
 * Returns the failure with `credential` set: the secret whose absence or refusal made the call fail.
 *
 * @example
 * ```ts
 * import { failure, withCredential } from "./contract.ts";
 * withCredential(failure("unavailable", "no token"), "GITHUB_TOKEN").credential; // "GITHUB_TOKEN"
 * ```
 */
export function withCredential<E extends FailureEnvelope>(envelope: E, credential: string): E {
  return envelope.credential === credential ? envelope : { ...envelope, credential };
}

/** The keys whose values the contract itself defines: never rewritten by {@linkcode mapEnvelopeStrings}. */
const STRUCTURAL_KEYS = new Set(["ok", "kind", "retryable", "tool"]);

function mapStrings(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === "string") return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (isRecord(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [map(key), mapStrings(item, map)]));
  }
  return value;
}

/**
 * Returns the envelope with `map` applied to every string it carries for its reader, keys included, at any depth:
 * a success's result and warnings, a failure's message, field, expected, warnings and metadata. `ok`, `kind`,
 * `retryable` and `tool` are the contract's own and stay as they are, so the envelope stays one.
 *
 * @example
 * ```ts
 * import { mapEnvelopeStrings, success } from "./contract.ts";
 * mapEnvelopeStrings(success({ said: "hello" }, { tool: "t" }), (text) => text.toUpperCase());
 * // { ok: true, result: { SAID: "HELLO" }, tool: "t" }
 * ```
 */
export function mapEnvelopeStrings<E extends Envelope>(envelope: E, map: (text: string) => string): E {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(envelope)) {
    if (STRUCTURAL_KEYS.has(key)) out[key] = value;
    else out[CONTRACT_KEYS.has(key) ? key : map(key)] = mapStrings(value, map);
  }
  return out as unknown as E;
}

/**
 * Is `value` a known failure kind?
 *
 * @example
 * ```ts
 * import { isFailureKind } from "./contract.ts";
 * isFailureKind("timeout"); // true
 * isFailureKind("oops"); // false
 * ```
 */
export function isFailureKind(value: unknown): value is FailureKind {
  return typeof value === "string" && Object.hasOwn(FAILURE_KINDS, value);
}

/**
 * Writes an envelope as one line: `ok` first, then the other keys sorted; empty `warnings` left out.
 *
 * @example
 * ```ts
 * import { serialize, success } from "./contract.ts";
 * serialize(success({ b: 1, a: 2 }, { tool: "t" })); // '{"ok":true,"result":{"b":1,"a":2},"tool":"t"}'
 * ```
 */
export function serialize(envelope: Envelope): string {
  const source: Record<string, unknown> = { ...envelope };
  // A success without a result still says so, in its sorted place.
  if (envelope.ok && source.result === undefined) source.result = null;
  const ordered: Record<string, unknown> = { ok: envelope.ok };
  for (const key of Object.keys(source).filter((k) => k !== "ok").sort()) {
    const value = source[key];
    if (value === undefined) continue;
    if (key === "warnings" && Array.isArray(value) && value.length === 0) continue;
    ordered[key] = value;
  }
  return JSON.stringify(ordered);
}

/**
 * Reads a JSON value as an envelope, or `undefined` when it is not one: a success needs `ok: true`; a failure
 * needs `ok: false`, a known `kind` and a string `message` (a missing `retryable` takes the kind's default).
 *
 * @example
 * ```ts
 * import { asEnvelope } from "./contract.ts";
 * asEnvelope({ ok: false, kind: "timeout", message: "slow" })?.ok; // false
 * asEnvelope({ hello: 1 }); // undefined
 * ```
 */
export function asEnvelope(value: unknown): Envelope | undefined {
  if (!isRecord(value) || typeof value.ok !== "boolean") return undefined;
  if (value.ok) {
    const warnings = Array.isArray(value.warnings) ? value.warnings.filter((w) => typeof w === "string") : [];
    const base = success(value.result, {
      tool: typeof value.tool === "string" ? value.tool : undefined,
      warnings,
    });
    return base;
  }
  if (!isFailureKind(value.kind) || typeof value.message !== "string") return undefined;
  const { ok: _ok, kind, message, retryable, field, expected, tool, credential, warnings, ...metadata } =
    value;
  // A failure's warnings (why it is not retryable, say) are read back too: they are the model's to see.
  return withWarnings(
    failure(kind, message, {
      retryable: typeof retryable === "boolean" ? retryable : undefined,
      field: typeof field === "string" ? field : undefined,
      expected: typeof expected === "string" ? expected : undefined,
      tool: typeof tool === "string" ? tool : undefined,
      credential: typeof credential === "string" ? credential : undefined,
      metadata,
    }),
    Array.isArray(warnings) ? warnings.filter((w): w is string => typeof w === "string") : [],
  );
}

const LEGACY_FAILURE_PREFIXES = ["[REJECTED]", "[TIMEOUT]"];

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isLegacyError(value: unknown): value is { error: string } {
  return isRecord(value) && typeof value.error === "string" && value.ok === undefined;
}

/**
 * True for a failure envelope, the legacy `[REJECTED]` / `[TIMEOUT]` prefixes, and the legacy
 * `{"error": ..., "retryable": ...}` shape.
 *
 * @example
 * ```ts
 * import { isError } from "./contract.ts";
 * isError('{"ok":false,"kind":"timeout","message":"slow","retryable":true}'); // true
 * isError("[TIMEOUT] after 5s"); // true
 * ```
 */
export function isError(resultText: string): boolean {
  const trimmed = resultText.trimStart();
  if (LEGACY_FAILURE_PREFIXES.some((prefix) => trimmed.startsWith(prefix))) return true;
  const value = parseJson(trimmed);
  return asEnvelope(value)?.ok === false || isLegacyError(value);
}

/**
 * True for a success envelope: the symmetric twin of {@linkcode isError}.
 *
 * @example
 * ```ts
 * import { isSuccess } from "./contract.ts";
 * isSuccess('{"ok":true,"result":1}'); // true
 * ```
 */
export function isSuccess(resultText: string): boolean {
  return asEnvelope(parseJson(resultText.trim()))?.ok === true;
}

/**
 * The `result` of a success envelope, or `undefined` for anything else.
 *
 * @example
 * ```ts
 * import { successPayload } from "./contract.ts";
 * successPayload('{"ok":true,"result":{"a":1}}'); // { a: 1 }
 * ```
 */
export function successPayload(resultText: string): unknown {
  const envelope = asEnvelope(parseJson(resultText.trim()));
  return envelope?.ok ? envelope.result : undefined;
}

/**
 * The `message` of a failure (or the `error` of the legacy shape); falls back to the input itself.
 *
 * @example
 * ```ts
 * import { failureMessage } from "./contract.ts";
 * failureMessage('{"ok":false,"kind":"timeout","message":"slow","retryable":true}'); // "slow"
 * failureMessage("[REJECTED] policy"); // "[REJECTED] policy"
 * ```
 */
export function failureMessage(resultText: string): string {
  const value = parseJson(resultText.trim());
  const envelope = asEnvelope(value);
  if (envelope && !envelope.ok) return envelope.message;
  if (isLegacyError(value)) return value.error;
  return resultText;
}

/**
 * The default size, in UTF-16 code units, of text handed to a model.
 *
 * @example
 * ```ts
 * import { MODEL_TEXT_LIMIT, truncateForModel } from "./contract.ts";
 * truncateForModel("x".repeat(60_000)).length <= MODEL_TEXT_LIMIT; // true
 * ```
 */
export const MODEL_TEXT_LIMIT = 50_000;

/**
 * The marker {@linkcode truncateForModel} puts where it cut.
 *
 * @example
 * ```ts
 * import { truncationMarker } from "./contract.ts";
 * truncationMarker(100, 1000); // "\n…[truncated 100 of 1000 characters]…\n"
 * ```
 */
export function truncationMarker(removed: number, total: number): string {
  return `\n…[truncated ${removed} of ${total} characters]…\n`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Cuts text to at most `maxChars` characters, keeping 40% from the head and 60% from the tail around one marker
 * that says how much was cut out of how much. Text at or under the limit comes back unchanged; a surrogate pair
 * is never split.
 *
 * @example
 * ```ts
 * import { truncateForModel } from "./contract.ts";
 * truncateForModel("short"); // "short"
 * truncateForModel("x".repeat(1000), 200).length <= 200; // true
 * ```
 */
export function truncateForModel(body: string, maxChars: number = MODEL_TEXT_LIMIT): string {
  if (body.length <= maxChars) return body;
  // The marker's length depends on the count it reports, so size it for the largest count it could report.
  const markerSize = truncationMarker(body.length, body.length).length;
  if (maxChars < markerSize) {
    // No room for the marker: a plain cut is the only way to stay within the limit.
    let end = Math.max(0, Math.floor(maxChars));
    if (end > 0 && isHighSurrogate(body.charCodeAt(end - 1))) end -= 1;
    return body.slice(0, end);
  }
  const budget = maxChars - markerSize;
  let headEnd = Math.floor(budget * 0.4);
  let tailStart = body.length - (budget - headEnd);
  if (headEnd > 0 && isHighSurrogate(body.charCodeAt(headEnd - 1))) headEnd -= 1;
  if (tailStart < body.length && tailStart > 0 && isHighSurrogate(body.charCodeAt(tailStart - 1))) {
    tailStart += 1;
  }
  return body.slice(0, headEnd) + truncationMarker(tailStart - headEnd, body.length) + body.slice(tailStart);
}

/**
 * A plain JSON object (not null, not an array).
 *
 * @example
 * ```ts
 * import { isRecord } from "./contract.ts";
 * isRecord({ a: 1 }); // true
 * isRecord([1]); // false
 * isRecord(null); // false
 * ```
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
