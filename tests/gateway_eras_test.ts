/**
 * The gateway as a client of both MCP eras: an upstream server that speaks only 2026-07-28 (the official 2.x
 * server SDK with `legacy: "reject"`, tests/fixtures/gateway/modern_server.mjs), over stdio and over Streamable
 * HTTP, is listed and called through toolgate, its input-required round (a question to the user) answered by the
 * client of `toolgate serve`, its list changes told to that client; a server whose revisions toolgate speaks none of is one line.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { envelope, MODULES, NODE, nodeServersMissing, project } from "./gateway_support.ts";
import { denoDir, launcherArgs, REPO } from "./support.ts";
import { until } from "./console_helpers.ts";

const ignore = await nodeServersMissing("gateway_eras_test") !== undefined;

/** The 2026-07-28-only test server. */
const MODERN_SERVER = join(REPO, "tests", "fixtures", "gateway", "modern_server.mjs");
const FIXTURES = join(REPO, "tests", "fixtures", "gateway");

/** What the server recorded of the calls it was sent. */
async function received(dir: string): Promise<
  { tool: string; version?: string; answer?: unknown; cancelled?: boolean }[]
> {
  const text = await Deno.readTextFile(join(dir, "received.jsonl")).catch(() => "");
  return text.trim().split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
}

Deno.test({
  name: "eras: a stdio server of 2026-07-28 only is listed, called and asks its user through serve's client",
  ignore,
  async fn() {
    await using p = await project({
      modern: {
        command: "node",
        args: [MODERN_SERVER, "stdio"],
        permissions: { read: [MODULES, FIXTURES], write: ["."], net: false },
      },
    });
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 0, trust.stdout + trust.stderr);
    assert.match(trust.stdout, /mcp__modern__echo \(new\)/);
    assert.match(trust.stdout, /mcp__modern__confirm \(new\)/);
    assert.match(trust.stdout, /mcp__modern__grow \(new\)/);

    const echo = await p.run(["call", "mcp__modern__echo", JSON.stringify({ text: "hi" })]);
    assert.equal(echo.code, 0, echo.stdout + echo.stderr);
    assert.deepEqual(envelope(echo.stdout).content, [{ type: "text", text: "echo: hi" }]);
    // It was spoken to in its revision: every call carried the 2026-07-28 envelope.
    const calls = await received(p.dir.path);
    assert.ok(calls.length > 0);
    assert.ok(calls.every((call) => call.version === "2026-07-28"), JSON.stringify(calls));

    // Its question goes through the same policy as a session server's: with nobody to ask (no terminal), it is
    // refused at once, the call fails saying so, and the server is never sent an answer.
    const refused = await p.run([
      "call",
      "mcp__modern__confirm",
      JSON.stringify({ what: "wipe" }),
    ]);
    const refusal = envelope(refused.stdout);
    assert.equal(refusal.ok, false, refused.stdout + refused.stderr);
    assert.match(String(refusal.message), /without a terminal, so nobody can answer/, refused.stdout);
    const confirms = (await received(p.dir.path)).filter((c) => c.tool === "confirm");
    assert.deepEqual(confirms.map((c) => c.answer), [{ kind: "missing" }]);

    // Its question to the user, an input-required round, reaches the client of serve as an elicitation request.
    const asked: string[] = [];
    const client = new Client({ name: "eras-test", version: "1" }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return { action: "accept", content: { sure: true } };
    });
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
    await client.connect(
      new StdioClientTransport({
        command: Deno.execPath(),
        args: launcherArgs(["serve", "--allow-tools", "mcp__modern__*"]),
        cwd: p.dir.path,
        env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...p.env },
        stderr: "pipe",
      }),
    );
    try {
      const answer = await client.callTool({ name: "mcp__modern__confirm", arguments: { what: "deploy" } });
      assert.equal(answer.isError, undefined, JSON.stringify(answer));
      assert.deepEqual(answer.content, [{ type: "text", text: 'answered: accept {"sure":true}' }]);
      assert.equal(asked.length, 1, asked.join("\n"));
      assert.match(asked[0], /Really deploy\?/);

      // Its list changes reach serve's client: toolgate listens for them (subscriptions/listen).
      const before = changes;
      const grew = await client.callTool({ name: "mcp__modern__grow", arguments: {} });
      assert.equal(grew.isError, undefined, JSON.stringify(grew));
      await until(() => changes > before, "serve's client told its tools changed");
      // A cancelled call is cancelled at the server: the request it knows is named.
      const cancel = new AbortController();
      const slow = client.callTool({ name: "mcp__modern__slow", arguments: {} }, undefined, {
        signal: cancel.signal,
      });
      await until(async () => (await received(p.dir.path)).some((c) => c.tool === "slow"), "slow started");
      cancel.abort();
      await assert.rejects(slow);
      await until(
        async () => (await received(p.dir.path)).some((c) => c.tool === "slow" && c.cancelled === true),
        "the server saw the cancellation",
        20_000,
      );

      // The new tool is not trusted yet: withheld.
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      assert.ok(
        names.includes("mcp__modern__echo") && !names.includes("mcp__modern__grown"),
        names.join(", "),
      );
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name:
    "eras: a Streamable HTTP server of 2026-07-28 only is listed and called through call, and sees Ctrl-C",
  ignore,
  async fn() {
    await using p = await project({});
    const portFile = join(p.dir.path, "port");
    const server = new Deno.Command(NODE, {
      args: [MODERN_SERVER, "http", portFile],
      cwd: p.dir.path,
      stdout: "null",
      stderr: "piped",
    }).spawn();
    try {
      let port = "";
      for (let i = 0; i < 100 && port === ""; i++) {
        port = await Deno.readTextFile(portFile).catch(() => "");
        if (port === "") await new Promise((done) => setTimeout(done, 100));
      }
      assert.notEqual(port, "", "the server did not start");
      await Deno.writeTextFile(
        join(p.dir.path, "tools.json"),
        JSON.stringify({ tools: [], mcpServers: { web: { url: `http://127.0.0.1:${port}/mcp` } } }),
      );
      const trust = await p.run(["trust"]);
      assert.equal(trust.code, 0, trust.stdout + trust.stderr);
      assert.match(trust.stdout, /mcp__web__echo \(new\)/);
      const echo = await p.run(["call", "mcp__web__echo", JSON.stringify({ text: "over http" })]);
      assert.equal(echo.code, 0, echo.stdout + echo.stderr);
      assert.deepEqual(envelope(echo.stdout).content, [{ type: "text", text: "echo: over http" }]);
      const calls = await received(p.dir.path);
      assert.ok(
        calls.length > 0 && calls.every((call) => call.version === "2026-07-28"),
        JSON.stringify(calls),
      );

      // Ctrl-C during a call ends its request, which the server sees as the call's cancellation.
      const child = new Deno.Command(Deno.execPath(), {
        args: launcherArgs(["call", "mcp__web__slow"]),
        cwd: p.dir.path,
        env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...p.env },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        detached: true,
      }).spawn();
      const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
      await until(async () => (await received(p.dir.path)).some((c) => c.tool === "slow"), "slow started");
      Deno.kill(-child.pid, "SIGINT");
      const [stdout, stderr] = await output;
      await child.status;
      assert.equal(envelope(stdout).killed_by, "user", stdout + stderr);
      await until(
        async () => (await received(p.dir.path)).some((c) => c.tool === "slow" && c.cancelled === true),
        "the server saw the cancellation",
        20_000,
      );
    } finally {
      server.kill("SIGTERM");
      await server.status;
      await server.stderr.cancel();
    }
  },
});

