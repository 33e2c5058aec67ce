/**
 * `subscriptions/listen` for a 2026-07-28 client: over stdio, a listen stream asking for the tool list's changes
 * is acknowledged first, and an upstream server's `tools/list_changed` (once its new listing is checked) reaches it,
 * carrying the subscription's id; a stream that did not ask for it hears nothing. Over a gateway server of the
 * test's own (Node and the SDK from the gateway tests' cache).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { MODULES, nodeServersMissing, project, writeOwnServer } from "../gateway_support.ts";
import { denoDir, launcherArgs } from "../support.ts";
import { stdioPeer } from "./stdio_peer.ts";

const ignore = await nodeServersMissing("stateless_listen_test") !== undefined;
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "listener", version: "1" },
};

/** A server whose `grow` tool adds a tool, which makes the SDK send `notifications/tools/list_changed`. */
function growingServer(): string {
  const sdk = join(MODULES, "@modelcontextprotocol", "sdk", "dist", "esm");
  return `
import { McpServer } from ${JSON.stringify(join(sdk, "server", "mcp.js"))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, "server", "stdio.js"))};
const server = new McpServer({ name: "own", version: "1.0.0" });
server.registerTool("grow", { description: "Adds a tool." }, async () => {
  server.registerTool("added", { description: "Added later." }, async () => ({ content: [{ type: "text", text: "x" }] }));
  return { content: [{ type: "text", text: "grown" }] };
});
await server.connect(new StdioServerTransport());
`;
}

Deno.test({
  name:
    "serve on stdio: a stateless listen stream hears the tool list's changes, acknowledged first, by its id",
  ignore,
  async fn() {
    await using p = await project({});
    await writeOwnServer(p.dir.path, growingServer);
    assert.equal((await p.run(["trust"])).code, 0);
    await using peer = stdioPeer(launcherArgs(["serve", "--allow-tools", "mcp__own__*"]), p.dir.path, {
      ...Deno.env.toObject(),
      DENO_DIR: denoDir(),
      ...p.env,
    });
    const { seen, until, send } = peer;
    const subscription = (message: Record<string, unknown>) =>
      ((message.params as Record<string, Record<string, unknown>> | undefined)?._meta ?? {})[
        "io.modelcontextprotocol/subscriptionId"
      ];
    await send({
      jsonrpc: "2.0",
      id: "tools-listen",
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true }, _meta: META },
    });
    await send({
      jsonrpc: "2.0",
      id: "other-listen",
      method: "subscriptions/listen",
      params: { notifications: { promptsListChanged: true }, _meta: META },
    });
    const ack = await until((m) =>
      m.method === "notifications/subscriptions/acknowledged" && subscription(m) === "tools-listen"
    );
    assert.deepEqual((ack.params as Record<string, unknown>).notifications, { toolsListChanged: true });
    const otherAck = await until((m) =>
      m.method === "notifications/subscriptions/acknowledged" && subscription(m) === "other-listen"
    );
    // The manifest names a server: its prompt list's changes are honoured (gateway_offers_stateless_test.ts).
    assert.deepEqual((otherAck.params as Record<string, unknown>).notifications, {
      promptsListChanged: true,
    });
    await send({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "mcp__own__grow", arguments: {}, _meta: META },
    });
    const grown = await until((m) => m.id === 1);
    assert.equal((grown.result as Record<string, unknown>).resultType, "complete", JSON.stringify(grown));
    await until((m) => m.method === "notifications/tools/list_changed" && subscription(m) === "tools-listen");
    assert.ok(
      !seen.some((m) =>
        m.method === "notifications/tools/list_changed" && subscription(m) === "other-listen"
      ),
      "a stream that did not ask for the tools' changes hears none",
    );
    // The client ends a stream by cancelling its request: nothing more goes out for it.
    await send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: "tools-listen" },
    });
  },
});
