/**
 * The content of a `role: "tool"` message: the executor's envelope serialized, cut to fit the model's budget so
 * that it stays one valid JSON envelope. An oversized success becomes a `truncated_output` result holding the head
 * and tail of the original; a failure stays a failure with its message cut.
 *
 * @module
 */
import {
  type ContentBlock,
  type Envelope,
  failure,
  type FailureEnvelope,
  isRecord,
  MODEL_TEXT_LIMIT,
  serialize,
  success,
  type SuccessEnvelope,
  truncateForModel,
  withWarnings,
} from "../contract.ts";

/**
 * The envelope as a chat model's tool message can take it: text blocks as they are, and in place of the bytes of
 * an image, an audio clip or a binary resource (base64 that a chat endpoint does not read in a tool result, and
 * that would eat the model's budget as text) a note naming what was left out; or, for a block `attached` places
 * in the user message that follows (see `tool_media.ts`), a note saying where it went.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { success, withContent } from "../contract.ts";
 * import { forModel } from "./tool_message.ts";
 * const image = { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" } as const;
 * const envelope = withContent(success(null, { tool: "draw" }), [image]);
 * assert.deepEqual(forModel(envelope).content, [{
 *   type: "image",
 *   mimeType: "image/png",
 *   left_out: "an image/png image (8 bytes) was not sent: the chat endpoint takes only text in a tool result",
 * }]);
 * ```
 */
export function forModel(
  envelope: Envelope,
  attached?: (block: ContentBlock, index: number) => string | undefined,
): Envelope {
  if (!Array.isArray(envelope.content)) return envelope;
  let changed = false;
  const content = envelope.content.map((block, index) => {
    const binary = block.type === "image" || block.type === "audio"
      ? { kind: block.type, mimeType: block.mimeType, data: block.data }
      : block.type === "resource" && isRecord(block.resource) && typeof block.resource.blob === "string"
      ? {
        kind: "resource",
        mimeType: block.resource.mimeType,
        data: block.resource.blob,
        uri: block.resource.uri,
      }
      : undefined;
    if (binary === undefined || typeof binary.data !== "string") return block;
    changed = true;
    const bytes = Math.floor(binary.data.replace(/=+$/, "").length * 3 / 4);
    const what = `${binary.mimeType === undefined ? "a" : `an ${String(binary.mimeType)}`} ${
      binary.kind === "resource" ? `resource ${String(binary.uri)}` : binary.kind
    } (${bytes} bytes)`;
    const where = attached?.(block, index);
    return {
      type: block.type,
      ...(binary.mimeType === undefined ? {} : { mimeType: binary.mimeType }),
      ...(where === undefined
        ? { left_out: `${what} was not sent: the chat endpoint takes only text in a tool result` }
        : { attached: `${what}: ${where}` }),
    };
  });
  return changed ? { ...envelope, content } : envelope;
}

/** Shrinking passes before giving up on an exact fit (JSON escaping makes the size of a cut hard to predict). */
const FIT_PASSES = 24;

/**
 * Serializes an envelope for the model in at most `maxChars` characters (when anything can fit at all).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { success } from "../contract.ts";
 * import { toolMessageContent } from "./tool_message.ts";
 * const content = toolMessageContent(success("x".repeat(100_000), { tool: "big" }), 1000);
 * assert.equal(JSON.parse(content).result.kind, "truncated_output");
 * assert.ok(content.length <= 1000);
 * ```
 */
export function toolMessageContent(envelope: Envelope, maxChars: number = MODEL_TEXT_LIMIT): string {
  const whole = serialize(envelope);
  if (whole.length <= maxChars) return whole;
  return envelope.ok ? fitSuccess(envelope, maxChars) : fitFailure(envelope, maxChars);
}

/** The text a success's result is cut from: a string as is, a `{text}` result's text, anything else as JSON. */
function resultText(result: unknown): string {
  if (typeof result === "string") return result;
  if (isRecord(result) && typeof result.text === "string" && Object.keys(result).length === 1) {
    return result.text;
  }
  return JSON.stringify(result) ?? "null";
}

function fitSuccess(envelope: SuccessEnvelope, maxChars: number): string {
  const text = resultText(envelope.result);
  const note =
    `the result had ${text.length} characters, more than the ${maxChars} a tool message may hold; ` +
    `result.content keeps its head and tail`;
  const build = (budget: number, keepWarnings: boolean) =>
    success({
      kind: "truncated_output",
      truncated: true,
      original_chars: text.length,
      content: truncateForModel(text, budget),
    }, { tool: envelope.tool, warnings: [...(keepWarnings ? envelope.warnings ?? [] : []), note] });
  const keepWarnings = serialize(build(0, true)).length <= maxChars;
  return shrink((budget) => serialize(build(budget, keepWarnings)), maxChars);
}

function fitFailure(envelope: FailureEnvelope, maxChars: number): string {
  const { ok: _ok, kind, message, retryable, field, expected, tool, warnings, credential, ...metadata } =
    envelope;
  const note = `the failure had ${message.length} characters of message, more than fit in a tool message; ` +
    `its head and tail are kept`;
  const earlier = Array.isArray(warnings) ? warnings.filter((w): w is string => typeof w === "string") : [];
  const build = (budget: number, keepMetadata: boolean) =>
    withWarnings(
      failure(kind, truncateForModel(message, budget), {
        retryable,
        field,
        expected: expected === undefined ? undefined : truncateForModel(expected, 200),
        tool,
        credential,
        metadata: { ...(keepMetadata ? metadata : {}), truncated: true, original_chars: message.length },
      }),
      [...(keepMetadata ? earlier : []), note],
    );
  // Metadata too big to keep beside an empty message is dropped: the kind and the message matter most.
  const keepMetadata = serialize(build(0, true)).length <= maxChars;
  return shrink((budget) => serialize(build(budget, keepMetadata)), maxChars);
}

/** The largest cut that fits: start from the room left, and take away each pass's overshoot. */
function shrink(render: (budget: number) => string, maxChars: number): string {
  const overhead = render(0).length;
  let budget = Math.max(0, maxChars - overhead);
  let out = render(budget);
  for (let pass = 0; pass < FIT_PASSES && out.length > maxChars && budget > 0; pass++) {
    const over = out.length - maxChars;
    budget = Math.max(0, budget - Math.max(over, pass >= FIT_PASSES / 2 ? Math.ceil(budget / 2) : 0));
    out = render(budget);
  }
  return out;
}
