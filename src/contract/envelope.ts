/**
 * The envelope's constructors: the only way an envelope is built (success, text, failure), amended (with a tool,
 * warnings, content, retryable, a credential) or rewritten string by string. Re-exported by `src/contract.ts`.
 *
 * @module
 */
import {
  type ContentBlock,
  type Denial,
  type Envelope,
  FAILURE_KINDS,
  type FailureEnvelope,
  type FailureKind,
  type SuccessEnvelope,
} from "./envelope_types.ts";
import { isRecord } from "./is_record.ts";

/**
 * Options shared by the success constructors.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { success } from "../contract.ts";
 * assert.equal(success([1, 2], { tool: "list", warnings: [] }).warnings, undefined); // an empty list is left out
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
 * import assert from "node:assert/strict";
 * import { failure } from "../contract.ts";
 * assert.deepEqual(failure("timeout", "slow", { retryable: false, metadata: { timeout_sec: 5, ok: true } }), { timeout_sec: 5, ok: false, kind: "timeout", message: "slow", retryable: false }); // metadata never wins
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
  "denials",
]);

/**
 * Builds a success envelope.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { success } from "../contract.ts";
 * assert.deepEqual(success({ iso8601: "2026-01-01T00:00:00Z" }, { tool: "get_time" }), { ok: true, result: { iso8601: "2026-01-01T00:00:00Z" }, tool: "get_time" });
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
 * import assert from "node:assert/strict";
 * import { text } from "../contract.ts";
 * assert.deepEqual(text("Found 3 matches", { tool: "search" }).result, { text: "Found 3 matches" });
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
 * import assert from "node:assert/strict";
 * import { failure } from "../contract.ts";
 * const message = "Missing required argument `timezone`.";
 * assert.deepEqual(failure("invalid_args", message, { field: "timezone", expected: "string" }), {
 *   ok: false,
 *   kind: "invalid_args",
 *   message,
 *   retryable: true,
 *   field: "timezone",
 *   expected: "string",
 * });
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
 * import assert from "node:assert/strict";
 * import { success, withTool } from "../contract.ts";
 * assert.equal(withTool(success(1), "count").tool, "count");
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
 * import assert from "node:assert/strict";
 * import { success, withWarnings } from "../contract.ts";
 * assert.deepEqual(withWarnings(success(1), ["slow disk"]).warnings, ["slow disk"]);
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
 * import assert from "node:assert/strict";
 * import { failure, success, withContent } from "../contract.ts";
 * assert.deepEqual(withContent(success(null), [{ type: "text", text: "hi" }]).content, [{ type: "text", text: "hi" }]);
 * assert.equal(withContent(failure("execution_error", "it broke"), [{ type: "text", text: "it broke" }]).ok, false);
 * ```
 */
export function withContent<E extends Envelope>(envelope: E, content: readonly ContentBlock[]): E {
  if (content.length === 0) return envelope;
  const previous = Array.isArray(envelope.content) ? envelope.content as ContentBlock[] : [];
  return { ...envelope, content: [...previous, ...content] };
}

/**
 * Returns the envelope with `denials` added after any it has, each once (same kind, target and rule); none: as it
 * is. The only way a denial gets into an envelope: a tool's own `denials` never reach the model (the run's envelope
 * drops them, see {@linkcode withoutDenials}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { failure, success, withDenials } from "../contract.ts";
 * const host = { kind: "host" as const, target: "evil.example:443", rule: "profile net" };
 * assert.deepEqual(withDenials(success(1), [host, host]).denials, [host]);
 * assert.equal(withDenials(failure("execution_error", "exit status 1"), [host]).ok, false);
 * assert.equal(withDenials(success(1), []).denials, undefined);
 * ```
 */
export function withDenials<E extends Envelope>(envelope: E, denials: readonly Denial[]): E {
  if (denials.length === 0) return envelope;
  const all = [...(Array.isArray(envelope.denials) ? envelope.denials as Denial[] : [])];
  for (const denial of denials) {
    const seen = all.some((d) =>
      d.kind === denial.kind && d.target === denial.target && d.rule === denial.rule
    );
    if (!seen) all.push({ ...denial });
  }
  return all.length === (envelope.denials?.length ?? 0) ? envelope : { ...envelope, denials: all };
}

/**
 * Returns the envelope without `denials`: for an envelope a tool wrote itself, since only toolgate decides a denial.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { success, withoutDenials } from "../contract.ts";
 * const forged = { ...success(1), denials: [{ kind: "host" as const, target: "x:1", rule: "profile net" }] };
 * assert.equal("denials" in withoutDenials(forged), false);
 * ```
 */
export function withoutDenials<E extends Envelope>(envelope: E): E {
  if (!("denials" in envelope)) return envelope;
  const { denials: _dropped, ...rest } = envelope;
  return rest as E;
}

/**
 * Returns the failure with `retryable` set: for a caller that knows better than the kind's default or the tool
 * (a call of a tool with side effects that started is never safe to run again).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { failure, withRetryable } from "../contract.ts";
 * assert.equal(withRetryable(failure("timeout", "slow"), false).retryable, false);
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
 * import assert from "node:assert/strict";
 * import { failure, withCredential } from "../contract.ts";
 * assert.equal(withCredential(failure("unavailable", "no token"), "GITHUB_TOKEN").credential, "GITHUB_TOKEN");
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
 * import assert from "node:assert/strict";
 * import { mapEnvelopeStrings, success } from "../contract.ts";
 * assert.deepEqual(mapEnvelopeStrings(success({ said: "hello" }, { tool: "t" }), (text) => text.toUpperCase()), { ok: true, result: { SAID: "HELLO" }, tool: "t" });
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
