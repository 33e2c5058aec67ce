/**
 * `serve --http`: a session's call answered at once goes out as one JSON body; a call still running after a moment,
 * or one that sends anything before its answer, as the event stream it always was (a priming event first, so that
 * it can be resumed). Raw HTTP, so that the form of each answer shows.
 */
import assert from "node:assert/strict";
import { scratch } from "../executor_helpers.ts";
import { SESSIONS_MANIFEST, startHttp, TOKEN } from "./helpers.ts";
import { QUICK_ANSWER_MS } from "../../src/mcp/session_transport.ts";

const VERSION = "2025-11-25";

function post(url: URL, session: string | undefined, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${TOKEN}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": VERSION,
      ...(session === undefined ? {} : { "Mcp-Session-Id": session }),
    },
    body: JSON.stringify(body),
  });
}

/** `serve --http` over the sessions fixture, its `nap` tool allowed without asking. */
function serveNap(cwd: string, extra: readonly string[] = []) {
  return startHttp(["--allow-tools", "nap", ...extra], cwd, { TOOLGATE_MCP_TOKEN: TOKEN }, SESSIONS_MANIFEST);
}

/** Opens a session (initialize, then initialized) and returns its id. */
async function open(url: URL): Promise<string> {
  const opened = await post(url, undefined, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } },
  });
  const id = opened.headers.get("mcp-session-id");
  const said = await opened.text();
  assert.ok(id !== null, `no session: ${opened.status} ${said}`);
  const noted = await post(url, id, { jsonrpc: "2.0", method: "notifications/initialized" });
  assert.equal(noted.status, 202);
  await noted.body?.cancel();
  return id;
}

/** The `data` of each event of an SSE text, parsed (the priming event's empty data left out). */
function events(text: string): { id?: string; data?: Record<string, unknown> }[] {
  return text.split("\n\n").filter((event) => event.trim() !== "").map((event) => {
    const lines = event.split("\n");
    const id = lines.find((line) => line.startsWith("id: "))?.slice(4);
    const data = lines.filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim()).join(
      "",
    );
    return { id, data: data === "" ? undefined : JSON.parse(data) };
  });
}

Deno.test("serve --http: a call answered at once is one JSON body; a longer one, a resumable event stream", async (t) => {
  await using dir = await scratch();
  await using server = await serveNap(dir.path);
  const session = await open(server.url);

  await t.step("tools/list: application/json, the session's id beside it", async () => {
    const response = await post(server.url, session, { jsonrpc: "2.0", id: 1, method: "tools/list" });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.equal(response.headers.get("mcp-session-id"), session);
    const body = await response.json();
    assert.equal(body.id, 1);
    assert.ok(body.result.tools.some((tool: { name: string }) => tool.name === "echo"));
  });

  await t.step("a batch of two requests: both answers, in one JSON array", async () => {
    const response = await post(server.url, session, [
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      { jsonrpc: "2.0", id: 3, method: "ping" },
    ]);
    assert.equal(response.headers.get("content-type"), "application/json");
    const body = await response.json();
    assert.ok(Array.isArray(body), JSON.stringify(body));
    assert.deepEqual(body.map((answer: { id: number }) => answer.id).sort(), [2, 3]);
    assert.deepEqual(body.find((answer: { id: number }) => answer.id === 3).result, {});
  });

  await t.step(
    "a call that runs past the moment: an event stream, priming event first, then the answer",
    async () => {
      const seconds = (QUICK_ANSWER_MS + 1000) / 1000;
      const started = performance.now();
      const response = await post(server.url, session, {
        jsonrpc: "2.0",
        id: 4,
        method: "tools/call",
        params: { name: "nap", arguments: { seconds } },
      });
      // The headers came when the moment was over, well before the answer.
      const headersAfter = performance.now() - started;
      assert.equal(response.headers.get("content-type"), "text/event-stream");
      assert.ok(headersAfter < seconds * 1000, `headers after ${headersAfter} ms`);
      const stream = events(await response.text());
      assert.ok(stream[0].id !== undefined && stream[0].data === undefined, JSON.stringify(stream));
      const answer = stream.at(-1)!.data!;
      assert.equal(answer.id, 4);
      assert.equal((answer.result as { isError?: boolean }).isError ?? false, false, JSON.stringify(answer));
    },
  );

  await t.step(
    "a call that sends progress before its answer: the progress and the answer, streamed",
    async () => {
      const response = await post(server.url, session, {
        jsonrpc: "2.0",
        id: 5,
        method: "tools/call",
        params: { name: "nap", arguments: { seconds: 1.6 }, _meta: { progressToken: "p5" } },
      });
      assert.equal(response.headers.get("content-type"), "text/event-stream");
      const stream = events(await response.text()).flatMap((event) =>
        event.data === undefined ? [] : [event.data]
      );
      assert.equal(stream.at(-1)?.id, 5);
      const progress = stream.filter((message) => message.method === "notifications/progress");
      assert.ok(progress.length >= 1, JSON.stringify(stream));
      assert.equal((progress[0].params as { progressToken: string }).progressToken, "p5");
    },
  );

  const closed = await fetch(server.url, {
    method: "DELETE",
    headers: { Authorization: `Bearer ${TOKEN}`, "Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION },
  });
  await closed.body?.cancel();
});

Deno.test("serve --http: a client that stops reading a call's stream cancels the call and holds nothing: its session idles out", async () => {
  await using dir = await scratch();
  await using server = await serveNap(dir.path, ["--session-idle", "1"]);
  const session = await open(server.url);
  const call = await post(server.url, session, {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "nap", arguments: { seconds: 20 } },
  });
  assert.equal(call.headers.get("content-type"), "text/event-stream");
  await call.body?.cancel();
  // The nap is cancelled, so nothing is in flight: past the idle limit (1 s, swept every quarter of it) the
  // session is closed. Nothing is sent meanwhile: a request would keep it alive.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const probe = await post(server.url, session, { jsonrpc: "2.0", id: 2, method: "ping" });
  assert.equal(probe.status, 404, await probe.text());
});

