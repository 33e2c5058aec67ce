/**
 * The gateway's promises around a call's life, with a server of the test's own written with the official SDK:
 * a cancelled call (a timeout, Ctrl-C, an MCP client's cancel) is cancelled upstream with `notifications/cancelled`;
 * a tool the server adds with `tools/list_changed` is withheld until `toolgate trust`; an upstream `isError` is a
 * failure envelope; the secret given to a server is masked in what it answers, and the audit line names the server
 * and its tool; `list` says which server each tool comes from; a server that cannot start says why in one line; a
 * server that keeps dying is started at most `MAX_STARTS_PER_MINUTE` times a minute.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
import { envelope, MODULES, nodeServersMissing, project } from "./gateway_support.ts";
import { denoDir, hasStackTrace, launcherArgs, launcherFlags, REPO, tempDir } from "./support.ts";
import { killAll, pgrep, uniqueSleep, until, within } from "./processes.ts";
import { MAX_STARTS_PER_MINUTE, Upstream, UpstreamError } from "../src/gateway/upstream.ts";
import { ToolLauncher } from "../src/sandbox/tool_launch.ts";
import { validateManifest } from "../src/manifest/manifest.ts";
import { loadSchemaEngine } from "../src/manifest/schema.ts";

const ignore = await nodeServersMissing("gateway_lifecycle_test") !== undefined;

/**
 * A server of the test's own. `slow` writes "started" to `marks`, then waits until it is cancelled (writing
 * "cancelled") or 30 s pass; `leak` answers the value of OWN_TOKEN; `grow` adds a tool (the SDK then sends
 * `notifications/tools/list_changed`); `fail` answers `isError`.
 */
function ownServer(marks: string): string {
  const sdk = join(MODULES, "@modelcontextprotocol", "sdk", "dist", "esm");
  return `
import { McpServer } from ${JSON.stringify(join(sdk, "server", "mcp.js"))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, "server", "stdio.js"))};
import { appendFileSync } from "node:fs";
const mark = (text) => appendFileSync(${JSON.stringify(marks)}, text + "\\n");
const server = new McpServer({ name: "own", version: "1.0.0" });
server.registerTool("slow", { description: "Waits." }, async (extra) => {
  mark("started");
  await new Promise((done) => {
    const timer = setTimeout(done, 30000);
    extra.signal.addEventListener("abort", () => { mark("cancelled"); clearTimeout(timer); done(); });
  });
  return { content: [{ type: "text", text: "slept" }] };
});
server.registerTool("leak", { description: "Tells its token." }, async () =>
  ({ content: [{ type: "text", text: "token=" + process.env.OWN_TOKEN }] }));
server.registerTool("grow", { description: "Adds a tool." }, async () => {
  server.registerTool("added", { description: "Added later." }, async () => ({ content: [{ type: "text", text: "x" }] }));
  return { content: [{ type: "text", text: "grown" }] };
});
server.registerTool("fail", { description: "Fails." }, async () =>
  ({ isError: true, content: [{ type: "text", text: "it broke" }] }));
await server.connect(new StdioServerTransport());
`;
}

/** A project whose manifest names the own server as `own`; `extra` adds to its entry. */
async function ownProject(extra: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  const p = await project({});
  const marks = join(p.dir.path, "marks.txt");
  const script = join(p.dir.path, "server.mjs");
  await Deno.writeTextFile(script, ownServer(marks));
  await Deno.writeTextFile(
    join(p.dir.path, "tools.json"),
    JSON.stringify({
      tools: [],
      mcpServers: {
        own: { command: "node", args: [script], permissions: { read: [MODULES], write: ["."] }, ...extra },
      },
    }),
  );
  const trust = await p.run(["trust"], undefined, env);
  assert.equal(trust.code, 0, trust.stdout + trust.stderr);
  const read = async () => {
    try {
      return (await Deno.readTextFile(marks)).trim().split("\n");
    } catch {
      return [];
    }
  };
  /** Waits until `marks` holds `line` (or 15 s pass). */
  const waitFor = async (line: string) => {
    for (let i = 0; i < 150 && !(await read()).includes(line); i++) {
      await new Promise((done) => setTimeout(done, 100));
    }
    return await read();
  };
  return Object.assign(p, { marks: read, waitFor, script });
}

