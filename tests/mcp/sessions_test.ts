/**
 * `toolgate serve --http` under load and misuse (issue 11, item 4), over real HTTP on loopback with the SDK's
 * client: a client that disconnects mid-call ends that call's tree within a second; one session's long call does
 * not hold up another's; the caps on calls in flight hold; a foreign Origin gets 403; sessions are capped and
 * expire when idle; and approval through MCP elicitation.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { killLeftovers, parsePids, scratch, waitForFile, waitGone } from "../executor_helpers.ts";
import { hasStackTrace } from "../support.ts";
import { connectHttp, envelopeOf, SESSIONS_MANIFEST, startHttp, TOKEN } from "./helpers.ts";

const ENV = { TOOLGATE_MCP_TOKEN: TOKEN };

/** `toolgate serve --http 0` over the sessions fixture. */
const serve = (extra: readonly string[], cwd: string) => startHttp(extra, cwd, ENV, SESSIONS_MANIFEST);

interface Interval {
  readonly start: number;
  readonly end: number;
}

/** The most intervals that overlap at one moment (one that ends when another starts does not overlap it). */
function maxOverlap(intervals: readonly Interval[]): number {
  const events = intervals.flatMap((i) => [[i.start, 1], [i.end, -1]] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, step] of events) most = Math.max(most, now += step);
  return most;
}

const napOf = (result: Record<string, unknown>) => result.structuredContent as unknown as Interval;

Deno.test("serve --http: a client that disconnects mid-call cancels it; its tree is gone within a second", async () => {
  await using dir = await scratch();
  // `tree` writes its pids to the workspace: read-only by its flag, it needs approval all the same (issue 24).
  await using server = await serve(["--allow-tools", "tree"], dir.path);
  const connected = await connectHttp(server.url, TOKEN);
  // The call's answer never comes: the client goes away. Its rejection is expected.
  const call = connected.client.callTool({ name: "tree", arguments: {} }).catch(() => "gone");
  const pids = parsePids(await waitForFile(join(dir.path, "pids"), 20_000));
  try {
    // The client's transport closes its connections: no cancellation, no DELETE, as when a client crashes.
    await connected.transport.close();
    assert.equal(await call, "gone");
    assert.deepEqual(await waitGone(pids, 1000), [], `still alive a second after the disconnect: ${pids}`);
  } finally {
    killLeftovers(pids);
  }
  // The server goes on serving others.
  await using other = await connectHttp(server.url, TOKEN);
  const echo = await other.client.callTool({ name: "echo", arguments: { text: "still here" } });
  assert.deepEqual(echo.structuredContent, { echo: { text: "still here" } });
  assert.ok(!hasStackTrace(server.stderr()), server.stderr());
});

Deno.test("serve --http: one session's long call that is not concurrent does not hold up another session", async () => {
  await using dir = await scratch();
  await using server = await serve(["--allow-tools", "hold"], dir.path);
  await using first = await connectHttp(server.url, TOKEN);
  await using second = await connectHttp(server.url, TOKEN);
  const started = performance.now();
  const held = first.client.callTool({ name: "hold", arguments: { seconds: 4 } });
  await waitForFile(join(dir.path, "hold.started"), 20_000);
  // In the same session a later call waits its turn behind the call that runs alone...
  const sameSession = first.client.callTool({ name: "echo", arguments: { text: "after" } })
    .then(() => performance.now() - started);
  // ...while another session's read-only call runs at once.
  const quick = performance.now();
  const other = await second.client.callTool({ name: "echo", arguments: { text: "now" } });
  const otherMs = performance.now() - quick;
  assert.deepEqual(other.structuredContent, { echo: { text: "now" } });
  assert.ok(otherMs < 2000, `the other session waited ${Math.round(otherMs)} ms`);
  assert.deepEqual((await held).structuredContent, { held: 4 });
  assert.ok(await sameSession >= 3900, "the same session's later call waited for the long one");
});

Deno.test("serve --http: --max-session-calls and --max-calls cap the calls in flight; the rest wait their turn", async () => {
  await using dir = await scratch();
  await using server = await serve(["--max-session-calls", "2", "--max-calls", "3"], dir.path);
  await using first = await connectHttp(server.url, TOKEN);
  await using second = await connectHttp(server.url, TOKEN);
  const nap = (connected: typeof first, id: number) =>
    connected.client.callTool({ name: "nap", arguments: { seconds: 1, id } }).then(napOf);
  // One session, four calls: two at a time.
  const alone = await Promise.all([1, 2, 3, 4].map((id) => nap(first, id)));
  assert.equal(maxOverlap(alone), 2, JSON.stringify(alone));
  // Two sessions, three calls each: each session two at a time, the server three at a time; every call answered.
  const both = await Promise.all([
    ...[1, 2, 3].map((id) => nap(first, id)),
    ...[4, 5, 6].map((id) => nap(second, id)),
  ]);
  assert.equal(both.length, 6);
  assert.equal(maxOverlap(both), 3, JSON.stringify(both));
  // A call waiting its turn can be cancelled: it never starts, and the line moves on.
  const busy = [nap(first, 7), nap(first, 8)];
  const controller = new AbortController();
  const waiting = first.client.callTool({ name: "nap", arguments: { seconds: 1, id: 9 } }, undefined, {
    signal: controller.signal,
  }).then(() => "answered", () => "cancelled");
  controller.abort();
  assert.equal(await waiting, "cancelled");
  await Promise.all(busy);
  const after = await nap(first, 10);
  assert.ok(after.end > after.start);
});

