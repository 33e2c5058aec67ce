/**
 * A 2026-07-28 client (the official 2.x client, stateless, no `initialize`) of `toolgate serve --http --executor
 * nats://...`, against a real NATS server on loopback and a real `toolgate worker`: the approval of a call that
 * writes is an input-required round answered by the client's user before the call goes to the worker, and a
 * pooled `toolgate/1` tool's question, relayed from the worker, is an input-required round too; the tool on the
 * worker waits for the client's retry and goes on with its answer.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { scratch } from "../executor_helpers.ts";
import { FIXTURES } from "../support.ts";
import { serveArgs, spawnHttp } from "../mcp/helpers.ts";
import { natsServer, POOL_ENV, poolTest, startWorker, writePoolManifest } from "./helpers.ts";

const TOKEN = "stateless-pool-token";
const TOOLS: readonly Record<string, unknown>[] = [
  {
    name: "ask_user",
    command: [join(FIXTURES, "mcp", "tools", "bin", "ask"), "user"],
    protocol: "toolgate/1",
    asks: ["user"],
    readOnly: true,
  },
  // Not read-only: a person approves each call. It notes where it ran, and answers its arguments.
  { name: "keep", command: ["/bin/sh", "-c", "pwd > ran; cat"] },
];

poolTest(
  "pool: a stateless client's approval and a pooled tool's question are input-required rounds",
  async () => {
    await using nats = await natsServer();
    await using dir = await scratch();
    const manifest = await writePoolManifest(dir.path, TOOLS);
    // The worker has a workspace of its own: what ran there ran on the worker.
    await using away = await scratch();
    await using _worker = await startWorker(nats.url, manifest, away.path, "w1");
    await using server = await spawnHttp(
      Deno.execPath(),
      serveArgs(["--http", "0", "--allow-absolute-commands", "--executor", nats.url], dir.path, manifest),
      { ...POOL_ENV, TOOLGATE_MCP_TOKEN: TOKEN },
    );

    const asked: string[] = [];
    let ranEarly: boolean | undefined;
    const client = new Client({ name: "stateless-pool", version: "1" }, {
      capabilities: { elicitation: {} },
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    });
    client.setRequestHandler("elicitation/create", (request) => {
      asked.push(request.params.message);
      // Nothing ran on the worker while its approval is being asked.
      if (/keep/.test(request.params.message)) ranEarly = existsSync(join(away.path, "ran"));
      const content: Record<string, string | boolean> = /keep/.test(request.params.message)
        ? { always: false }
        : { target: "prod" };
      return { action: "accept", content };
    });
    const transport = new StreamableHTTPClientTransport(server.url, {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    });
    await client.connect(transport);
    try {
      assert.equal(client.getProtocolEra(), "modern");
      assert.equal(transport.sessionId, undefined, "no session");

      // The tool on the worker asks; its question comes back as a round, and the answer goes on to it.
      const form = await client.callTool({ name: "ask_user", arguments: {} });
      assert.equal(form.isError, undefined, JSON.stringify(form));
      const [block] = form.content as { type: string; text: string }[];
      assert.deepEqual(JSON.parse(block.text), {
        type: "answer",
        id: "q",
        answer: { action: "accept", content: { target: "prod" } },
      });

      // The approval is asked of the client's user first; only then does the worker run it.
      const kept = await client.callTool({ name: "keep", arguments: { text: "pooled" } });
      assert.equal(kept.isError, undefined, JSON.stringify(kept));
      assert.deepEqual(kept.structuredContent, { text: "pooled" });
      assert.equal(asked.length, 2, asked.join("\n"));
      assert.equal(ranEarly, false, "the worker ran nothing before the approval was answered");
      assert.equal(asked[0], "Deploy where?");
      assert.match(asked[1], /keep/);
      assert.equal(await Deno.readTextFile(join(away.path, "ran")), `${away.path}\n`);
      await assert.rejects(Deno.stat(join(dir.path, "ran")), Deno.errors.NotFound);
    } finally {
      await client.close();
    }
  },
);
