/**
 * What the agent loop shows of a run, end to end (the real CLI against a scripted endpoint on 127.0.0.1):
 * `--output jsonl`, the endpoint's token usage, `--lazy-tools`, and the built-in belt as the default manifest.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  answer,
  callTools,
  deltaChunk,
  type Reply,
  type Script,
  sseData,
  startChatServer,
  toolMessages,
} from "./chat_server.ts";
import { runScripted, type ScriptedRun } from "./run_cli.ts";
import { BELT_MANIFEST } from "../../src/manifest/tool_belt.ts";
import { runToolgate } from "../support.ts";

/** The runs' temp folders, removed when the tests end (a test reads its own after the run). */
const folders: string[] = [];
globalThis.addEventListener("unload", () => {
  for (const dir of folders) Deno.removeSync(dir, { recursive: true });
});

/** Runs the CLI (fixture manifest, no sandbox, a temp workspace and state folder) against `script`. */
async function agent(
  script: Script,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<ScriptedRun> {
  const run = await runScripted(script, args, { env });
  folders.push(run.dir, run.state);
  return run;
}

/** Every stdout line as JSON (each line must be one), in order. */
// deno-lint-ignore no-explicit-any
function events(stdout: string): any[] {
  assert.ok(stdout === "" || stdout.endsWith("\n"), "stdout ends with a newline");
  return stdout.split("\n").filter((line) => line !== "").map((line) => {
    assert.ok(/^[\x20-\x7e]+$/.test(line), `an event line is printable ASCII: ${line}`);
    return JSON.parse(line);
  });
}

/** A final answer with the usage the endpoint counted. */
function answerWithUsage(content: string, prompt: number, completion: number): Reply {
  const reply = answer(content) as { json: Record<string, unknown> };
  return {
    json: {
      ...reply.json,
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    },
  };
}

function callsWithUsage(calls: Parameters<typeof callTools>[0], prompt: number, completion: number): Reply {
  const reply = callTools(calls) as { json: Record<string, unknown> };
  return {
    json: {
      ...reply.json,
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    },
  };
}

Deno.test("jsonl: one event a line and nothing else on stdout: request, response, tool_call, tool_result, answer, usage", async () => {
  const run = await agent([
    callsWithUsage(
      [{ id: "c1", name: "echo", args: { value: "v" } }, { id: "c2", name: "nope", args: {} }],
      100,
      7,
    ),
    answerWithUsage("All done.", 150, 3),
  ], ["--output", "jsonl"]);
  assert.equal(run.code, 0, run.stderr);
  const lines = events(run.stdout);
  assert.deepEqual(lines.map((e) => e.type), [
    "request",
    "response",
    "tool_call",
    "tool_call",
    "tool_result",
    "tool_result",
    "request",
    "response",
    "answer",
    "usage",
  ]);
  const [request, response, call1, , result1, result2, request2] = lines;
  assert.deepEqual(request, {
    type: "request",
    step: 1,
    model: "test-model",
    messages: 2,
    tools: 5,
    tool_stubs: 0,
    bytes: new TextEncoder().encode(JSON.stringify(run.server.requests[0].body)).byteLength,
  });
  assert.deepEqual(response, {
    type: "response",
    step: 1,
    finish_reason: "tool_calls",
    text: null,
    tool_calls: 2,
    usage: { prompt_tokens: 100, completion_tokens: 7, total_tokens: 107 },
  });
  assert.deepEqual(call1, { type: "tool_call", step: 1, id: "c1", name: "echo", arguments: '{"value":"v"}' });
  assert.deepEqual(result1, {
    type: "tool_result",
    step: 1,
    id: "c1",
    name: "echo",
    ok: true,
    envelope: { ok: true, result: { value: "v" }, tool: "echo" },
  });
  assert.equal(result2.ok, false);
  assert.equal(result2.envelope.kind, "tool_not_found");
  // The tool_result events hold exactly what the model was sent.
  assert.deepEqual(
    toolMessages(run.server.requests[1].body).map((m) => JSON.parse(m.content)),
    [result1.envelope, result2.envelope],
  );
  assert.equal(request2.step, 2);
  assert.equal(request2.messages, 5);
  assert.deepEqual(lines.at(-2), { type: "answer", step: 2, text: "All done.", finish_reason: "stop" });
  assert.deepEqual(lines.at(-1), {
    type: "usage",
    prompt_tokens: 250,
    completion_tokens: 10,
    total_tokens: 260,
    requests: 2,
    requests_with_usage: 2,
  });
  assert.ok(!run.stderr.includes("tokens:"), "with jsonl the totals are an event, not a stderr line");
});

Deno.test("jsonl: --stream prints no raw text; the answer and the streamed usage come as events", async () => {
  const run = await agent([{
    sse: [
      sseData(deltaChunk({ role: "assistant", content: "Hel" })),
      sseData(deltaChunk({ content: "lo" }, "stop")),
      sseData({
        id: "x",
        object: "chat.completion.chunk",
        choices: [],
        usage: { prompt_tokens: 20, completion_tokens: 2, total_tokens: 22 },
      }),
      sseData("[DONE]"),
    ],
  }], ["--output", "jsonl", "--stream"]);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.server.requests[0].body.stream_options, { include_usage: true });
  const lines = events(run.stdout);
  assert.deepEqual(lines.map((e) => e.type), ["request", "response", "answer", "usage"]);
  assert.equal(lines[2].text, "Hello");
  assert.equal(lines[3].total_tokens, 22);
});

