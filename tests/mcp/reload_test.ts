/**
 * `serve` and a manifest that changes under it, through the launcher (toolgate's least grants, as a user runs it):
 * over Streamable HTTP with a 1.x session client and a 2026-07-28 `subscriptions/listen` stream, and over stdio
 * with a listen stream. An edit the user has not trusted is not served (one line names `toolgate trust`); once
 * trusted, the added tool is listed and callable and both clients are told; a trusted change that needs more
 * than serve was started with, or a manifest link turned to another trusted manifest, is refused with its line
 * and nothing is swapped; a call in flight finishes on the tool it started with, and an "always" given to a
 * changed tool is forgotten.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { denoDir, launcherArgs, runToolgate, type TempDir, tempDir } from "../support.ts";
import { connectHttp, type HttpServer, spawnHttp, TOKEN } from "./helpers.ts";
import { stdioPeer } from "./stdio_peer.ts";

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "listener", version: "1" },
};

/** A read-only tool of the project's own program: `loud` as its first argument shouts. */
function tool(name: string, extra: Record<string, unknown> = {}, args: string[] = []) {
  return {
    name,
    description: `Greets (${name}).`,
    command: ["./tools/bin/greet", ...args],
    readOnly: true,
    permissions: "none",
    ...extra,
  };
}

/** The project's programs: `greet` (`loud` shouts), `wait` (until the workspace has `go`), `note` (appends). */
const PROGRAMS: Record<string, string> = {
  greet: '#!/bin/sh\ncat >/dev/null\nif [ "$1" = loud ]; then echo \'{"greeting":"HELLO"}\'; ' +
    'else echo \'{"greeting":"hello"}\'; fi\n',
  wait:
    '#!/bin/sh\ncat >/dev/null\nwhile [ ! -e go ]; do sleep 0.05; done\necho "{\\"version\\":\\"$1\\"}"\n',
  note: "#!/bin/sh\ncat >>notes\necho >>notes\necho '{\"written\":true}'\n",
};

/** A project whose manifest has `tools` (by default `greet`), trusted, with its own state folder. */
async function greeting(
  tools: unknown[] = [tool("greet")],
): Promise<{ dir: TempDir; state: TempDir; env: Record<string, string> }> {
  const dir = await tempDir();
  const state = await tempDir();
  const bin = join(dir.path, "tools", "bin");
  await Deno.mkdir(bin, { recursive: true });
  for (const [name, text] of Object.entries(PROGRAMS)) {
    await Deno.writeTextFile(join(bin, name), text);
    await Deno.chmod(join(bin, name), 0o755);
  }
  await Deno.writeTextFile(join(dir.path, "tools.json"), JSON.stringify({ tools }));
  const env = {
    XDG_STATE_HOME: state.path,
    XDG_CONFIG_HOME: join(state.path, "config"),
    HOME: state.path,
    DENO_DIR: denoDir(),
  };
  const trusted = await runToolgate(["trust"], dir.path, env);
  assert.equal(trusted.code, 0, trusted.stderr);
  return { dir, state, env };
}

/** `toolgate serve --http 0 EXTRA` through the launcher, in the project. */
function serve(dir: string, env: Record<string, string>, extra: string[] = []): Promise<HttpServer> {
  return spawnHttp(Deno.execPath(), launcherArgs(["serve", "--http", "0", "--cwd", dir, ...extra]), {
    ...env,
    TOOLGATE_MCP_TOKEN: TOKEN,
  });
}

/** Waits until `ready` holds, polling; fails with `what` (and the server's stderr) after 30 s. */
async function until(ready: () => boolean, what: string, server: HttpServer): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 30 s; stderr:\n${server.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A 2026-07-28 `subscriptions/listen` stream for the tool list's changes: the messages it carried so far. */
async function listen(
  url: URL,
): Promise<{ messages: Record<string, unknown>[]; close: () => Promise<void> }> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${TOKEN}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": "2026-07-28",
      "Mcp-Method": "subscriptions/listen",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: "tools-listen",
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true }, _meta: META },
    }),
  });
  assert.equal(response.status, 200);
  const messages: Record<string, unknown>[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const reading = (async () => {
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buffered += value;
      for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
        const data = buffered.slice(0, end).split("\n").find((line) => line.startsWith("data: "));
        if (data !== undefined) messages.push(JSON.parse(data.slice(6)));
        buffered = buffered.slice(end + 2);
      }
    }
  })();
  return {
    messages,
    close: async () => {
      await reader.cancel().catch(() => {});
      await reading;
    },
  };
}

const toolsChanged = (message: Record<string, unknown>) =>
  message.method === "notifications/tools/list_changed";