Deno.test("serve --http: a browser Origin of another site gets 403; this host, loopback or no Origin pass", async () => {
  await using dir = await scratch();
  await using server = await serve([], dir.path);
  const initialize = (origin?: string) =>
    fetch(server.url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        Authorization: `Bearer ${TOKEN}`,
        ...(origin === undefined ? {} : { Origin: origin }),
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
  for (const origin of ["https://evil.example", "http://127.0.0.1.evil.example:1234", "null", "file://"]) {
    const response = await initialize(origin);
    assert.equal(response.status, 403, origin);
    assert.match((await response.json()).error.message, /Origin/);
  }
  for (
    const origin of [
      undefined,
      `http://127.0.0.1:${server.url.port}`,
      "http://localhost:5173",
      "http://[::1]",
    ]
  ) {
    const response = await initialize(origin);
    assert.equal(response.status, 200, String(origin));
    await response.body?.cancel();
    const id = response.headers.get("mcp-session-id");
    assert.ok(id);
    const closed = await fetch(server.url, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${TOKEN}`, "Mcp-Session-Id": id },
    });
    await closed.body?.cancel();
  }
});

Deno.test("serve --http: --max-sessions refuses more sessions (503); --session-idle closes idle ones, never one with a call in flight", async () => {
  await using dir = await scratch();
  await using server = await serve(
    ["--max-sessions", "2", "--session-idle", "1", "--allow-tools", "hold"],
    dir.path,
  );
  const first = await connectHttp(server.url, TOKEN);
  await using second = await connectHttp(server.url, TOKEN);
  await assert.rejects(connectHttp(server.url, TOKEN), /503|Too many sessions/);
  // Closing a session frees its place.
  await first.transport.terminateSession();
  await first.client.close();
  await using third = await connectHttp(server.url, TOKEN);
  // A call longer than the idle limit keeps its session alive to its end.
  const held = await third.client.callTool({ name: "hold", arguments: { seconds: 2 } });
  assert.deepEqual(held.structuredContent, { held: 2 });
  // Past the idle limit, both sessions are gone: their next request is refused.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await assert.rejects(second.client.listTools(), /404|Session not found/);
  await assert.rejects(third.client.listTools(), /404|Session not found/);
  // And their places are free again.
  await using fourth = await connectHttp(server.url, TOKEN);
  await using fifth = await connectHttp(server.url, TOKEN);
  assert.equal((await fourth.client.listTools()).tools.length, 6);
  assert.equal((await fifth.client.listTools()).tools.length, 6);
});

Deno.test("serve --http: approval through MCP elicitation: the client's user approves, denies, or approves always", async () => {
  await using dir = await scratch();
  await using server = await serve([], dir.path);
  const answers: ("accept" | "accept-always" | "decline")[] = [];
  const asked: string[] = [];
  await using connected = await connectHttp(server.url, TOKEN, {
    capabilities: { elicitation: {} },
    setup: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(String(request.params.message));
        const answer = answers.shift() ?? "decline";
        if (answer === "decline") return { action: "decline" };
        return { action: "accept", content: { always: answer === "accept-always" } };
      }),
  });
  const { client } = connected;
  const notes = join(dir.path, "notes");

  await (async function approved() {
    answers.push("accept");
    const result = await client.callTool({ name: "note", arguments: { text: "one", path: "notes.md" } });
    assert.deepEqual(result.structuredContent, { written: true });
    assert.equal(asked.length, 1);
    const lines = asked[0].split("\n");
    assert.equal(lines[0], "toolgate: the model asks to run note: it may write the workspace.");
    assert.equal(lines[1], '  path: "notes.md"', "the risky field first");
    assert.ok(asked[0].endsWith("Run note?"));
  })();

  await (async function denied() {
    answers.push("decline");
    const result = await client.callTool({ name: "note", arguments: { text: "two" } });
    const envelope = envelopeOf(result);
    assert.equal(envelope.kind, "user_denied");
    assert.equal(envelope.retryable, false);
    assert.equal(asked.length, 2);
    assert.equal((await Deno.readTextFile(notes)).split("\n").filter((l) => l !== "").length, 1);
  })();

  await (async function egressAsks() {
    // A read-only tool with the network asks too.
    answers.push("decline");
    const result = await client.callTool({ name: "net_echo", arguments: {} });
    assert.equal(envelopeOf(result).kind, "user_denied");
    assert.match(asked[2], /it can send data off the machine/);
  })();

  await (async function always() {
    answers.push("accept-always");
    await client.callTool({ name: "note", arguments: { text: "three" } });
    await client.callTool({ name: "note", arguments: { text: "four" } });
    assert.equal(asked.length, 4, "always: the second call was not asked about");
    assert.equal((await Deno.readTextFile(notes)).split("\n").filter((l) => l !== "").length, 3);
  })();

  // A client that did not declare elicitation is not asked: the call is rejected, naming the flags.
  await using plain = await connectHttp(server.url, TOKEN);
  const refused = envelopeOf(await plain.client.callTool({ name: "net_echo", arguments: {} }));
  assert.equal(refused.kind, "rejected");
  assert.match(String(refused.message), /did not declare the elicitation capability/);
  assert.match(String(refused.message), /--allow-tools net_echo/);
  // "always" belongs to the session that said it.
  assert.equal(
    envelopeOf(await plain.client.callTool({ name: "note", arguments: { text: "x" } })).kind,
    "rejected",
  );
});
