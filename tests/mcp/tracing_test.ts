// Traces under serve (issue 29): a tools/call continues the client's trace from `params._meta.traceparent` (MCP
// semantic conventions) in an `execute_tool {tool}` server span with `mcp.method.name` and `mcp.session.id`; the
// wait for the client's user to approve is its child span, and so is the confinement's start. Spans go to a real
// OTLP/HTTP receiver on loopback, decoded with the official protobuf definitions.
import assert from "node:assert/strict";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { connectHttp, SESSIONS_MANIFEST, startHttp, TOKEN } from "./helpers.ts";
import { scratch } from "../executor_helpers.ts";
import { otlpReceiver } from "../run/otlp_receiver.ts";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";

Deno.test("serve: tools/call continues the client's trace from _meta; the approval wait is a child span", async () => {
  await using receiver = await otlpReceiver();
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, {
    TOOLGATE_MCP_TOKEN: TOKEN,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
  }, SESSIONS_MANIFEST);
  await using connected = await connectHttp(server.url, TOKEN, {
    capabilities: { elicitation: {} },
    setup: (client) =>
      client.setRequestHandler(ElicitRequestSchema, () => ({ action: "accept", content: { always: false } })),
  });
  const marker = "note-text-51c0";
  const result = await connected.client.callTool({
    name: "note",
    arguments: { text: marker },
    _meta: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
  });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  // An unknown tool is a JSON-RPC error: its span says so with the error's code.
  await assert.rejects(connected.client.callTool({ name: "no_such_tool", arguments: {} }));

  const spans = await receiver.waitFor((s) =>
    s.some((span) => span.name === "execute_tool note") &&
    s.some((span) => span.name === "execute_tool no_such_tool")
  );
  const call = spans.find((s) => s.name === "execute_tool note")!;
  assert.equal(call.kind, 2, "a server span");
  assert.equal(call.traceId, TRACE_ID, "the client's trace goes on");
  assert.equal(call.parentSpanId, PARENT_ID);
  assert.equal(call.attributes["gen_ai.operation.name"], "execute_tool");
  assert.equal(call.attributes["gen_ai.tool.name"], "note");
  assert.equal(call.attributes["mcp.method.name"], "tools/call");
  assert.equal(typeof call.attributes["mcp.session.id"], "string");
  assert.equal(typeof call.attributes["gen_ai.tool.call.id"], "string");
  assert.equal(call.attributes["error.type"], undefined);
  const approval = spans.find((s) => s.name === "toolgate.approval");
  assert.ok(approval, "the approval wait has its span");
  assert.equal(approval.parentSpanId, call.spanId);
  const start = spans.find((s) => s.name === "toolgate.confinement_start");
  assert.equal(start?.parentSpanId, call.spanId);

  const unknown = spans.find((s) => s.name === "execute_tool no_such_tool")!;
  assert.equal(unknown.attributes["error.type"], "-32602");
  assert.equal(unknown.parentSpanId, "", "no _meta: a trace of its own");

  for (const body of receiver.raw) {
    const text = new TextDecoder().decode(body);
    assert.ok(!text.includes(marker), "no argument value exported");
    assert.ok(!text.includes(TOKEN), "the MCP token is not exported");
  }
});
