/**
 * Clients of both MCP eras against one `toolgate serve --http`: the official 2.x client pinned to 2026-07-28
 * (stateless: `server/discover`, no session, approvals by input-required rounds that the SDK fulfils through its
 * elicitation handler) and the 1.x client (a 2025-11-25 session, approvals by an elicitation request), each
 * listing the tools, calling one, and answering an approval.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client as StatelessClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { scratch } from "../executor_helpers.ts";
import { connectHttp, startHttp, TOKEN } from "./helpers.ts";

Deno.test("serve --http: a 2.x stateless client and a 1.x session client list, call and answer an approval", async () => {
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN });
  const notes = join(dir.path, "notes");

  // The 2.x client, pinned to the stateless revision: no fallback to initialize.
  const asked: string[] = [];
  const modern = new StatelessClient({ name: "modern", version: "1" }, {
    capabilities: { elicitation: {} },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  modern.setRequestHandler("elicitation/create", (request) => {
    asked.push(`modern: ${request.params.message}`);
    return { action: "accept", content: { always: false } };
  });
  const transport = new StreamableHTTPClientTransport(server.url, {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  await modern.connect(transport);
  try {
    assert.equal(modern.getProtocolEra(), "modern");
    assert.equal(modern.getNegotiatedProtocolVersion(), "2026-07-28");
    assert.equal(transport.sessionId, undefined, "the stateless client has no session");

    // The 1.x client: a 2025-11-25 session that is asked by an elicitation request.
    await using old = await connectHttp(server.url, TOKEN, {
      capabilities: { elicitation: {} },
      setup: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(`old: ${request.params.message}`);
          return { action: "accept", content: { always: false } };
        }),
    });
    assert.notEqual(old.transport.sessionId, undefined, "the old client keeps its session");

    const listedModern = (await modern.listTools()).tools.map((tool) => tool.name);
    const listedOld = (await old.client.listTools()).tools.map((tool) => tool.name);
    assert.deepEqual(listedModern, listedOld);
    assert.ok(listedModern.includes("note"));

    const echoed = await modern.callTool({ name: "echo", arguments: { text: "modern" } });
    assert.deepEqual(echoed.structuredContent, { echo: { text: "modern" } });
    const echoedOld = await old.client.callTool({ name: "echo", arguments: { text: "old" } });
    assert.deepEqual(echoedOld.structuredContent, { echo: { text: "old" } });

    // note writes the workspace: each client's user is asked, each in its era's way, and each call runs.
    const wrote = await modern.callTool({ name: "note", arguments: { text: "modern" } });
    assert.deepEqual(wrote.structuredContent, { written: true });
    const wroteOld = await old.client.callTool({ name: "note", arguments: { text: "old" } });
    assert.deepEqual(wroteOld.structuredContent, { written: true });
    assert.equal(asked.length, 2, asked.join("\n"));
    assert.match(asked[0], /^modern: .*note/s);
    assert.match(asked[1], /^old: .*note/s);
    assert.equal(await Deno.readTextFile(notes), '{"text":"modern"}\n{"text":"old"}\n');
    assert.deepEqual(old.protocolErrors, []);
  } finally {
    await modern.close();
  }
});