Deno.test("serve --http: a POST that is not JSON-RPC, a batch over 100 or an id in flight reaches no handler: 400", async () => {
  await using dir = await scratch();
  await using server = await serveNap(dir.path);
  const session = await open(server.url);
  const refusedWith = async (body: unknown) => {
    const response = await post(server.url, session, body);
    return { status: response.status, body: await response.json() };
  };
  for (
    const wrong of [
      { jsonrpc: "1.0", id: 1, method: "tools/list" },
      { jsonrpc: "2.0", id: { nested: true }, method: "tools/list" },
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: "not an object" },
      [],
      [{ jsonrpc: "2.0", id: 1, method: "ping" }, "not a message"],
    ]
  ) {
    const { status, body } = await refusedWith(wrong);
    assert.equal(status, 400, JSON.stringify(wrong));
    assert.equal(body.error.code, -32700, JSON.stringify(body));
  }
  const batch = Array.from({ length: 101 }, (_, id) => ({ jsonrpc: "2.0", id, method: "ping" }));
  const { status, body } = await refusedWith(batch);
  assert.equal(status, 400);
  assert.match(body.error.message, /Batch must not exceed 100/);
  // An id twice in one batch, or one still in flight: the answer to the other request is not to be taken.
  const twice = await refusedWith([{ jsonrpc: "2.0", id: 8, method: "ping" }, {
    jsonrpc: "2.0",
    id: 8,
    method: "ping",
  }]);
  assert.equal(twice.status, 400);
  assert.match(twice.body.error.message, /id 8 is already in flight/);
  const napping = post(server.url, session, {
    jsonrpc: "2.0",
    id: 9,
    method: "tools/call",
    params: { name: "nap", arguments: { seconds: 1 } },
  });
  await new Promise((resolve) => setTimeout(resolve, 100));
  const again = await refusedWith({ jsonrpc: "2.0", id: 9, method: "ping" });
  assert.equal(again.status, 400);
  assert.match(again.body.error.message, /id 9 is already in flight/);
  const napped = await (await napping).text();
  assert.match(napped, /"id":9/);
  // The session is unharmed: a good request is answered.
  const fine = await post(server.url, session, { jsonrpc: "2.0", id: 7, method: "ping" });
  assert.deepEqual(await fine.json(), { jsonrpc: "2.0", id: 7, result: {} });
});