Deno.test({
  name: "eras: a server of a revision toolgate does not speak is one line naming both sides' revisions",
  ignore,
  async fn() {
    await using p = await project({});
    // It refuses initialize and discovers a revision of the future only.
    const script = join(p.dir.path, "future.mjs");
    await Deno.writeTextFile(
      script,
      `import { createInterface } from "node:readline";
const say = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") {
    say({ id: m.id, error: { code: -32022, message: "Unsupported protocol version", data: { supported: ["2099-01-01"], requested: m.params.protocolVersion } } });
  } else if (m.method === "server/discover") {
    say({ id: m.id, result: { supportedVersions: ["2099-01-01"], capabilities: { tools: {} } } });
  } else if (m.id !== undefined) say({ id: m.id, error: { code: -32601, message: "Method not found" } });
});
`,
    );
    await Deno.writeTextFile(
      join(p.dir.path, "tools.json"),
      JSON.stringify({
        tools: [],
        mcpServers: { future: { command: "node", args: [script], permissions: { net: false } } },
      }),
    );
    const trust = await p.run(["trust"]);
    const said = trust.stdout + trust.stderr;
    assert.match(
      said,
      /the server speaks MCP 2099-01-01 only; toolgate speaks 2026-07-28 and 2025-11-25/,
      said,
    );
    assert.doesNotMatch(said, /at .*\.ts:\d+/, "no stack trace");
  },
});

Deno.test({
  name:
    "eras: a server that refuses initialize for a reason of its own and ignores discovery: its refusal stands",
  ignore,
  async fn() {
    await using p = await project({});
    const script = join(p.dir.path, "grumpy.mjs");
    await Deno.writeTextFile(
      script,
      `import { createInterface } from "node:readline";
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") {
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, error: { code: -32600, message: "no licence for this client" } }) + "\\n");
  }
});
`,
    );
    await Deno.writeTextFile(
      join(p.dir.path, "tools.json"),
      JSON.stringify({
        tools: [],
        mcpServers: {
          grumpy: { command: "node", args: [script], permissions: { net: false }, startTimeoutSec: 30 },
        },
      }),
    );
    const trust = await p.run(["trust"]);
    const said = trust.stdout + trust.stderr;
    // Its refusal reached toolgate's client (which then closed the connection, so the server ended): the
    // discovery it never answered did not hold the start until its timeout.
    assert.match(
      said,
      /MCP server "grumpy": not pinned, it cannot be used: the server did not start: it ended/,
      said,
    );
    assert.doesNotMatch(said, /did not answer initialize/, said);
  },
});
