import assert from "node:assert/strict";
import { AgentError } from "../../src/agent/errors.ts";
import { readSse, readStreamedTurn, StreamAssembler } from "../../src/agent/sse.ts";

const encoder = new TextEncoder();

/** A byte stream delivering `pieces` one read at a time. */
function streamOf(...pieces: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece));
      controller.close();
    },
  });
}

async function events(stream: ReadableStream<Uint8Array>) {
  const out = [];
  for await (const event of readSse(stream)) out.push(event);
  return out;
}

Deno.test("sse: events split anywhere across chunks come out whole", async () => {
  const text = 'data: {"a":1}\n\nevent: ping\ndata: x\n\ndata: last\n\n';
  for (let cut = 1; cut < text.length; cut++) {
    const got = await events(streamOf(text.slice(0, cut), text.slice(cut)));
    assert.deepEqual(got, [
      { event: "message", data: '{"a":1}' },
      { event: "ping", data: "x" },
      { event: "message", data: "last" },
    ], `cut at ${cut}`);
  }
});

Deno.test("sse: CRLF and CR line ends, comments, multi-line data, no space after the colon", async () => {
  const got = await events(streamOf(": keep-alive\r\n", "data:one\r\ndata: two\r", "\n\r\ndata: three\r\r"));
  assert.deepEqual(got, [{ event: "message", data: "one\ntwo" }, { event: "message", data: "three" }]);
});

Deno.test("sse: a multi-byte character split between chunks survives", async () => {
  const bytes = encoder.encode("data: héllo ✓\n\n");
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
      controller.close();
    },
  });
  assert.deepEqual(await events(stream), [{ event: "message", data: "héllo ✓" }]);
});

Deno.test("sse: a last event without its blank line still counts", async () => {
  assert.deepEqual(await events(streamOf("data: end")), [{ event: "message", data: "end" }]);
});

Deno.test("sse: a stream that goes quiet fails after the idle timeout", async () => {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode("data: a\n\n"));
    },
  });
  const error = await (async () => {
    for await (const _ of readSse(stream, { idleTimeoutMs: 50 })) { /* drain */ }
  })().then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.match(error.message, /went quiet/);
});

Deno.test("sse: comments alone do not keep a stream alive: no event data for the idle timeout fails", async () => {
  let timer: ReturnType<typeof setInterval> | undefined;
  let giveUp: ReturnType<typeof setTimeout> | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode("data: first\n\n"));
      // A keep-alive comment, an event with no data and a stray field every 20 ms, for 3 s.
      timer = setInterval(() => controller.enqueue(encoder.encode(": ping\n\nevent: x\n\nid: 1\n")), 20);
      giveUp = setTimeout(() => {
        clearInterval(timer);
        controller.close();
      }, 3000);
    },
    cancel() {
      clearInterval(timer);
      clearTimeout(giveUp);
    },
  });
  const got: string[] = [];
  const started = performance.now();
  const error = await (async () => {
    for await (const event of readSse(stream, { idleTimeoutMs: 200 })) got.push(event.data);
  })().then(() => undefined, (e) => e);
  clearInterval(timer);
  clearTimeout(giveUp);
  assert.deepEqual(got, ["first"]);
  assert.ok(error instanceof AgentError, String(error));
  assert.match(error.message, /went quiet: no event data for 0\.2 s/);
  assert.ok(performance.now() - started < 1000);
});

Deno.test("sse: events with data reset the idle timeout, however long the stream", async () => {
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await new Promise((resolve) => setTimeout(resolve, 30));
      if (sent++ < 12) controller.enqueue(encoder.encode(`data: ${sent}\n\n`));
      else controller.close();
    },
  });
  const got: string[] = [];
  for await (const event of readSse(stream, { idleTimeoutMs: 100 })) got.push(event.data);
  assert.equal(got.length, 12);
});

Deno.test("sse: one long line in many pieces is read in linear time", async () => {
  const piece = encoder.encode("x".repeat(16 * 1024));
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === 0) controller.enqueue(encoder.encode("data: "));
      if (sent++ < 1024) controller.enqueue(piece);
      else {
        controller.enqueue(encoder.encode("\n\n"));
        controller.close();
      }
    },
  });
  const started = performance.now();
  const [event] = await events(stream);
  assert.equal(event.data.length, 16 * 1024 * 1024);
  assert.ok(performance.now() - started < 2000, `${(performance.now() - started).toFixed(0)} ms`);
});