/** toolgate ARGS started in the project, not waited for. */
function spawnToolgate(dir: string, env: Record<string, string>, args: string[]) {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...launcherFlags(),
      "--config",
      join(REPO, "deno.json"),
      join(REPO, "src", "launch.ts"),
      ...args,
    ],
    cwd: dir,
    // A HOME of the test's own keeps this user's Deno cache.
    env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    // A process group of its own, as a terminal gives the command typed at it.
    detached: true,
  }).spawn();
}

/** The client of `toolgate serve` in the project. */
async function serveClient(dir: string, env: Record<string, string>, extra: string[] = []) {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: launcherArgs(["serve", ...extra]),
    cwd: dir,
    // A HOME of the test's own keeps this user's Deno cache.
    env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...env },
    stderr: "pipe",
  });
  const client = new Client({ name: "gateway-lifecycle-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

Deno.test({
  name: "a call that times out is cancelled upstream: the server is sent notifications/cancelled",
  ignore,
  async fn() {
    await using p = await ownProject({ timeoutSec: 1 });
    const call = await p.run(["call", "mcp__own__slow"]);
    assert.equal(envelope(call.stdout).kind, "timeout", call.stdout + call.stderr);
    assert.deepEqual(await p.waitFor("cancelled"), ["started", "cancelled"]);
  },
});

Deno.test({
  name: "Ctrl-C during a call sends notifications/cancelled upstream before the server is ended",
  ignore,
  async fn() {
    await using p = await ownProject();
    const child = spawnToolgate(p.dir.path, p.env, ["call", "mcp__own__slow"]);
    const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
    assert.deepEqual(await p.waitFor("started"), ["started"]);
    // Ctrl-C: the terminal signals the whole foreground process group.
    Deno.kill(-child.pid, "SIGINT");
    const [stdout, stderr] = await output;
    await child.status;
    const answer = envelope(stdout);
    assert.equal(answer.ok, false, stdout + stderr);
    assert.equal(answer.killed_by, "user", stdout);
    assert.deepEqual(await p.waitFor("cancelled"), ["started", "cancelled"]);
  },
});

Deno.test({
  name:
    "serve: an MCP client's cancel reaches the server; a tool added by tools/list_changed is withheld until trust",
  ignore,
  async fn() {
    await using p = await ownProject();
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__own__*"]);
    try {
      const stop = new AbortController();
      const slow = client.callTool({ name: "mcp__own__slow", arguments: {} }, undefined, {
        signal: stop.signal,
      });
      assert.deepEqual(await p.waitFor("started"), ["started"]);
      stop.abort();
      await assert.rejects(slow);
      assert.deepEqual(await p.waitFor("cancelled"), ["started", "cancelled"]);

      const grown = await client.callTool({ name: "mcp__own__grow", arguments: {} });
      assert.equal(grown.isError, undefined, JSON.stringify(grown));
      // The server said its tools changed: the gateway lists it again, and its new tool has no pin.
      // (Until it has, the name is unknown: a JSON-RPC error.)
      const callAdded = () =>
        client.callTool({ name: "mcp__own__added", arguments: {} }).catch((error) => error);
      let added = await callAdded();
      for (
        let i = 0;
        i < 30 && !JSON.stringify(added.structuredContent ?? null).includes('"rejected"');
        i++
      ) {
        await new Promise((done) => setTimeout(done, 100));
        added = await callAdded();
      }
      assert.equal(added.isError, true, JSON.stringify(added));
      const refusal = added.structuredContent as { kind: string; message: string };
      assert.equal(refusal.kind, "rejected", JSON.stringify(added));
      assert.match(refusal.message, /toolgate trust/);
      const { tools } = await client.listTools();
      assert.ok(!tools.some((tool) => tool.name === "mcp__own__added"));

      // isError upstream: a failure envelope, its text the message.
      const failed = await client.callTool({ name: "mcp__own__fail", arguments: {} });
      assert.equal(failed.isError, true);
      assert.equal((failed.structuredContent as { kind: string }).kind, "execution_error");
      assert.match(JSON.stringify(failed.content), /it broke/);
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name:
    "list names each tool's server; a server's secret is masked in its answer; the audit line names server and tool",
  ignore,
  async fn() {
    const token = { OWN_TOKEN: "s3cr3t-gateway-value" };
    await using p = await ownProject({ secrets: ["OWN_TOKEN"] }, token);
    const list = await p.run(["list", "--format", "names"], undefined, token);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^mcp__own__leak$/m);
    assert.match(
      list.stderr,
      /^toolgate: MCP server "own" \(node \S+server\.mjs\): mcp__own__slow, mcp__own__leak, mcp__own__grow, mcp__own__fail$/m,
    );

    const leak = await p.run(["call", "mcp__own__leak"], undefined, token);
    assert.equal(leak.code, 0, leak.stdout + leak.stderr);
    assert.ok(!leak.stdout.includes(token.OWN_TOKEN), leak.stdout);
    assert.match(envelope(leak.stdout).content[0].text, /^token=\[REDACTED/);

    const lines: Record<string, unknown>[] = [];
    for await (const file of walkFiles(p.state.path)) {
      if (!file.endsWith(".log")) continue;
      for (const line of (await Deno.readTextFile(file)).trim().split("\n")) lines.push(JSON.parse(line));
    }
    const audited = lines.find((line) => line.tool === "mcp__own__leak");
    assert.ok(audited, JSON.stringify(lines));
    assert.equal(audited.server, "own");
    assert.equal(audited.upstream_tool, "leak");
    assert.equal(audited.outcome, "ok");
  },
});

async function* walkFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* walkFiles(path);
    else if (entry.isFile) yield path;
  }
}

Deno.test({
  name: "a server that cannot start says why in one line: a program not found, a missing secret, a bad URL",
  ignore,
  async fn() {
    await using p = await project({
      gone: { command: "no-such-mcp-server-program" },
      locked: { command: "node", args: ["server.mjs"], secrets: ["LOCKED_TOKEN"] },
    });
    // The manifest is trusted; its servers cannot be pinned, and trust says so with its exit code.
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 1, trust.stdout + trust.stderr);
    assert.match(trust.stdout, /MCP server "gone": not pinned/);
    for (
      const [tool, pattern] of [
        ["mcp__gone__x", /the program no-such-mcp-server-program is not found on PATH/],
        ["mcp__locked__x", /needs the secret LOCKED_TOKEN, which is neither in toolgate's secret store/],
      ] as const
    ) {
      const call = await p.run(["call", tool]);
      assert.equal(call.code, 1, call.stdout + call.stderr);
      assert.ok(!hasStackTrace(call.stdout + call.stderr), call.stderr);
      assert.match(envelope(call.stdout).message, pattern);
      const said = call.stderr.split("\n").filter((line) => pattern.test(line));
      assert.equal(said.length, 1, call.stderr);
    }
    await Deno.writeTextFile(
      join(p.dir.path, "tools.json"),
      JSON.stringify({ tools: [], mcpServers: { web: { url: "ftp://example.com/mcp" } } }),
    );
    const bad = await p.run(["validate"]);
    assert.notEqual(bad.code, 0, bad.stdout + bad.stderr);
    assert.ok(!hasStackTrace(bad.stdout + bad.stderr));
    assert.match(
      bad.stdout + bad.stderr,
      /mcpServers "web": url must be an http or https URL \(got "ftp:\/\/example\.com\/mcp"\)/,
    );
  },
});

Deno.test("a server that dies at once is started at most MAX_STARTS_PER_MINUTE times a minute", async () => {
  await using dir = await tempDir();
  const starts = join(dir.path, "starts.txt");
  const script = join(dir.path, "dies.sh");
  await Deno.writeTextFile(script, `#!/bin/sh\necho start >> ${JSON.stringify(starts)}\nexit 3\n`, {
    mode: 0o755,
  });
  await loadSchemaEngine();
  const loaded = validateManifest(
    { tools: [], mcpServers: { dies: { command: script } } },
    join(dir.path, "tools.json"),
  );
  assert.ok(loaded.ok, JSON.stringify(loaded));
  const manifest = loaded.manifest;
  const server = manifest.servers![0];
  const env = { PATH: "/usr/bin:/bin", HOME: dir.path };
  let clock = 0;
  const upstream = new Upstream({
    server,
    launcher: new ToolLauncher({
      manifest,
      env,
      workspace: dir.path,
      controlPlane: { readOnly: [], hidden: [] },
      sandbox: "off",
    }),
    env,
    workspace: dir.path,
    secret: () => undefined,
    graceMs: 100,
    now: () => clock,
  });
  const count = async () =>
    (await Deno.readTextFile(starts).catch(() => "")).trim().split("\n").filter(Boolean).length;
  try {
    for (let i = 0; i < MAX_STARTS_PER_MINUTE; i++) {
      clock += 1000;
      const error = await upstream.listTools().catch((e) => e);
      assert.ok(error instanceof UpstreamError, String(error));
      assert.match(error.message, /the server did not start/);
      assert.equal(error.retryable, true);
    }
    assert.equal(await count(), MAX_STARTS_PER_MINUTE);
    clock += 1000;
    const capped = await upstream.listTools().catch((e) => e);
    assert.match(String(capped.message), /started 3 times within a minute/);
    assert.equal(await count(), MAX_STARTS_PER_MINUTE, "not started again within the minute");
    // A minute after the first of them, it is started again.
    clock += 60_000;
    await upstream.listTools().catch(() => {});
    assert.equal(await count(), MAX_STARTS_PER_MINUTE + 1);
  } finally {
    await upstream.close();
  }
});

Deno.test("a close refuses a start in flight and every later use at once, and ends a server that ignores SIGTERM", async () => {
  await using dir = await tempDir();
  const seconds = uniqueSleep(3900);
  const script = join(dir.path, "deaf.sh");
  // Never answers initialize, does not end at EOF, ignores SIGTERM: only SIGKILL, after the grace period, ends it.
  await Deno.writeTextFile(script, `#!/bin/sh\ntrap '' TERM\nexec sleep ${seconds}\n`, { mode: 0o755 });
  await loadSchemaEngine();
  const loaded = validateManifest(
    { tools: [], mcpServers: { deaf: { command: script, startTimeoutSec: 120 } } },
    join(dir.path, "tools.json"),
  );
  assert.ok(loaded.ok, JSON.stringify(loaded));
  const env = { PATH: "/usr/bin:/bin", HOME: dir.path };
  const upstream = new Upstream({
    server: loaded.manifest.servers![0],
    launcher: new ToolLauncher({
      manifest: loaded.manifest,
      env,
      workspace: dir.path,
      controlPlane: { readOnly: [], hidden: [] },
      sandbox: "off",
    }),
    env,
    workspace: dir.path,
    secret: () => undefined,
    graceMs: 10_000,
  });
  try {
    const listed = upstream.listTools().catch((error) => error);
    await until(() => upstream.pid !== undefined, "the server's process started", 10_000);
    const closing = upstream.close();
    // Before, the start waited for the server's end (the grace period, SIGKILL): a caller waited with it.
    const refused = await within(listed, 3_000, "the refusal of the start closed meanwhile");
    assert.ok(refused instanceof UpstreamError, String(refused));
    assert.match(refused.message, /toolgate is ending/);
    await assert.rejects(
      within(upstream.callTool("any", {}, { timeoutMs: 60_000 }), 3_000, "the refusal of a call"),
      /toolgate is ending/,
    );
    // The close itself ends the tree (SIGKILL once the grace period is over) and says it left nothing.
    assert.equal(await within(closing, 60_000, "the close"), undefined);
    assert.deepEqual(await pgrep(`sleep ${seconds}`), []);
  } finally {
    killAll(await pgrep(`sleep ${seconds}`));
  }
});
