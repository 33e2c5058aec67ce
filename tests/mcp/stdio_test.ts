/** `toolgate serve` over stdio, driven by the MCP SDK's own client: list, call, cancel, progress, approval. */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { killLeftovers, parsePids, scratch, waitForFile, waitGone } from "../executor_helpers.ts";
import { hasStackTrace } from "../support.ts";
import { connectStdio, envelopeOf, serveArgs } from "./helpers.ts";

Deno.test("serve over stdio: tools, results, errors, cancellation, concurrency and progress", async (t) => {
  await using dir = await scratch();
  // `tree` writes its pids to the workspace: read-only by its flag, it needs approval all the same (issue 24).
  await using served = await connectStdio(["--allow-tools", "tree"], dir.path);
  const { client } = served;

  await t.step("tools/list: name, description, inputSchema and annotations per tool", async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    assert.deepEqual(tools.map((tool) => tool.name), [
      "echo",
      "fail",
      "note",
      "serial",
      "slow",
      "tree",
      "net_echo",
    ]);
    const echo = byName.get("echo")!;
    assert.equal(echo.description, "Print the arguments back.");
    assert.deepEqual(echo.inputSchema, {
      type: "object",
      properties: { text: { type: "string", description: "Anything, e.g. hello" } },
      required: ["text"],
      additionalProperties: false,
    });
    assert.deepEqual(echo.annotations, { readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    // Not read-only: no destructiveHint: false (MCP's default, true, stands).
    assert.deepEqual(byName.get("note")!.annotations, { readOnlyHint: false, openWorldHint: false });
    // The network profile is the only one that opens the world.
    assert.deepEqual(byName.get("net_echo")!.annotations, {
      readOnlyHint: true,
      destructiveHint: false,
      openWorldHint: true,
    });
    // A tool without a schema gets an empty object schema.
    assert.deepEqual(byName.get("fail")!.inputSchema, { type: "object", properties: {} });
  });

  await t.step("a successful call: the result as structuredContent, its JSON as text", async () => {
    const result = await client.callTool({ name: "echo", arguments: { text: "hello" } });
    assert.equal(result.isError, undefined);
    assert.deepEqual(result.structuredContent, { echo: { text: "hello" } });
    const content = result.content as { type: string; text: string }[];
    assert.equal(content.length, 1);
    assert.equal(content[0].text, '{"echo":{"text":"hello"}}');
  });

  await t.step(
    "a failing call: isError, the message as text and the failure envelope structured",
    async () => {
      const result = await client.callTool({ name: "fail", arguments: {} });
      assert.equal(result.isError, true);
      const content = result.content as { type: string; text: string }[];
      assert.equal(content.length, 1);
      assert.match(content[0].text, /the disk is on fire/);
      const envelope = envelopeOf(result);
      assert.equal(envelope.ok, false);
      assert.equal(envelope.kind, "execution_error");
      assert.equal(envelope.tool, "fail");
      assert.equal(envelope.exit_code, 3);
      assert.match(String(envelope.message), /the disk is on fire/);
    },
  );

  await t.step("invalid arguments: isError and an invalid_args envelope naming the field", async () => {
    const missing = envelopeOf(await client.callTool({ name: "echo", arguments: {} }));
    assert.equal(missing.kind, "invalid_args");
    assert.equal(missing.field, "text");
    assert.equal(missing.retryable, true);
    const extra = await client.callTool({ name: "echo", arguments: { text: "a", colour: "red" } });
    assert.equal(extra.isError, true);
    assert.equal(envelopeOf(extra).field, "colour");
  });

  await t.step("an unknown tool is a JSON-RPC error (InvalidParams), not an envelope", async () => {
    await assert.rejects(
      () => client.callTool({ name: "no_such_tool", arguments: {} }),
      (error: unknown) => {
        assert.ok(error instanceof McpError, String(error));
        assert.equal(error.code, ErrorCode.InvalidParams);
        assert.match(error.message, /no_such_tool/);
        return true;
      },
    );
  });

  await t.step(
    "approval: a tool that is not read-only is rejected, naming --yes and --allow-tools",
    async () => {
      const result = await client.callTool({ name: "note", arguments: { text: "hi" } });
      assert.equal(result.isError, true);
      const envelope = envelopeOf(result);
      assert.equal(envelope.kind, "rejected");
      assert.equal(envelope.retryable, false);
      assert.match(String(envelope.message), /--yes/);
      assert.match(String(envelope.message), /--allow-tools note/);
      await assert.rejects(Deno.stat(join(dir.path, "notes")), Deno.errors.NotFound);
    },
  );

  await t.step("cancellation: an aborted call ends the tool's whole tree", async () => {
    const controller = new AbortController();
    const call = client.callTool({ name: "tree", arguments: {} }, undefined, { signal: controller.signal });
    const outcome = call.then(() => "answered", () => "rejected");
    const pids = parsePids(await waitForFile(join(dir.path, "pids"), 20_000));
    try {
      controller.abort();
      assert.equal(await outcome, "rejected");
      assert.deepEqual(await waitGone(pids, 10_000), [], `still alive: ${pids}`);
    } finally {
      killLeftovers(pids);
    }
    // The server goes on serving.
    const after = await client.callTool({ name: "echo", arguments: { text: "still here" } });
    assert.deepEqual(after.structuredContent, { echo: { text: "still here" } });
  });

  await t.step("several concurrent calls run side by side, each answered with its own result", async () => {
    const started = performance.now();
    const ids = [1, 2, 3, 4, 5];
    const results = await Promise.all(
      ids.map((id) => client.callTool({ name: "slow", arguments: { seconds: 1.5, id } })),
    );
    const elapsed = performance.now() - started;
    assert.deepEqual(
      results.map((r) => r.structuredContent),
      ids.map((id) => ({ slept: { seconds: 1.5, id } })),
    );
    // One after another would take 7.5 s.
    assert.ok(elapsed < 6000, `took ${Math.round(elapsed)} ms`);
  });

  await t.step("progress notifications arrive while a tool runs, when the client sent a token", async () => {
    const updates: { progress: number; message?: string }[] = [];
    const result = await client.callTool({ name: "slow", arguments: { seconds: 2.5 } }, undefined, {
      onprogress: (update) => void updates.push(update),
    });
    assert.deepEqual(result.structuredContent, { slept: { seconds: 2.5 } });
    assert.ok(updates.length >= 1, `no progress: ${JSON.stringify(updates)}`);
    assert.equal(updates[0].progress, 1);
    // The heartbeat's words (issue 14): the tool, its elapsed time and its wall-clock limit.
    assert.match(updates[0].message ?? "", /^running slow elapsed=\d+s\/20s$/);
    for (let i = 1; i < updates.length; i++) assert.ok(updates[i].progress > updates[i - 1].progress);
  });

  await t.step("nothing but protocol messages on stdout: the client met no unreadable line", () => {
    assert.deepEqual(served.protocolErrors, []);
    assert.doesNotMatch(served.stderr(), /toolgate: mcp:/);
  });
});

Deno.test("serve over stdio: --yes lets every tool run; calls of a tool that is not concurrent do not overlap", async () => {
  await using dir = await scratch();
  await using served = await connectStdio(["--yes"], dir.path);
  const result = await served.client.callTool({ name: "note", arguments: { text: "first" } });
  assert.deepEqual(result.structuredContent, { written: true });
  assert.equal(await Deno.readTextFile(join(dir.path, "notes")), '{"text":"first"}\n');

  await Promise.all([1, 2, 3].map(() => served.client.callTool({ name: "serial", arguments: {} })));
  const lines = (await Deno.readTextFile(join(dir.path, "serial.log"))).trim().split("\n");
  assert.equal(lines.length, 6);
  for (let i = 0; i < lines.length; i += 2) {
    const pid = lines[i].split(" ")[1];
    assert.deepEqual([lines[i], lines[i + 1]], [`start ${pid}`, `end ${pid}`], lines.join("\n"));
  }
});

Deno.test("serve over stdio: --allow-tools lets only the named tools run", async () => {
  await using dir = await scratch();
  await using served = await connectStdio(["--allow-tools", "note"], dir.path);
  const allowed = await served.client.callTool({ name: "note", arguments: { text: "ok" } });
  assert.deepEqual(allowed.structuredContent, { written: true });
  const other = await served.client.callTool({ name: "serial", arguments: {} });
  assert.equal(envelopeOf(other).kind, "rejected");
  assert.match(String(envelopeOf(other).message), /--allow-tools serial/);
});

Deno.test("serve over stdio: the end of stdin stops the server, ends a running tool's tree and answers the call", async () => {
  await using dir = await scratch();
  const child = new Deno.Command(Deno.execPath(), {
    // `tree` writes its pids to the workspace: read-only by its flag, it needs approval all the same (issue 24).
    args: serveArgs(["--allow-tools", "tree"], dir.path),
    env: { NO_COLOR: "1" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const messages = [
    {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    },
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "tree", arguments: {} } },
  ];
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(messages.map((m) => JSON.stringify(m) + "\n").join("")));
  const output = child.output();
  const pids = parsePids(await waitForFile(join(dir.path, "pids"), 20_000));
  try {
    await writer.close();
    const { code, stdout, stderr } = await output;
    const text = new TextDecoder().decode(stdout);
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    // stdout holds only protocol messages: the initialize answer, and the stopped call's answer.
    const lines = text.trim().split("\n").map((line) => JSON.parse(line));
    assert.deepEqual(lines.map((line) => line.id), [1, 2]);
    assert.equal(lines[1].result.isError, true);
    const envelope = lines[1].result.structuredContent;
    assert.equal(lines[1].result.content[0].text, envelope.message);
    assert.equal(envelope.kind, "unavailable");
    assert.equal(envelope.cancelled, true);
    assert.deepEqual(await waitGone(pids, 5000), []);
  } finally {
    killLeftovers(pids);
  }
});

Deno.test("serve over stdio: SIGTERM stops the server while stdin is still open", async () => {
  await using dir = await scratch();
  const child = new Deno.Command(Deno.execPath(), {
    args: serveArgs([], dir.path),
    env: { NO_COLOR: "1" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  };
  await writer.write(new TextEncoder().encode(JSON.stringify(initialize) + "\n"));
  const stderr = new Response(child.stderr).text();
  // Wait for the answer, so that the server is up and reading, then stop it.
  const reader = child.stdout.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  assert.match(first, /"id":1/);
  child.kill("SIGTERM");
  const { code } = await child.status;
  assert.equal(code, 143, await stderr);
  await reader.cancel();
  await writer.close().catch(() => {});
  assert.ok(!hasStackTrace(await stderr));
});