Deno.test("jsonl: the endpoint's failure is an error event, exit 1; secrets are masked in every event", async () => {
  const key = "sk-test-jsonl-0123456789";
  const failed = await agent([{ status: 401, json: { error: { message: `invalid key ${key}` } } }], [
    "--output",
    "jsonl",
  ], { OAI_API_KEY: key });
  assert.equal(failed.code, 1);
  const lines = events(failed.stdout);
  assert.deepEqual(lines.map((e) => e.type), ["request", "error"]);
  assert.equal(lines[1].reason, "endpoint");
  assert.match(lines[1].message, /401 Unauthorized: .*invalid key \[REDACTED\]/);
  assert.ok(!failed.stdout.includes("0123456789"), "the key leaked into stdout");

  // The model echoes the key into a tool's arguments; the tool's result carries it back.
  const echoed = await agent(
    [
      callTools([{ id: "e1", name: "echo", args: { value: `key=${key}` } }]),
      answer(`the key is ${key}`),
    ],
    ["--output", "jsonl"],
    { OAI_API_KEY: key },
  );
  assert.equal(echoed.code, 0, echoed.stderr);
  assert.ok(!echoed.stdout.includes("0123456789"), `the key leaked into an event:\n${echoed.stdout}`);
  const types = events(echoed.stdout).map((e) => e.type);
  assert.deepEqual(types, [
    "request",
    "response",
    "tool_call",
    "tool_result",
    "request",
    "response",
    "answer",
  ]);
});

Deno.test("jsonl: the step limit and an empty answer are error events", async () => {
  const limited = await agent(
    (_, i) => callTools([{ id: `c${i}`, name: "echo", args: {} }]),
    ["--output", "jsonl", "--max-steps", "1"],
  );
  assert.equal(limited.code, 1);
  const last = events(limited.stdout).at(-1);
  assert.equal(last.type, "error");
  assert.equal(last.reason, "step_limit");
  const empty = await agent([answer("  ")], ["--output", "jsonl"]);
  assert.equal(empty.code, 1);
  assert.deepEqual(events(empty.stdout).at(-1), {
    type: "error",
    reason: "empty_answer",
    message: "the model's final answer is empty",
  });
});

Deno.test("jsonl: a hostile answer's escapes and bidi overrides reach stdout only as \\u escapes", async () => {
  const hostile = "done\u001b]52;c;ZWNobyBwd25lZA==\u0007\u009b2J\u202e\u2028";
  const run = await agent([answer(hostile)], ["--output", "jsonl"]);
  assert.equal(run.code, 0, run.stderr);
  const lines = events(run.stdout);
  assert.equal(lines.at(-1).text, hostile, "the text is intact for a JSON reader");
});

