/**
 * Envelopes as MCP tool results (a success's result checked against the tool's declared `outputSchema` first, by
 * `run/output_check.ts`), mapped the way the MCP specification recommends (the structured result as `structuredContent`, its JSON as the
 * text block); a failure as `isError` with its message as text and the envelope as `structuredContent`.
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { CallToolResult } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { type Envelope, type FailureEnvelope, isRecord, serialize } from "../contract.ts";

/**
 * What `structuredContent` holds for a success: the result itself when it is a JSON object (MCP requires an
 * object), or `{"result": VALUE}` around any other value (a string, a number, an array, `null`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { structuredResult } from "./results.ts";
 * assert.deepEqual(structuredResult({ a: 1 }), { a: 1 });
 * assert.deepEqual(structuredResult([1, 2]), { result: [1, 2] });
 * ```
 */
export function structuredResult(result: unknown): Record<string, unknown> {
  return isRecord(result) ? result : { result: result === undefined ? null : result };
}

/**
 * An envelope as an MCP tool result. A success: `structuredContent` is {@linkcode structuredResult}, the first
 * text block its JSON, and each of the envelope's warnings a text block of its own after it (`warning: ...`). A
 * failure: `isError: true`, the message as the text block (or the envelope's own `content` blocks, an MCP server's,
 * after the message when none is text), the envelope without them (`ok` first, keys sorted) as `structuredContent`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toCallResult } from "./results.ts";
 * import { failure, success } from "../contract.ts";
 * assert.deepEqual(toCallResult(success({ a: 1 }, { tool: "t" })), { content: [{ type: "text", text: '{"a":1}' }], structuredContent: { a: 1 } });
 * assert.deepEqual(toCallResult(failure("timeout", "slow", { tool: "t" })).content, [{ type: "text", text: "slow" }]);
 * ```
 */
export function toCallResult(envelope: Envelope): CallToolResult {
  if (!envelope.ok) {
    // An MCP server's own blocks (a gateway tool's isError answer) go on as it sent them, the envelope beside them
    // without a copy; the message leads when none of them is text.
    const { content, ...bare } = envelope;
    const blocks = (content ?? []) as CallToolResult["content"];
    const message = { type: "text" as const, text: envelope.message };
    return {
      content: blocks.some((block) => block.type === "text") ? blocks : [message, ...blocks],
      structuredContent: JSON.parse(serialize(bare as FailureEnvelope)),
      isError: true,
    };
  }
  const warnings = (envelope.warnings ?? []).map((warning) => ({
    type: "text" as const,
    text: `warning: ${warning}`,
  }));
  if (envelope.content !== undefined) {
    // A toolgate/1 tool's own blocks; its result, when it sent one, is the structured content beside them.
    const blocks = [...envelope.content, ...warnings] as CallToolResult["content"];
    return envelope.result === null
      ? { content: blocks }
      : { content: blocks, structuredContent: structuredResult(envelope.result) };
  }
  const structured = structuredResult(envelope.result);
  return {
    content: [{ type: "text", text: JSON.stringify(structured) }, ...warnings],
    structuredContent: structured,
  };
}
