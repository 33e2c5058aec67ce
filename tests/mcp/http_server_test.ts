/** `toolgate serve --http`: the bearer token, the SDK's client over Streamable HTTP, cancellation and shutdown. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { bearerCheck } from "../../src/mcp/http_gates.ts";
import { hasStackTrace } from "../support.ts";
import { killLeftovers, parsePids, scratch, waitForFile, waitGone } from "../executor_helpers.ts";
import { connectHttp, envelopeOf, serveToEnd, SESSIONS_MANIFEST, startHttp, TOKEN } from "./helpers.ts";

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};

/** A POST of the initialize request with the given Authorization header (none when `undefined`). */
function post(url: URL, authorization?: string): Promise<Response> {
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
  };
  if (authorization !== undefined) headers.Authorization = authorization;
  return fetch(url, { method: "POST", headers, body: JSON.stringify(INITIALIZE) });
}

Deno.test("bearerCheck: the exact token passes; a missing, wrong, longer or differently schemed one does not", () => {
  const check = bearerCheck("s3cret");
  assert.equal(check("Bearer s3cret"), true);
  assert.equal(check("bearer   s3cret"), true);
  assert.equal(check(null), false);
  assert.equal(check(""), false);
  assert.equal(check("Bearer "), false);
  assert.equal(check("Bearer s3cre"), false);
  assert.equal(check("Bearer s3cret2"), false);
  assert.equal(check("Basic s3cret"), false);
  assert.equal(check("s3cret"), false);
});

Deno.test("serve --http without a token does not start: a usage error, exit 2", async () => {
  const { code, stderr: text } = await serveToEnd(["--http", "0"]);
  assert.equal(code, 2, text);
  assert.match(text, /TOOLGATE_MCP_TOKEN/);
  assert.ok(!hasStackTrace(text), text);
});

Deno.test("serve --http: the token is required, and the SDK's client lists, calls and cancels", async (t) => {
  await using dir = await scratch();
  // `tree` writes its pids to the workspace: read-only by its flag, it needs approval all the same (issue 24).
  await using server = await startHttp(["--allow-tools", "tree"], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN });
  assert.equal(server.url.hostname, "127.0.0.1");
  assert.equal(server.url.pathname, "/mcp");

  await t.step("a request without the token is refused: 401", async () => {
    const response = await post(server.url);
    assert.equal(response.status, 401);
    assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer/);
    const body = await response.json();
    assert.equal(body.error.code, -32001);
  });

  await t.step("a request with a wrong token is refused: 401", async () => {
    const wrong = await post(server.url, "Bearer not-the-token");
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();
    const prefix = await post(server.url, `Bearer ${TOKEN.slice(0, -1)}`);
    assert.equal(prefix.status, 401);
    await prefix.body?.cancel();
  });

  await t.step("the SDK's client with the token: list and call", async () => {
    await using connected = await connectHttp(server.url, TOKEN);
    const { tools } = await connected.client.listTools();
    assert.equal(tools.length, 7);
    assert.deepEqual(tools.find((tool) => tool.name === "net_echo")?.annotations?.openWorldHint, true);
    const result = await connected.client.callTool({ name: "echo", arguments: { text: "over http" } });
    assert.deepEqual(result.structuredContent, { echo: { text: "over http" } });
    const failed = await connected.client.callTool({ name: "note", arguments: { text: "x" } });
    assert.equal(failed.isError, true);
    assert.deepEqual(connected.protocolErrors, []);
  });

  await t.step("progress and cancellation over HTTP: the cancelled tool's tree is gone", async () => {
    await using connected = await connectHttp(server.url, TOKEN);
    const controller = new AbortController();
    const updates: number[] = [];
    const call = connected.client.callTool({ name: "tree", arguments: {} }, undefined, {
      signal: controller.signal,
      onprogress: (update) => void updates.push(update.progress),
    });
    const outcome = call.then(() => "answered", () => "rejected");
    const pids = parsePids(await waitForFile(join(dir.path, "pids"), 20_000));
    try {
      // Wait for one progress notification on the request's stream, then cancel.
      const deadline = performance.now() + 10_000;
      while (updates.length === 0 && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(updates.length > 0, "no progress notification within 10 s");
      controller.abort();
      assert.equal(await outcome, "rejected");
      assert.deepEqual(await waitGone(pids, 10_000), [], `still alive: ${pids}`);
    } finally {
      killLeftovers(pids);
      await Deno.remove(join(dir.path, "pids")).catch(() => {});
    }
  });

  await t.step("SIGTERM stops the server and ends a running tool's tree", async () => {
    await using connected = await connectHttp(server.url, TOKEN);
    // The answer may not go out (the process exits once the trees are gone); closing the client settles the call.
    const call = connected.client.callTool({ name: "tree", arguments: {} }).catch(() => undefined);
    const pids = parsePids(await waitForFile(join(dir.path, "pids"), 20_000));
    try {
      const code = await server.stop();
      assert.equal(code, 143, server.stderr());
      assert.deepEqual(await waitGone(pids, 5000), [], `still alive: ${pids}`);
    } finally {
      killLeftovers(pids);
    }
    assert.ok(!hasStackTrace(server.stderr()), server.stderr());
    await connected.client.close();
    await call;
  });
});

