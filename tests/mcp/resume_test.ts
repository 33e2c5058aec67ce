/**
 * Resumable SSE streams of `toolgate serve --http` (issue 27): a call's stream that the server closes mid-call
 * (`--sse-poll`) is resumed by the SDK's client with `Last-Event-ID`, and the answer arrives once; an event id is
 * the session's own (another session cannot resume with it); the event store's memory is bounded and goes with
 * its session.
 *
 * @module
 */
import assert from "node:assert/strict";
import { scratch } from "../executor_helpers.ts";
import { SessionEventStore } from "../../src/mcp/event_store.ts";
import { connectHttp, SESSIONS_MANIFEST, startHttp, TOKEN } from "./helpers.ts";

const ENV = { TOOLGATE_MCP_TOKEN: TOKEN };

/** What a client's fetch saw: each request's method, JSON-RPC method and Last-Event-ID; each SSE message. */
interface Seen {
  readonly requests: { method: string; rpc?: string; lastEventId: string | null }[];
  readonly messages: { id?: unknown; result?: unknown; method?: string }[];
}

/** A fetch that records what goes out and the JSON-RPC messages that come back on SSE streams. */
function recordingFetch(seen: Seen): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const body = request.method === "POST" ? await request.clone().text() : "";
    seen.requests.push({
      method: request.method,
      rpc: body === "" ? undefined : JSON.parse(body).method,
      lastEventId: request.headers.get("last-event-id"),
    });
    const response = await fetch(request);
    if (!response.headers.get("content-type")?.startsWith("text/event-stream") || response.body === null) {
      return response;
    }
    const [mine, theirs] = response.body.tee();
    void (async () => {
      let text = "";
      try {
        for await (const chunk of mine.pipeThrough(new TextDecoderStream())) {
          text += chunk;
          for (let end = text.indexOf("\n\n"); end !== -1; end = text.indexOf("\n\n")) {
            const data = text.slice(0, end).split("\n").filter((line) => line.startsWith("data:"))
              .map((line) => line.slice(5).trim()).join("");
            text = text.slice(end + 2);
            if (data !== "" && data !== "{}") seen.messages.push(JSON.parse(data));
          }
        }
      } catch {
        // The stream was cancelled: what was read is recorded.
      }
    })();
    return new Response(theirs, { status: response.status, headers: response.headers });
  };
}

Deno.test("serve --http --sse-poll: a call's stream closed mid-call is resumed with Last-Event-ID; the answer arrives once", async () => {
  await using dir = await scratch();
  await using server = await startHttp(["--sse-poll", "0.3"], dir.path, ENV, SESSIONS_MANIFEST);
  const seen: Seen = { requests: [], messages: [] };
  await using connected = await connectHttp(server.url, TOKEN, { fetch: recordingFetch(seen) });
  const progress: number[] = [];
  const result = await connected.client.callTool({ name: "nap", arguments: { seconds: 1.5 } }, undefined, {
    onprogress: (event) => void progress.push(event.progress),
    timeout: 30_000,
  });
  const nap = result.structuredContent as { start: number; end: number };
  assert.ok(nap.end - nap.start >= 1400, `the tool ran its whole nap: ${JSON.stringify(nap)}`);
  // One POST ran the tool; the answer came over a GET that named the last event the client had.
  assert.equal(seen.requests.filter((r) => r.rpc === "tools/call").length, 1);
  const resumes = seen.requests.filter((r) => r.method === "GET" && r.lastEventId !== null);
  assert.ok(resumes.length >= 1, `the client resumed: ${JSON.stringify(seen.requests)}`);
  const answers = seen.messages.filter((m) => m.result !== undefined && m.method === undefined);
  const callAnswers = answers.filter((m) => (m.result as { structuredContent?: unknown }).structuredContent);
  assert.equal(callAnswers.length, 1, `one answer, not a duplicate: ${JSON.stringify(answers)}`);
  // Progress (the server's heartbeat) only grows: nothing was replayed twice.
  assert.deepEqual(progress, [...progress].sort((a, b) => a - b));
  assert.equal(new Set(progress).size, progress.length);
  assert.deepEqual(connected.protocolErrors, []);
});

