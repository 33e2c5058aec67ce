// The gateway's MCP servers run under the seccomp filter too (issue 41): a server of the test's own, started
// confined by the gateway, reports its own /proc/self/status and tries an io_uring ring and a nested user
// namespace; a real installed server (the memory server) answers under the same filter.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  envelope,
  MEMORY_SERVER,
  MODULES,
  nodeServersMissing,
  project,
  writeOwnServer,
} from "../gateway_support.ts";

const ignore = await nodeServersMissing("seccomp_gateway_test") !== undefined;

/** A server whose one tool says what seccomp mode it runs under and what the filter answers it. */
function statusServer(): string {
  const sdk = join(MODULES, "@modelcontextprotocol", "sdk", "dist", "esm");
  return `
import { McpServer } from ${JSON.stringify(join(sdk, "server", "mcp.js"))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, "server", "stdio.js"))};
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
const server = new McpServer({ name: "own", version: "1.0.0" });
server.registerTool("status", { description: "Says how it is confined." }, async () => {
  const mode = /Seccomp:\\s*(\\d)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
  const nested = spawnSync("unshare", ["-U", "true"], { encoding: "utf8" }).stderr.trim();
  return { content: [{ type: "text", text: "seccomp=" + mode + " unshare=" + nested }] };
});
await server.connect(new StdioServerTransport());
`;
}

Deno.test({
  name: "seccomp: a gateway's MCP server runs under the filter, which refuses it a nested user namespace",
  ignore,
  async fn() {
    await using p = await project({});
    await writeOwnServer(p.dir.path, statusServer);
    const tools = JSON.parse(await Deno.readTextFile(join(p.dir.path, "tools.json")));
    tools.mcpServers.mem = { command: "node", args: [MEMORY_SERVER], permissions: { read: [MODULES] } };
    await Deno.writeTextFile(join(p.dir.path, "tools.json"), JSON.stringify(tools));
    assert.equal((await p.run(["trust"])).code, 0);
    const status = await p.run(["call", "mcp__own__status"]);
    const text = envelope(status.stdout).content[0].text;
    assert.match(text, /seccomp=2/, status.stdout + status.stderr);
    assert.match(text, /unshare=.*Operation not permitted/, text);
    const graph = await p.run(["call", "mcp__mem__read_graph"]);
    assert.equal(envelope(graph.stdout).ok, true, graph.stdout + graph.stderr);
  },
});
