/**
 * An envelope as text: written as one line with its keys in order, read back from JSON (and from the legacy
 * `{error}` and `[REJECTED]` answers), and asked whether it failed. Re-exported by `src/contract.ts`.
 *
 * @module
 */
import {
  type Denial,
  DENIAL_KINDS,
  type DenialKind,
  type Envelope,
  isFailureKind,
} from "./envelope_types.ts";
import { failure, success, withDenials, withWarnings } from "./envelope.ts";
import { isRecord } from "./is_record.ts";

/**
 * Writes an envelope as one line: `ok` first, then the other keys sorted; empty `warnings` left out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serialize, success } from "../contract.ts";
 * assert.equal(serialize(success({ b: 1, a: 2 }, { tool: "t" })), '{"ok":true,"result":{"b":1,"a":2},"tool":"t"}');
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
 * import assert from "node:assert/strict";
 * import { asEnvelope } from "../contract.ts";
 * assert.equal(asEnvelope({ ok: false, kind: "timeout", message: "slow" })?.ok, false);
 * assert.equal(asEnvelope({ hello: 1 }), undefined);
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
    return withDenials(base, denialsIn(value.denials));
  }
  if (!isFailureKind(value.kind) || typeof value.message !== "string") return undefined;
  const { ok: _ok, kind, message, retryable, field, expected, tool, credential, warnings, ...metadata } =
    value;
  // A failure's warnings (why it is not retryable, say) are read back too: they are the model's to see.
  return withDenials(
    withWarnings(
      failure(kind, message, {
        retryable: typeof retryable === "boolean" ? retryable : undefined,
        field: typeof field === "string" ? field : undefined,
        expected: typeof expected === "string" ? expected : undefined,
        tool: typeof tool === "string" ? tool : undefined,
        credential: typeof credential === "string" ? credential : undefined,
        metadata,
      }),
      Array.isArray(warnings) ? warnings.filter((w): w is string => typeof w === "string") : [],
    ),
    denialsIn(value.denials),
  );
}

/** The well-formed denials of an envelope read back (a pool worker's, a serve's); anything else is dropped. */
function denialsIn(value: unknown): Denial[] {
  if (!Array.isArray(value)) return [];
  return value.filter((d): d is Denial =>
    isRecord(d) && DENIAL_KINDS.includes(d.kind as DenialKind) && typeof d.target === "string" &&
    typeof d.rule === "string" && (d.inferred === undefined || typeof d.inferred === "boolean")
  ).map((d) => ({
    kind: d.kind,
    target: d.target,
    rule: d.rule,
    ...(d.inferred === undefined ? {} : { inferred: d.inferred }),
  }));
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
 * import assert from "node:assert/strict";
 * import { isError } from "../contract.ts";
 * assert.ok(isError('{"ok":false,"kind":"timeout","message":"slow","retryable":true}'));
 * assert.ok(isError("[TIMEOUT] after 5s"));
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
 * import assert from "node:assert/strict";
 * import { isSuccess } from "../contract.ts";
 * assert.ok(isSuccess('{"ok":true,"result":1}'));
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
 * import assert from "node:assert/strict";
 * import { successPayload } from "../contract.ts";
 * assert.deepEqual(successPayload('{"ok":true,"result":{"a":1}}'), { a: 1 });
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
 * import assert from "node:assert/strict";
 * import { failureMessage } from "../contract.ts";
 * assert.equal(failureMessage('{"ok":false,"kind":"timeout","message":"slow","retryable":true}'), "slow");
 * assert.equal(failureMessage("[REJECTED] policy"), "[REJECTED] policy");
 * ```
 */
export function failureMessage(resultText: string): string {
  const value = parseJson(resultText.trim());
  const envelope = asEnvelope(value);
  if (envelope && !envelope.ok) return envelope.message;
  if (isLegacyError(value)) return value.error;
  return resultText;
}
