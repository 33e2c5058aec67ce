/**
 * The pin is the contract while a server runs: a server behind `toolgate serve` that widens a tool's schema and adds
 * a tool after its second call (tests/fixtures/gateway/shifting_server.mjs, which records every request it gets)
 * never receives the new argument nor a call of the new tool, whether it announces the change
 * (`notifications/tools/list_changed`) or not; after it restarts, its changed tool is withheld, and the refusal
 * says what changed.
 *
 * @module
 */
import assert from "node:assert/strict";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
import { nodeServersMissing } from "./gateway_support.ts";
import { serveClient, shiftingProject } from "./gateway_shifting.ts";

const ignore = await nodeServersMissing("gateway_pin_test") !== undefined;

/** A call's structured answer (its envelope when it failed), or the JSON-RPC error's message. */
async function call(client: Client, name: string, args: Record<string, unknown>) {
  try {
    const answer = await client.callTool({ name, arguments: args });
    return {
      isError: answer.isError === true,
      envelope: answer.structuredContent as Record<string, unknown>,
    };
  } catch (error) {
    return { isError: true, envelope: { kind: "protocol_error", message: (error as Error).message } };
  }
}

/** Waits until `check` holds (at most 15 s). */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    if (await check()) return;
    await new Promise((done) => setTimeout(done, 100));
  }
  assert.fail(`never: ${what}`);
}

Deno.test({
  name:
    "pin: a server that widens a tool and adds one without tools/list_changed never receives the new argument or tool",
  ignore,
  async fn() {
    await using p = await shiftingProject();
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__own__*"]);
    try {
      assert.equal((await call(client, "mcp__own__echo", { text: "one" })).isError, false);
      assert.equal((await call(client, "mcp__own__echo", { text: "two" })).isError, false);
      // The server has shifted, silently: echo takes `extra` now, and `added` exists.
      const widened = await call(client, "mcp__own__echo", { text: "three", extra: "smuggled" });
      assert.equal(widened.isError, true);
      assert.equal(widened.envelope.kind, "invalid_args", JSON.stringify(widened));
      assert.equal(widened.envelope.field, "extra");
      assert.match(String(widened.envelope.message), /`extra`.*trusted without it/);
      const added = await call(client, "mcp__own__added", {});
      assert.equal(added.isError, true, JSON.stringify(added));
      const { tools } = await client.listTools();
      assert.ok(!tools.some((tool) => tool.name === "mcp__own__added"), JSON.stringify(tools));
      // What the pin declares still runs.
      assert.equal((await call(client, "mcp__own__echo", { text: "five" })).isError, false);

      const calls = (await p.received()).filter((entry) => entry.method === "tools/call");
      assert.deepEqual(calls.map((entry) => [entry.name, entry.arguments]), [
        ["echo", { text: "one" }],
        ["echo", { text: "two" }],
        ["echo", { text: "five" }],
      ]);

      // The server restarts: its listing at that start is checked against the pins, and the changed tool is
      // withheld with what changed said; serve's client is told its tools changed.
      const before = client.changes();
      await call(client, "mcp__own__crash", {});
      const after = await call(client, "mcp__own__echo", { text: "six" });
      assert.equal(after.envelope.kind, "rejected", JSON.stringify(after));
      assert.match(String(after.envelope.message), /its input schema \(new argument: extra\) changed/);
      assert.match(String(after.envelope.message), /toolgate trust/);
      await until(() => client.changes() > before, "serve's client told its tools changed after the restart");
      const listed = (await client.listTools()).tools.map((tool) => tool.name);
      assert.ok(!listed.includes("mcp__own__echo"), JSON.stringify(listed));
      assert.ok(!listed.includes("mcp__own__added"), JSON.stringify(listed));
      assert.ok(listed.includes("mcp__own__report"), JSON.stringify(listed));
      const last = (await p.received()).filter((entry) => entry.method === "tools/call").at(-1);
      assert.deepEqual(last, { method: "tools/call", name: "crash", arguments: {} });
      // Another run starts the server anew (it stays shifted): its start says what is withheld and why.
      const list = await p.run(["list", "--format", "names"]);
      assert.match(
        list.stderr,
        /mcp__own__echo is withheld: its input schema \(new argument: extra\) changed since it was trusted \(toolgate trust shows it\)/,
      );
      assert.match(list.stderr, /mcp__own__added is withheld: its definition is not trusted yet/);
      assert.doesNotMatch(list.stdout, /mcp__own__echo|mcp__own__added/);
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name: "pin: with tools/list_changed, the widened and the added tool are withheld, saying what changed",
  ignore,
  async fn() {
    await using p = await shiftingProject(["--list-changed"]);
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__own__*"]);
    try {
      assert.equal((await call(client, "mcp__own__echo", { text: "one" })).isError, false);
      assert.equal((await call(client, "mcp__own__echo", { text: "two" })).isError, false);
      await until(async () => {
        const names = (await client.listTools()).tools.map((tool) => tool.name);
        return !names.includes("mcp__own__echo");
      }, "echo withheld after the server's tools/list_changed");
      assert.ok(client.changes() > 0);
      const widened = await call(client, "mcp__own__echo", { text: "three", extra: "smuggled" });
      assert.equal(widened.envelope.kind, "rejected", JSON.stringify(widened));
      assert.match(String(widened.envelope.message), /its input schema \(new argument: extra\) changed/);
      const plain = await call(client, "mcp__own__echo", { text: "four" });
      assert.equal(plain.envelope.kind, "rejected", JSON.stringify(plain));
      const added = await call(client, "mcp__own__added", {});
      assert.equal(added.envelope.kind, "rejected", JSON.stringify(added));
      assert.match(String(added.envelope.message), /not been trusted yet/);

      const calls = (await p.received()).filter((entry) => entry.method === "tools/call");
      assert.deepEqual(calls.map((entry) => [entry.name, entry.arguments]), [
        ["echo", { text: "one" }],
        ["echo", { text: "two" }],
      ]);
    } finally {
      await client.close();
    }
  },
});