Deno.test("serve --http: --token serves as well as the environment, and other paths are 404", async () => {
  await using dir = await scratch();
  await using server = await startHttp(["--token", "flag-token"], dir.path);
  const refused = await post(server.url, `Bearer ${TOKEN}`);
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
  const other = await fetch(new URL("/elsewhere", server.url), {
    headers: { Authorization: "Bearer flag-token" },
  });
  assert.equal(other.status, 404);
  await other.body?.cancel();
  await using connected = await connectHttp(server.url, "flag-token");
  const result = await connected.client.callTool({ name: "echo", arguments: { text: "flag" } });
  assert.deepEqual(result.structuredContent, { echo: { text: "flag" } });
});

Deno.test("serve --http: SIGTERM answers a call in flight (unavailable, cancelled), ends its tree, exits 143", async () => {
  await using dir = await scratch();
  // `tree` writes its pids to the workspace: read-only by its flag, it needs approval all the same (issue 24).
  const server = await startHttp(["--allow-tools", "tree"], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN });
  let pids: number[] = [];
  try {
    await using connected = await connectHttp(server.url, TOKEN);
    const call = connected.client.callTool({ name: "tree", arguments: {} });
    pids = parsePids(await waitForFile(join(dir.path, "pids"), 20_000));
    const code = server.stop();
    const result = await call as Record<string, unknown>;
    assert.equal(result.isError, true);
    const envelope = envelopeOf(result);
    assert.equal(envelope.kind, "unavailable");
    assert.equal(envelope.cancelled, true);
    assert.equal(await code, 143, server.stderr());
    assert.deepEqual(await waitGone(pids, 5000), []);
  } finally {
    killLeftovers(pids);
    await server.stop();
  }
});

Deno.test("serve --http: a tool that may have acted when SIGTERM stopped it is answered unavailable with no retry invited", async () => {
  await using dir = await scratch();
  const server = await startHttp(
    ["--allow-tools", "hold"],
    dir.path,
    { TOOLGATE_MCP_TOKEN: TOKEN },
    SESSIONS_MANIFEST,
  );
  try {
    await using connected = await connectHttp(server.url, TOKEN);
    // hold writes a file, then sleeps: it has acted by the time the server stops.
    const call = connected.client.callTool({ name: "hold", arguments: { seconds: 30 } });
    await waitForFile(join(dir.path, "hold.started"), 20_000);
    const code = server.stop();
    const envelope = envelopeOf(await call as Record<string, unknown>);
    assert.equal(envelope.kind, "unavailable");
    assert.equal(envelope.cancelled, true);
    assert.equal(envelope.retryable, false);
    assert.match(String(envelope.message), /may have acted/);
    assert.equal(await code, 143, server.stderr());
  } finally {
    await server.stop();
  }
});