Deno.test("serve --http: an event id resumes only its own session's stream; another session's id is refused", async () => {
  await using dir = await scratch();
  await using server = await startHttp(["--sse-poll", "0.3"], dir.path, ENV, SESSIONS_MANIFEST);
  const seenA: Seen = { requests: [], messages: [] };
  await using a = await connectHttp(server.url, TOKEN, { fetch: recordingFetch(seenA) });
  await using b = await connectHttp(server.url, TOKEN);
  await a.client.callTool({ name: "nap", arguments: { seconds: 1 } }, undefined, { timeout: 30_000 });
  const eventId = seenA.requests.find((r) => r.lastEventId !== null)?.lastEventId;
  assert.ok(eventId, "session A resumed with an event id");
  const resume = (sessionId: string | undefined) =>
    fetch(server.url, {
      headers: {
        authorization: `Bearer ${TOKEN}`,
        accept: "text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        "last-event-id": eventId,
        ...(sessionId === undefined ? {} : { "mcp-session-id": sessionId }),
      },
    });
  // Session B names A's event: B's store never held it.
  const foreign = await resume(b.transport.sessionId);
  assert.equal(foreign.status, 400, await foreign.text());
  // No session, or a made-up one: no stream either.
  const none = await resume(undefined);
  assert.equal(none.status, 400);
  await none.body?.cancel();
  const madeUp = await resume(crypto.randomUUID());
  assert.equal(madeUp.status, 404);
  await madeUp.body?.cancel();
  // A's own session knows the id: it replays the rest (the answer, once), or says 409 while A's client still
  // holds the resumed stream (it does when the answer was replayed to it, which depends on timing).
  const own = await resume(a.transport.sessionId);
  assert.ok(own.status === 200 || own.status === 409, `A's own resume: ${own.status}`);
  if (own.status === 200) {
    const reader = own.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes('"result"')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    await reader.cancel();
    assert.equal(text.split('"structuredContent"').length - 1, 1, text);
  } else await own.body?.cancel();
  // After A's session ends, its events are gone: nobody resumes from them.
  const sessionA = a.transport.sessionId;
  await a.transport.terminateSession();
  const after = await resume(sessionA);
  assert.equal(after.status, 404);
  await after.body?.cancel();
});

Deno.test("SessionEventStore: bounded per stream, per session and in bytes; an evicted id is refused; clear keeps nothing", () => {
  const store = new SessionEventStore({ perStream: 5, perSession: 8, bytesPerSession: 2_000 });
  const note = (n: number) => ({ jsonrpc: "2.0" as const, method: "notifications/message", params: { n } });
  const first = store.store("a", note(0));
  const ids = [first];
  for (let n = 1; n < 20; n++) ids.push(store.store("a", note(n)));
  assert.equal(store.size, 5);
  assert.equal(store.streamOf(first), undefined, "an evicted event cannot be resumed from");
  assert.deepEqual(store.after(first), []);
  // What is kept after a kept id is whole: the stream's last five, in order.
  const replayed = store.after(ids[15]).map(([id]) => id);
  assert.deepEqual(replayed, ids.slice(16));
  // Many streams: the session's cap holds, oldest first.
  for (let s = 0; s < 50; s++) store.store(`s${s}`, note(s));
  assert.equal(store.size, 8);
  // Bytes: a big message pushes the oldest out; the newest stays even alone over the cap.
  store.store("big", { jsonrpc: "2.0", id: 1, result: { text: "x".repeat(5_000) } });
  assert.equal(store.size, 1);
  assert.ok(store.bytes > 2_000);
  store.store("small", note(1));
  assert.equal(store.size, 1, "the big one went once it was not the newest");
  store.clear();
  assert.equal(store.size, 0);
  store.store("late", note(2));
  assert.equal(store.size, 0, "a closed session keeps nothing");
});