Deno.test("--output must be text or jsonl: exit 2 before any request", async () => {
  const run = await agent([], ["--output", "json"]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /--output must be one of text, jsonl \(got "json"\)/);
  assert.equal(run.server.requests.length, 0);
});

Deno.test("usage: the run's totals go to stderr at the end; an endpoint that reports none gets no line", async () => {
  const run = await agent([
    callsWithUsage([{ id: "c1", name: "echo", args: {} }], 1200, 30),
    answerWithUsage("Fine.", 1300, 4),
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, "Fine.\n");
  assert.match(
    run.stderr,
    /toolgate: tokens: 2,500 prompt \+ 34 completion = 2,534 total, over 2 requests\n$/,
  );
  const quiet = await agent([answerWithUsage("Fine.", 1, 1)], ["--quiet"]);
  assert.ok(!quiet.stderr.includes("tokens:"), "--quiet silences the totals");
  const silent = await agent([callTools([{ id: "c1", name: "echo", args: {} }]), answer("Fine.")]);
  assert.equal(silent.code, 0, silent.stderr);
  assert.ok(!silent.stderr.includes("tokens"), `no usage reported, no line: ${silent.stderr}`);
  const partly = await agent([
    callTools([{ id: "c1", name: "echo", args: {} }]),
    answerWithUsage("Fine.", 10, 2),
  ]);
  assert.match(
    partly.stderr,
    /tokens: 10 prompt \+ 2 completion = 12 total, over the 1 of 2 requests that reported usage/,
  );
});

Deno.test("usage: a failed run still shows the tokens spent", async () => {
  const run = await agent([callsWithUsage([{ id: "c1", name: "echo", args: {} }], 40, 2), {
    status: 400,
    text: "no",
  }]);
  assert.equal(run.code, 1);
  assert.match(
    run.stderr,
    /toolgate: the chat endpoint answered 400 Bad Request: no\ntoolgate: tokens: 40 prompt \+ 2 completion = 42 total, over 1 request\n$/,
  );
});

Deno.test("lazy tools: stubs first; a stub's first call is not run but answered with its definition; then it is in full", async () => {
  const note = (id: string, args: unknown): Reply => callTools([{ id, name: "note", args }]);
  const run = await agent([
    // The model guesses the arguments of a tool it has seen only as a stub.
    note("n1", { line: "guessed" }),
    note("n2", { text: "second try" }),
    answer("Noted."),
  ], ["--lazy-tools", "--yes", "--output", "jsonl"]);
  assert.equal(run.code, 0, run.stderr);
  const [first, second, third] = run.server.requests.map((r) => r.body);
  // deno-lint-ignore no-explicit-any
  const tool = (body: any, name: string) => body.tools.find((t: any) => t.function.name === name).function;
  assert.deepEqual(tool(first, "note"), {
    name: "note",
    description: "Append a line to notes.txt.",
    parameters: { type: "object" },
  });
  assert.equal(tool(first, "nap").parameters.properties, undefined, "every tool is a stub at first");
  assert.deepEqual(Object.keys(tool(first, "echo").parameters.properties), ["value"], "alwaysLoad: in full");
  // The first call did not run: nothing was written, and the model got the definition.
  const [disclosed] = toolMessages(second).map((m) => JSON.parse(m.content));
  assert.equal(disclosed.ok, false);
  assert.equal(disclosed.kind, "invalid_args");
  assert.equal(disclosed.retryable, true);
  assert.equal(disclosed.not_run, true);
  assert.deepEqual(disclosed.definition.parameters.required, ["text"]);
  assert.deepEqual(tool(second, "note").parameters, disclosed.definition.parameters, "now in full");
  assert.equal(tool(second, "nap").parameters.properties, undefined, "an uncalled tool stays a stub");
  assert.equal(tool(third, "note").parameters.required[0], "text", "and stays in full");
  // The second call ran, once.
  assert.equal(await Deno.readTextFile(join(run.dir, "notes.txt")), "second try\n");
  const requests = events(run.stdout).filter((e) => e.type === "request");
  assert.deepEqual(requests.map((e) => e.tool_stubs), [4, 3, 3]);
  assert.ok(requests[0].bytes < requests[1].bytes, "stubs are smaller");
});

Deno.test("lazy tools: without --lazy-tools every tool goes in full", async () => {
  const run = await agent([answer("ok")]);
  assert.equal(run.code, 0, run.stderr);
  const tools: { function: { parameters: { properties?: unknown } } }[] = run.server.requests[0].body.tools;
  assert.ok(tools.every((t) => t.function.parameters.properties !== undefined));
});

Deno.test("run: with no --tools and no ./tools.json, a folder's run gets the built-in belt, as call does", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_belt_run_" }));
  const state = await Deno.makeTempDir({ prefix: "toolgate_belt_state_" });
  const server = startChatServer([
    callTools([{ id: "l1", name: "fs_list_dir", args: { path: "." } }]),
    answer("Listed."),
  ]);
  try {
    await Deno.writeTextFile(join(dir, "marker.txt"), "here\n");
    // The installed command's way: the launcher works out the least permission set in this folder.
    const run = await runToolgate(
      ["--prompt", "what is here?", "--base-url", server.baseUrl, "--model", "m"],
      dir,
      { XDG_STATE_HOME: state, TOOLGATE_TOOLS: "" },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "Listed.\n");
    // deno-lint-ignore no-explicit-any
    const names = server.requests[0].body.tools.map((t: any) => t.function.name);
    assert.deepEqual(names, BELT_MANIFEST.tools.map((t) => t.name));
    const [listed] = toolMessages(server.requests[1].body).map((m) => JSON.parse(m.content));
    assert.equal(listed.ok, true, JSON.stringify(listed));
    assert.match(JSON.stringify(listed.result), /marker\.txt/);
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(state, { recursive: true });
  }
});