Deno.test("serve: an untrusted edit of the manifest is not served; once trusted, the added tool is listed, callable, and both eras' clients are told", async () => {
  const { dir, state, env } = await greeting();
  await using _dir = dir;
  await using _state = state;
  await using server = await serve(dir.path, env);
  let told = 0;
  await using old = await connectHttp(server.url, TOKEN, {
    setup: (client) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => void told++),
  });
  const stream = await listen(server.url);
  try {
    await until(
      () => stream.messages.some((m) => m.method === "notifications/subscriptions/acknowledged"),
      "the listen stream acknowledged",
      server,
    );
    const names = async () => (await old.client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(await names(), ["greet"]);

    // An edit nobody trusted (a tool could have written it): one line, and the tools stay as they were.
    await Deno.writeTextFile(
      join(dir.path, "tools.json"),
      JSON.stringify({ tools: [tool("greet"), tool("shout", {}, ["loud"])] }),
    );
    await until(
      () => /tools\.json changed and is not trusted/.test(server.stderr()),
      "the untrusted line",
      server,
    );
    assert.match(server.stderr(), /run `toolgate trust` to serve it/);
    assert.deepEqual(await names(), ["greet"]);
    await assert.rejects(old.client.callTool({ name: "shout", arguments: {} }), /no tool named "shout"/);
    assert.equal(told, 0);
    assert.ok(!stream.messages.some(toolsChanged), JSON.stringify(stream.messages));

    // The user trusts it: served in place, each client told in its era's way.
    const trusted = await runToolgate(["trust"], dir.path, env);
    assert.equal(trusted.code, 0, trusted.stderr);
    await until(() => told > 0, "the session client told", server);
    await until(() => stream.messages.some(toolsChanged), "the listen stream told", server);
    const notice = stream.messages.find(toolsChanged)!;
    assert.equal(
      (notice.params as Record<string, Record<string, unknown>>)
        ._meta["io.modelcontextprotocol/subscriptionId"],
      "tools-listen",
    );
    assert.match(server.stderr(), /was trusted again: serving its tools as they are now \(added shout\)/);
    assert.deepEqual(await names(), ["greet", "shout"]);
    const shouted = await old.client.callTool({ name: "shout", arguments: {} });
    assert.equal(shouted.isError, undefined, JSON.stringify(shouted));
    assert.match(JSON.stringify(shouted.content), /HELLO/);
    const greeted = await old.client.callTool({ name: "greet", arguments: {} });
    assert.match(JSON.stringify(greeted.content), /hello/);
  } finally {
    await stream.close();
  }
});

