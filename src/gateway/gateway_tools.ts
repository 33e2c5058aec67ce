/**
 * Upstream MCP tools as toolgate's tools: a server's tool as a tool spec named `mcp__SERVER__TOOL`, and the
 * server's answer (or its silence) as an envelope, content blocks and structured content kept.
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { CallToolResult, Tool } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { type ContentBlock, type Envelope, failure, isRecord, success, withContent } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { stoppedByUser, userStopped } from "../process/stop.ts";
import { gatewayName, type ServerSpec } from "../manifest/server_spec.ts";
import { oneLine, UpstreamError } from "./upstream.ts";

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Is the tool exposed by the server's `allow` and `deny` lists? */
export function exposed(server: ServerSpec, tool: string): boolean {
  if (server.deny.includes(tool)) return false;
  return server.allow === undefined || server.allow.includes(tool);
}

/**
 * A server's tool as a spec the executor, the policy and every export read: its schemas as the server gave them,
 * read-only only when the user's manifest says so (the server's annotations are its claims, not the user's), the
 * server's profile, its secrets (masked in every answer). `undefined` when its name cannot be a tool's.
 *
 * @example Not run as a doc test: a fragment of the gateway, with a server's entry in scope.
 * ```ts ignore
 * upstreamSpec(server, { name: "read_file", inputSchema: { type: "object" } }, 0)?.name; // "mcp__fs__read_file"
 * ```
 */
export function upstreamSpec(server: ServerSpec, tool: Tool, index: number): ToolSpec | undefined {
  const name = gatewayName(server.name, tool.name);
  if (!TOOL_NAME.test(name)) return undefined;
  const program = server.command ?? server.url ?? "";
  return Object.freeze({
    index,
    name,
    description: tool.description,
    schema: isRecord(tool.inputSchema) ? Object.freeze({ ...tool.inputSchema }) : undefined,
    outputSchema: isRecord(tool.outputSchema) ? Object.freeze({ ...tool.outputSchema }) : undefined,
    command: Object.freeze([program, ...server.args]),
    program,
    args: server.args,
    timeoutSec: server.timeoutSec,
    envPassthrough: [],
    secrets: server.secrets,
    credentials: server.credentials,
    asks: [],
    readOnly: server.readOnly.includes(tool.name),
    concurrent: false,
    alwaysLoad: false,
    profile: server.profile,
    present: true,
    upstream: Object.freeze({ server: server.name, tool: tool.name }),
  });
}

/** The text of a result's text blocks, for a failure's message. */
function textOf(content: readonly unknown[]): string {
  return content.flatMap((block) =>
    isRecord(block) && block.type === "text" && typeof block.text === "string" ? [block.text] : []
  ).join("\n");
}

/**
 * The envelope of an upstream answer: `isError` as an `execution_error` (its text the message, its content blocks
 * kept), a success with the server's content blocks and its `structuredContent` as the result (`null` when it sent
 * none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resultEnvelope } from "./gateway_tools.ts";
 * assert.deepEqual(resultEnvelope("mcp__fs__read", { content: [{ type: "text", text: "hi" }] }), { ok: true, result: null, content: [{ type: "text", text: "hi" }], tool: "mcp__fs__read" });
 * ```
 */
export function resultEnvelope(tool: string, result: CallToolResult): Envelope {
  const content = Array.isArray(result.content) ? result.content : [];
  if (result.isError === true) {
    const text = textOf(content).trim();
    // The blocks stay beside the envelope: `serve` hands them on as the server sent them.
    return withContent(
      failure("execution_error", text === "" ? "The MCP server's tool reported an error." : text, {
        tool,
        retryable: false,
      }),
      content as unknown as ContentBlock[],
    );
  }
  const structured = isRecord(result.structuredContent) ? result.structuredContent : null;
  return withContent(success(structured, { tool }), content as unknown as ContentBlock[]);
}

/**
 * The envelope of a call that got no answer: the server could not be reached or died (`unavailable`, retryable:
 * it is started again at the next call), the call timed out, or it was cancelled (`notifications/cancelled` went
 * upstream).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorEnvelope } from "./gateway_tools.ts";
 * const answer = errorEnvelope("mcp__fs__read", "fs", new Error("Connection closed"), undefined, 30_000);
 * assert.equal(answer.ok, false); // kind "unavailable", retryable
 * ```
 */
export function errorEnvelope(
  tool: string,
  server: string,
  error: unknown,
  signal: AbortSignal | undefined,
  timeoutMs: number,
): Envelope {
  if (signal?.aborted) {
    return stoppedByUser(signal)
      ? userStopped(tool, {}, "The user stopped the call; the MCP server was told to cancel it.")
      : failure("execution_error", "The call was cancelled; the MCP server was told to cancel it.", {
        tool,
        metadata: { cancelled: true },
      });
  }
  const code = isRecord(error) && typeof error.code === "number" ? error.code : undefined;
  if (code === -32001) {
    return failure(
      "timeout",
      `The MCP server ${JSON.stringify(server)} did not answer within ${timeoutMs} ms.`,
      {
        tool,
        metadata: { timeout_ms: timeoutMs },
      },
    );
  }
  if (error instanceof UpstreamError) {
    return failure(
      "unavailable",
      `The MCP server ${JSON.stringify(server)} is not available: ${error.message}.`,
      {
        tool,
        retryable: error.retryable,
      },
    );
  }
  if (code === -32000 || /closed|ended|not connected/i.test(oneLine(error))) {
    return failure(
      "unavailable",
      `The MCP server ${JSON.stringify(server)} ended during the call; it is started again at the next call.`,
      { tool, retryable: true },
    );
  }
  // The server answered with a protocol error (an unknown tool, bad arguments it checked itself).
  return failure("execution_error", `The MCP server ${JSON.stringify(server)} answered: ${oneLine(error)}`, {
    tool,
    retryable: false,
  });
}
