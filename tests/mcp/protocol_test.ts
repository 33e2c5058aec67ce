/** toolgate/1 tools over MCP: log messages honour logging/setLevel; a flooding tool is cut off, the server lives. */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/types"
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connectStdio, envelopeOf } from "./helpers.ts";
import { scratch } from "../executor_helpers.ts";
import { FIXTURES } from "../support.ts";

const MANIFEST = join(FIXTURES, "mcp", "protocol.json");

Deno.test("a tool's log messages reach the client at or above the level it set", async () => {
  await using dir = await scratch();
  await using served = await connectStdio([], dir.path, MANIFEST);
  const levels: string[] = [];
  served.client.setNotificationHandler(LoggingMessageNotificationSchema, (note) => {
    levels.push(`${note.params.logger}:${note.params.level}`);
  });
  await served.client.setLoggingLevel("info");
  const result = await served.client.callTool({ name: "levels", arguments: {} });
  assert.deepEqual(result.content, [{ type: "text", text: "logged" }]);
  assert.deepEqual(levels, ["levels:info", "levels:error"]);
});

Deno.test("a tool that floods its channel is cut off with a clear failure, and the server goes on", async () => {
  await using dir = await scratch();
  await using served = await connectStdio([], dir.path, MANIFEST);
  await served.client.setLoggingLevel("emergency");
  const result = await served.client.callTool({ name: "flood", arguments: {} });
  const envelope = envelopeOf(result);
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.protocol_error, true);
  assert.match(String(envelope.message), /more than 1000 log and progress messages/);
  const again = await served.client.callTool({ name: "levels", arguments: {} });
  assert.deepEqual(again.content, [{ type: "text", text: "logged" }]);
  assert.deepEqual(served.protocolErrors, []);
});