Deno.test("serve: a trusted change that needs more than serve was started with, or a manifest link turned elsewhere, is refused with its line", async () => {
  const { dir, state, env } = await greeting();
  await using _dir = dir;
  await using _state = state;
  await using server = await serve(dir.path, env);
  await using old = await connectHttp(server.url, TOKEN);
  const names = async () => (await old.client.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(await names(), ["greet"]);

  // A new variable (read only at start) and a new program (not in this process's grants): restart to serve it.
  const other = join(dir.path, "tools", "bin", "other");
  await Deno.copyFile(join(dir.path, "tools", "bin", "greet"), other);
  await Deno.chmod(other, 0o755);
  await Deno.writeTextFile(
    join(dir.path, "tools.json"),
    JSON.stringify({
      tools: [
        tool("greet"),
        { ...tool("other", { envPassthrough: ["RELOAD_TEST_VAR"] }), command: ["./tools/bin/other"] },
      ],
    }),
  );
  const trusted = await runToolgate(["trust"], dir.path, env);
  assert.equal(trusted.code, 0, trusted.stderr);
  await until(
    () => /needs more than this serve was started with/.test(server.stderr()),
    "the refusal",
    server,
  );
  const line = server.stderr().split("\n").find((l) => l.includes("needs more"))!;
  assert.match(line, /the variable RELOAD_TEST_VAR, read only at start/);
  assert.match(line, /running \S+\/tools\/bin\/other/);
  assert.match(line, /restart serve to serve it$/);
  assert.deepEqual(await names(), ["greet"]);

  // tools.json turned into a link to another manifest the user trusted (one serve may read, in the workspace): not
  // the file serve started with.
  const elsewhere = { path: join(dir.path, "sub") };
  await Deno.mkdir(join(elsewhere.path, "tools", "bin"), { recursive: true });
  await Deno.copyFile(join(dir.path, "tools", "bin", "greet"), join(elsewhere.path, "tools", "bin", "greet"));
  await Deno.chmod(join(elsewhere.path, "tools", "bin", "greet"), 0o755);
  await Deno.writeTextFile(
    join(elsewhere.path, "tools.json"),
    JSON.stringify({ tools: [tool("greet"), tool("planted", {}, ["loud"])] }),
  );
  assert.equal((await runToolgate(["trust"], elsewhere.path, env)).code, 0);
  await Deno.remove(join(dir.path, "tools.json"));
  await Deno.symlink(join(elsewhere.path, "tools.json"), join(dir.path, "tools.json"));
  await until(
    () => /now resolves to \S+, not the \S+ serve started with/.test(server.stderr()),
    "the link",
    server,
  );
  assert.deepEqual(await names(), ["greet"]);
});

/** Whether a process runs `program` with `arg` as its first argument (a tool's, confined or not), as ps(1) says. */
async function running(program: string, arg: string): Promise<boolean> {
  const { stdout } = await new Deno.Command("ps", { args: ["-eo", "args="], stdout: "piped" }).output();
  return new TextDecoder().decode(stdout).split("\n").some((line) =>
    line.trim().endsWith(`${program} ${arg}`)
  );
}

Deno.test('serve: a call in flight finishes on the tool it started with, and an "always" given to a tool whose definition changed asks again', async () => {
  const wait = (version: string) => ({ ...tool("wait"), command: ["./tools/bin/wait", version] });
  const note = (description: string) => ({
    name: "note",
    description,
    command: ["./tools/bin/note"],
    permissions: "workspace",
  });
  const { dir, state, env } = await greeting([wait("1"), note("Appends a note.")]);
  await using _dir = dir;
  await using _state = state;
  // note writes the workspace: unconfined, so that the test holds where bubblewrap cannot run (approval is the same).
  await using server = await serve(dir.path, env, ["--sandbox", "off"]);
  const asked: string[] = [];
  await using old = await connectHttp(server.url, TOKEN, {
    capabilities: { elicitation: {} },
    setup: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params.message);
        return { action: "accept", content: { always: true } };
      }),
  });
  // "always" for note: its second call is not asked.
  for (let i = 0; i < 2; i++) {
    const wrote = await old.client.callTool({ name: "note", arguments: {} });
    assert.equal(wrote.isError, undefined, JSON.stringify(wrote));
  }
  assert.equal(asked.length, 1, asked.join("\n"));

  // A call of wait 1 under way while the manifest changes wait to 2 and note's description.
  const first = old.client.callTool({ name: "wait", arguments: {} });
  // Awaited below; a failure before that is the test's own, not an unhandled rejection.
  first.catch(() => {});
  const deadline = Date.now() + 30_000;
  while (!(await running("/tools/bin/wait", "1"))) {
    if (Date.now() > deadline) throw new Error(`wait 1 did not start; stderr:\n${server.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await Deno.writeTextFile(
    join(dir.path, "tools.json"),
    JSON.stringify({ tools: [wait("2"), note("Appends a note to ./notes.")] }),
  );
  const trusted = await runToolgate(["trust"], dir.path, env);
  assert.equal(trusted.code, 0, trusted.stderr);
  await until(() => /was trusted again: serving/.test(server.stderr()), "the swap", server);
  assert.match(server.stderr(), /\(changed wait, note\)/);
  await Deno.writeTextFile(join(dir.path, "go"), "");
  const finished = await first;
  assert.match(JSON.stringify(finished.content), /\\"version\\":\\"1\\"/, JSON.stringify(finished));
  const again = await old.client.callTool({ name: "wait", arguments: {} });
  assert.match(JSON.stringify(again.content), /\\"version\\":\\"2\\"/, JSON.stringify(again));

  // note is not the tool the person said "always" to: asked again.
  const wrote = await old.client.callTool({ name: "note", arguments: {} });
  assert.equal(wrote.isError, undefined, JSON.stringify(wrote));
  assert.equal(asked.length, 2, asked.join("\n"));
});

Deno.test("serve on stdio: a stateless listen stream hears a manifest trusted again, and tools/list answers its tools", async () => {
  const { dir, state, env } = await greeting();
  await using _dir = dir;
  await using _state = state;
  await using peer = stdioPeer(launcherArgs(["serve", "--cwd", dir.path]), dir.path, {
    ...Deno.env.toObject(),
    ...env,
  });
  const { until, send } = peer;
  const listed = async (id: number) => {
    await send({ jsonrpc: "2.0", id, method: "tools/list", params: { _meta: META } });
    const answer = await until((m) => m.id === id);
    return (answer.result as { tools: { name: string }[] }).tools.map((t) => t.name).sort();
  };
  await send({
    jsonrpc: "2.0",
    id: "tools-listen",
    method: "subscriptions/listen",
    params: { notifications: { toolsListChanged: true }, _meta: META },
  });
  await until((m) => m.method === "notifications/subscriptions/acknowledged");
  assert.deepEqual(await listed(1), ["greet"]);
  await Deno.writeTextFile(
    join(dir.path, "tools.json"),
    JSON.stringify({ tools: [tool("greet"), tool("shout", {}, ["loud"])] }),
  );
  const trusted = await runToolgate(["trust"], dir.path, env);
  assert.equal(trusted.code, 0, trusted.stderr);
  await until(toolsChanged);
  assert.deepEqual(await listed(2), ["greet", "shout"]);
  await send({
    jsonrpc: "2.0",
    id: 3,
    method: "tools/call",
    params: { name: "shout", arguments: {}, _meta: META },
  });
  const shouted = await until((m) => m.id === 3);
  assert.match(JSON.stringify(shouted.result), /HELLO/);
});