Deno.test("sse: tool-call deltas are joined by index, id and name from the first, arguments concatenated", () => {
  const assembler = new StreamAssembler();
  const chunk = (delta: unknown) => ({ choices: [{ index: 0, delta }] });
  assembler.add(chunk({ role: "assistant", content: null }));
  assembler.add(
    chunk({
      tool_calls: [{ index: 0, id: "c0", type: "function", function: { name: "nap", arguments: "" } }],
    }),
  );
  assembler.add(
    chunk({
      tool_calls: [{ index: 1, id: "c1", type: "function", function: { name: "echo", arguments: '{"va' } }],
    }),
  );
  assembler.add(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"label"' } }] }));
  assembler.add(chunk({ tool_calls: [{ index: 1, function: { arguments: 'lue":"v"}' } }] }));
  assembler.add(chunk({ tool_calls: [{ index: 0, function: { arguments: ':"x"}' } }] }));
  assembler.add({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] });
  const turn = assembler.finish();
  assert.equal(turn.finishReason, "tool_calls");
  assert.equal(turn.message.content, null);
  assert.deepEqual(turn.message.tool_calls, [
    { id: "c0", type: "function", function: { name: "nap", arguments: '{"label":"x"}' } },
    { id: "c1", type: "function", function: { name: "echo", arguments: '{"value":"v"}' } },
  ]);
});

Deno.test("sse: deltas without an index follow their id", () => {
  const assembler = new StreamAssembler();
  const chunk = (call: unknown) => ({ choices: [{ delta: { tool_calls: [call] } }] });
  assembler.add(chunk({ id: "a", function: { name: "nap", arguments: "{" } }));
  assembler.add(chunk({ function: { arguments: "}" } }));
  assembler.add(chunk({ id: "b", function: { name: "echo", arguments: "{}" } }));
  const calls = assembler.finish().message.tool_calls ?? [];
  assert.deepEqual(calls.map((c) => [c.id, c.function.name, c.function.arguments]), [
    ["a", "nap", "{}"],
    ["b", "echo", "{}"],
  ]);
});

Deno.test("sse: text deltas are returned as they come and joined", () => {
  const assembler = new StreamAssembler();
  assert.equal(assembler.add({ choices: [{ delta: { content: "Hel" } }] }), "Hel");
  assert.equal(assembler.add({ choices: [{ delta: { content: "lo" } }] }), "lo");
  assert.equal(assembler.add({ choices: [], usage: { total_tokens: 3 } }), "");
  assert.equal(assembler.finish().message.content, "Hello");
});

Deno.test("sse: a call without a name, an error chunk, or no chunk at all is malformed", () => {
  const nameless = new StreamAssembler();
  nameless.add({
    choices: [{ delta: { tool_calls: [{ index: 0, id: "a", function: { arguments: "{}" } }] } }],
  });
  assert.throws(
    () => nameless.finish(),
    (e: unknown) => e instanceof AgentError && /name is missing/.test(e.message),
  );
  assert.throws(
    () => new StreamAssembler().add({ error: { message: "overloaded" } }),
    (e: unknown) => e instanceof AgentError && /overloaded/.test(e.message),
  );
  assert.throws(() => new StreamAssembler().finish(), /ended before any answer/);
});

Deno.test("sse: readStreamedTurn stops at [DONE], passes text on, and rejects an event that is not JSON", async () => {
  const printed: string[] = [];
  const turn = await readStreamedTurn(
    streamOf(
      'data: {"choices":[{"delta":{"content":"a"}}]}\n\n',
      'data: {"choices":[{"delta":{"content":"b"}}]}\n\ndata: [DONE]\n\n',
      "data: after the end\n\n",
    ),
    { onText: (text) => Promise.resolve(void printed.push(text)) },
  );
  assert.equal(turn.message.content, "ab");
  assert.deepEqual(printed, ["a", "b"]);
  const error = await readStreamedTurn(streamOf("data: {oops\n\n")).then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.match(error.message, /not JSON: "\{oops"/);
});

Deno.test("sse: the usage of a stream's last chunk (stream_options.include_usage) is the turn's usage", async () => {
  const turn = await readStreamedTurn(
    streamOf(
      'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n',
      'data: {"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}\n\n',
      "data: [DONE]\n\n",
    ),
  );
  assert.equal(turn.message.content, "hi");
  assert.deepEqual(turn.usage, { prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 });
  const silent = await readStreamedTurn(streamOf('data: {"choices":[{"delta":{"content":"x"}}]}\n\n'));
  assert.equal(silent.usage, undefined, "a stream without usage has none, not zeros");
});
