import assert from "node:assert/strict";
import { join } from "node:path";
import { ChatClient } from "../../src/agent/chat_client.ts";
import { answerToolCalls, type LoopOptions, runLoop } from "../../src/agent/loop.ts";
import type { ChatMessage, ToolCall } from "../../src/agent/messages.ts";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest, validateManifest } from "../../src/manifest/manifest.ts";
import { Policy } from "../../src/policy/policy.ts";
import { answer, callTools, deltaChunk, sseData, startChatServer, toolMessages } from "./chat_server.ts";
import { AGENT_TOOLS } from "./run_cli.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

const loaded = await loadManifest(AGENT_TOOLS);
if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
const manifest = loaded.manifest;

const ENV = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/tmp" };

interface Setup extends AsyncDisposable {
  readonly dir: string;
  readonly executor: Executor;
}

async function setup(auditDir?: string): Promise<Setup> {
  const dir = await Deno.makeTempDir({ prefix: "toolgate_loop_" });
  const executor = new Executor({ manifest, env: ENV, cwd: dir, auditDir: auditDir ?? null, sandbox: "off" });
  return { dir, executor, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

function options(executor: Executor, baseUrl: string, extra: Partial<LoopOptions> = {}): LoopOptions {
  return {
    executor,
    client: new ChatClient({ baseUrl, timeoutMs: 10_000, retries: 0 }),
    policy: new Policy({ yes: true }),
    model: "test-model",
    maxSteps: 8,
    ...extra,
  };
}

const opening = (): ChatMessage[] => [{ role: "system", content: "S" }, { role: "user", content: "go" }];

const call = (id: string, name: string, args: unknown): ToolCall => ({
  id,
  type: "function",
  function: { name, arguments: typeof args === "string" ? args : JSON.stringify(args) },
});

Deno.test("loop: the request carries the model, the messages, the tools in OpenAI's shape and tool_choice auto", async () => {
  await using env = await setup();
  await using server = startChatServer([answer("fine")]);
  const messages = opening();
  const outcome = await runLoop(messages, options(env.executor, server.baseUrl, { temperature: 0.2 }));
  assert.deepEqual(outcome, {
    kind: "answer",
    text: "fine",
    streamed: false,
    steps: 1,
    finishReason: "stop",
  });
  const body = server.requests[0].body;
  assert.equal(body.model, "test-model");
  assert.equal(body.temperature, 0.2);
  assert.equal(body.tool_choice, "auto");
  assert.equal(body.stream, undefined);
  assert.deepEqual(body.messages, opening());
  assert.deepEqual(body.tools.map((t: { function: { name: string } }) => t.function.name), [
    "nap",
    "note",
    "echo",
    "pause",
    "big",
  ]);
  assert.deepEqual(body.tools[0], {
    type: "function",
    function: {
      name: "nap",
      description: manifest.tools[0].description,
      // The schema as written (the manifest keeps it in null-prototype objects).
      parameters: JSON.parse(JSON.stringify(manifest.tools[0].schema)),
    },
  });
  assert.deepEqual(messages.at(-1), { role: "assistant", content: "fine" });
});

Deno.test("loop: no tools key and no tool_choice when the manifest has no tools", async () => {
  const empty = validateManifest({ tools: [] }, "/tmp/tools.json");
  assert.ok(empty.ok);
  const executor = new Executor({ manifest: empty.manifest, env: ENV, cwd: "/tmp", auditDir: null });
  await using server = startChatServer([answer("ok")]);
  await runLoop(opening(), options(executor, server.baseUrl));
  assert.equal("tools" in server.requests[0].body, false);
  assert.equal("tool_choice" in server.requests[0].body, false);
});

Deno.test("loop: a side-effecting call runs alone, between the runs of concurrent calls around it", async () => {
  await using env = await setup();
  const messages = await answerToolCalls([
    call("a", "nap", { label: "a", ms: 300 }),
    call("b", "nap", { label: "b", ms: 300 }),
    call("c", "note", { text: "middle" }),
    call("d", "nap", { label: "d", ms: 300 }),
    call("e", "nap", { label: "e", ms: 300 }),
  ], { executor: env.executor, policy: new Policy({ yes: true }) });
  assert.deepEqual(messages.map((m) => m.tool_call_id), ["a", "b", "c", "d", "e"]);
  const [a, b, c, d, e] = messages.map((m) => JSON.parse(m.content).result);
  const overlap = (x: { start: number; end: number }, y: { start: number; end: number }) =>
    x.start < y.end && y.start < x.end;
  assert.ok(overlap(a, b), `a ${JSON.stringify(a)} b ${JSON.stringify(b)}`);
  assert.ok(overlap(d, e), `d ${JSON.stringify(d)} e ${JSON.stringify(e)}`);
  assert.ok(c.start >= Math.max(a.end, b.end), "the note waits for the calls before it");
  assert.ok(Math.min(d.start, e.start) >= c.end, "and the calls after it wait for the note");
});

Deno.test("loop: an oversized result reaches the model as truncated_output within the limit", async () => {
  await using env = await setup();
  const [message] = await answerToolCalls([call("big", "big", { chars: 120_000 })], {
    executor: env.executor,
    policy: new Policy(),
    maxToolChars: 10_000,
  });
  assert.ok(message.content.length <= 10_000);
  const parsed = JSON.parse(message.content);
  assert.equal(parsed.ok, true);
  assert.equal(parsed.result.kind, "truncated_output");
  assert.equal(parsed.result.original_chars, 120_000);
});

Deno.test("loop: a denial on the terminal answers user_denied and is audited, the tool never runs", async () => {
  await using env = await setup();
  const auditDir = join(env.dir, "audit");
  // A fixed digest key: no test makes one in the real home.
  const auditKey = new Uint8Array(32);
  const executor = new Executor({ manifest, env: ENV, cwd: env.dir, auditDir, auditKey, sandbox: "off" });
  const [message] = await answerToolCalls([call("n1", "note", { text: "x" })], {
    executor,
    policy: new Policy({ ask: () => Promise.resolve("no") }),
  });
  const parsed = JSON.parse(message.content);
  assert.equal(parsed.kind, "user_denied");
  await assert.rejects(Deno.stat(join(env.dir, "notes.txt")));
  const [file] = [...Deno.readDirSync(auditDir)];
  const record = JSON.parse((await Deno.readTextFile(join(auditDir, file.name))).trim());
  assert.equal(record.tool, "note");
  assert.equal(record.outcome, "user_denied");
});

Deno.test("loop: reaching the step cap ends the run with step_limit", async () => {
  await using env = await setup();
  await using server = startChatServer((_, i) => callTools([{ id: `c${i}`, name: "echo", args: {} }]));
  const messages = opening();
  const outcome = await runLoop(messages, options(env.executor, server.baseUrl, { maxSteps: 3 }));
  assert.deepEqual(outcome, { kind: "step_limit", steps: 3 });
  assert.equal(server.requests.length, 3);
  assert.equal(messages.length, 2 + 3 * 2, "each step left its assistant message and its tool answer");
});

Deno.test("loop: streamed text is passed on as it arrives, narration before tool calls on its own line", async () => {
  await using env = await setup();
  await using server = startChatServer([
    {
      sse: [
        sseData(deltaChunk({ role: "assistant", content: "Checking" })),
        sseData(
          deltaChunk({
            tool_calls: [{ index: 0, id: "s1", type: "function", function: { name: "echo", arguments: "" } }],
          }),
        ),
        sseData(deltaChunk({ tool_calls: [{ index: 0, function: { arguments: '{"value":"v"}' } }] })),
        sseData(deltaChunk({}, "tool_calls")),
        sseData("[DONE]"),
      ],
    },
    {
      sse: [
        sseData(deltaChunk({ content: "Done" })),
        sseData(deltaChunk({ content: "." }, "stop")),
        sseData("[DONE]"),
      ],
    },
  ]);
  const printed: string[] = [];
  const messages = opening();
  const outcome = await runLoop(
    messages,
    options(env.executor, server.baseUrl, {
      stream: true,
      onText: (text) => Promise.resolve(void printed.push(text)),
    }),
  );
  assert.equal(outcome.kind, "answer");
  assert.equal(outcome.kind === "answer" && outcome.streamed, true);
  assert.deepEqual(printed, ["Checking", "\n", "Done", ".", "\n"]);
  assert.equal(server.requests[0].body.stream, true);
  const [tool] = toolMessages(server.requests[1].body);
  assert.deepEqual(JSON.parse(tool.content), { ok: true, result: { value: "v" }, tool: "echo" });
});

Deno.test("loop: a server that ignores stream: true and answers in one piece is understood", async () => {
  await using env = await setup();
  await using server = startChatServer([answer("whole")]);
  const printed: string[] = [];
  const outcome = await runLoop(
    opening(),
    options(env.executor, server.baseUrl, {
      stream: true,
      onText: (text) => Promise.resolve(void printed.push(text)),
    }),
  );
  assert.equal(outcome.kind === "answer" && outcome.text, "whole");
  assert.deepEqual(printed, ["whole", "\n"]);
});