Deno.test("usage: an endpoint that refuses stream_options gets the request again without it, for the whole run", async () => {
  const streamed = (content: string): Reply => ({
    sse: [sseData(deltaChunk({ role: "assistant", content }, "stop")), sseData("[DONE]")],
  });
  const run = await agent((request, index) => {
    if (request.body.stream_options !== undefined) {
      return {
        status: 400,
        json: { error: { message: "Unrecognized request argument supplied: stream_options" } },
      };
    }
    return index === 1
      ? { sse: [sseData(deltaChunk({ tool_calls: wireCallsOf("e1") })), sseData("[DONE]")] }
      : streamed("Done.");
  }, ["--stream"]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, "Done.\n");
  assert.deepEqual(run.server.requests.map((r) => r.body.stream_options !== undefined), [true, false, false]);
  assert.match(run.stderr, /refused stream_options: streaming without token usage/);
  assert.ok(!run.stderr.includes("tokens:"), "no usage, no line");
  // Any other refusal is the run's failure, as before.
  const other = await agent([{ status: 400, json: { error: { message: "model not found" } } }], ["--stream"]);
  assert.equal(other.code, 1);
  assert.equal(other.server.requests.length, 1);
});

function wireCallsOf(id: string): unknown[] {
  return [{ index: 0, id, type: "function", function: { name: "echo", arguments: "{}" } }];
}

Deno.test("lazy tools: a stub's permissive schema is no way around approval: the stub call runs nothing, the next is refused", async () => {
  const run = await agent([
    callTools([{ id: "n1", name: "note", args: { text: "sneaky", anything: { goes: true } } }]),
    callTools([{ id: "n2", name: "note", args: { text: "sneaky" } }]),
    answer("Could not."),
  ], ["--lazy-tools"]);
  assert.equal(run.code, 0, run.stderr);
  const [stub] = toolMessages(run.server.requests[1].body).map((m) => JSON.parse(m.content));
  assert.equal(stub.not_run, true);
  const second = toolMessages(run.server.requests[2].body).map((m) => JSON.parse(m.content)).at(-1);
  assert.equal(second.kind, "rejected", "without a terminal and without --yes the real call is refused");
  await assert.rejects(Deno.stat(join(run.dir, "notes.txt")), "the tool never ran");
});
