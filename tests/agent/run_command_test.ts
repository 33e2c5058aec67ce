/** The agent loop end to end: the real CLI as a subprocess against a scripted endpoint on 127.0.0.1. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { auditDirFor } from "../../src/state/state.ts";
import {
  answer,
  callTools,
  deltaChunk,
  type Reply,
  type Script,
  sseData,
  toolMessages,
} from "./chat_server.ts";
import { runScripted, type ScriptedRun, type ScriptedRunOptions } from "./run_cli.ts";

interface Run extends ScriptedRun {
  /** Where the run's audit log went: the workspace's folder in its state folder. */
  readonly auditDir: string;
}

const cleanups: (() => Promise<void>)[] = [];

/** Runs the CLI against a server playing `script`; its temp folders live until `done()`. */
async function agent(script: Script, args: string[] = [], options: ScriptedRunOptions = {}): Promise<Run> {
  const run = await runScripted(script, args, options);
  cleanups.push(
    () => Deno.remove(run.dir, { recursive: true }),
    () => Deno.remove(run.state, { recursive: true }),
  );
  return { ...run, auditDir: auditDirFor({ XDG_STATE_HOME: run.state }, run.dir) };
}

async function done(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

function noStackTrace(text: string): void {
  assert.ok(!/\n\s+at |Uncaught|Stack backtrace/.test(text), `a stack trace:\n${text}`);
}

// deno-lint-ignore no-explicit-any
const parsedToolMessages = (body: any) =>
  toolMessages(body).map((m) => ({ id: m.tool_call_id, ...JSON.parse(m.content) }));

Deno.test("cli: a plain answer goes to stdout, exit 0", async () => {
  try {
    const run = await agent([answer("The answer is 42.")]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "The answer is 42.\n");
    const [request] = run.server.requests;
    assert.equal(request.path, "/v1/chat/completions");
    assert.equal(request.body.model, "test-model");
    assert.equal(request.body.messages[0].role, "system");
    assert.deepEqual(request.body.messages[1], { role: "user", content: "hi" });
    assert.equal(request.body.tool_choice, "auto");
    assert.equal(request.body.tools.length, 5);
    assert.equal(request.headers["authorization"], undefined, "no key set, no Authorization header");
    assert.ok(request.headers["idempotency-key"]);
  } finally {
    await done();
  }
});

Deno.test("cli: three tool calls, two concurrent, answered in the model's order with matching ids", async () => {
  try {
    const run = await agent([
      callTools([
        { id: "call_a", name: "nap", args: { label: "a", ms: 500 } },
        { id: "call_b", name: "nap", args: { label: "b", ms: 500 } },
        { id: "call_c", name: "note", args: { text: "hello" } },
      ]),
      answer("All done."),
    ], ["--yes"]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "All done.\n");
    const second = run.server.requests[1].body;
    const assistant = second.messages[2];
    assert.equal(assistant.role, "assistant");
    assert.deepEqual(assistant.tool_calls.map((c: { id: string }) => c.id), ["call_a", "call_b", "call_c"]);
    const results = parsedToolMessages(second);
    assert.deepEqual(results.map((r) => [r.id, r.ok, r.tool]), [
      ["call_a", true, "nap"],
      ["call_b", true, "nap"],
      ["call_c", true, "note"],
    ]);
    const [a, b, c] = results.map((r) => r.result);
    assert.ok(
      a.start < b.end && b.start < a.end,
      `the concurrent calls overlap: a ${a.start}-${a.end}, b ${b.start}-${b.end}`,
    );
    assert.ok(c.start >= Math.max(a.end, b.end), "the side-effecting call runs on its own");
    assert.equal(await Deno.readTextFile(join(run.dir, "notes.txt")), "hello\n", "--yes approved the note");
    const keys = run.server.requests.map((r) => r.headers["idempotency-key"]);
    assert.notEqual(keys[0], keys[1], "each request has its own Idempotency-Key");
  } finally {
    await done();
  }
});

Deno.test("cli: an unknown tool goes back to the model as tool_not_found", async () => {
  try {
    const run = await agent([callTools([{ id: "u1", name: "launch_rockets", args: {} }]), answer("Sorry.")]);
    assert.equal(run.code, 0, run.stderr);
    const [result] = parsedToolMessages(run.server.requests[1].body);
    assert.equal(result.id, "u1");
    assert.equal(result.ok, false);
    assert.equal(result.kind, "tool_not_found");
    assert.equal(result.retryable, false);
  } finally {
    await done();
  }
});

Deno.test("cli: arguments that are not JSON, or break the schema, go back as invalid_args", async () => {
  try {
    const run = await agent([
      callTools([
        { id: "j1", name: "nap", args: '{"label": "a",' },
        { id: "s1", name: "nap", args: { label: "b", extra: 1 } },
        { id: "ok", name: "nap", args: { label: "c", ms: "10" } },
      ]),
      answer("Fixed."),
    ]);
    assert.equal(run.code, 0, run.stderr);
    noStackTrace(run.stderr);
    const [notJson, extra, coerced] = parsedToolMessages(run.server.requests[1].body);
    assert.equal(notJson.kind, "invalid_args");
    assert.equal(notJson.retryable, true);
    assert.equal(extra.kind, "invalid_args");
    assert.equal(extra.field, "extra");
    assert.equal(coerced.ok, true, "a string-encoded integer is coerced, not refused");
  } finally {
    await done();
  }
});

Deno.test("cli: 429 then 200 waits as long as Retry-After says, with the same Idempotency-Key", async () => {
  try {
    const run = await agent([
      { status: 429, headers: { "retry-after": "1" }, json: { error: { message: "rate limited" } } },
      answer("Patience pays."),
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "Patience pays.\n");
    const [first, second] = run.server.requests;
    assert.ok(second.at - first.at >= 990, `retried after ${second.at - first.at} ms`);
    assert.equal(first.headers["idempotency-key"], second.headers["idempotency-key"]);
  } finally {
    await done();
  }
});

Deno.test("cli: retries exhausted: exit 1 with the status and the body, no stack trace", async () => {
  try {
    const overloaded: Reply = { status: 503, headers: { "retry-after": "0" }, text: "upstream overloaded" };
    const run = await agent([overloaded, overloaded, overloaded], ["--http-retries", "1"]);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, "");
    assert.equal(run.server.requests.length, 2);
    assert.match(
      run.stderr,
      /toolgate: the chat endpoint answered 503 Service Unavailable: upstream overloaded \(2 attempts/,
    );
    noStackTrace(run.stderr);
  } finally {
    await done();
  }
});

Deno.test("cli: a malformed body: exit 1 with a clear message, no stack trace", async () => {
  try {
    const run = await agent([{
      json: { id: "x", choices: [{ message: { content: null, tool_calls: [{ id: "c" }] } }] },
    }]);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /malformed answer from the chat endpoint: choices\[0\]\.message\.tool_calls\[0\]\.function is missing/,
    );
    noStackTrace(run.stderr);
    const notJson = await agent([{ text: "Bad Gateway" }]);
    assert.equal(notJson.code, 1);
    assert.match(notJson.stderr, /not JSON: "Bad Gateway"/);
    noStackTrace(notJson.stderr);
  } finally {
    await done();
  }
});

Deno.test("cli: the step cap: a clear message on stderr, exit 1", async () => {
  try {
    const run = await agent((_, i) => callTools([{ id: `c${i}`, name: "echo", args: { value: `${i}` } }]), [
      "--max-steps",
      "2",
    ]);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, "");
    assert.equal(run.server.requests.length, 2);
    assert.match(run.stderr, /still calling tools after 2 steps \(--max-steps 2\)/);
  } finally {
    await done();
  }
});

Deno.test("cli: without a terminal and without --yes, a tool that is not read-only is rejected, naming --yes", async () => {
  try {
    const run = await agent([
      callTools([{ id: "n1", name: "note", args: { text: "x" } }]),
      answer("Could not."),
    ]);
    assert.equal(run.code, 0, run.stderr);
    const [result] = parsedToolMessages(run.server.requests[1].body);
    assert.equal(result.kind, "rejected");
    assert.match(result.message, /--yes/);
    assert.match(run.stderr, /did not run note.*--yes/);
    await assert.rejects(Deno.stat(join(run.dir, "notes.txt")), "the tool did not run");
  } finally {
    await done();
  }
});

Deno.test("cli: --yes approves a tool that is not read-only", async () => {
  try {
    const run = await agent([
      callTools([{ id: "n1", name: "note", args: { text: "yes" } }]),
      answer("Noted."),
    ], [
      "--yes",
    ]);
    assert.equal(run.code, 0, run.stderr);
    const [result] = parsedToolMessages(run.server.requests[1].body);
    assert.equal(result.ok, true);
    assert.equal(await Deno.readTextFile(join(run.dir, "notes.txt")), "yes\n");
  } finally {
    await done();
  }
});

Deno.test("cli: --allow-tools approves the named tool for the agent loop too, and only it", async () => {
  try {
    const run = await agent([
      callTools([{ id: "n1", name: "note", args: { text: "allowed" } }]),
      answer("Noted."),
    ], ["--allow-tools", "note"]);
    assert.equal(run.code, 0, run.stderr);
    const [result] = parsedToolMessages(run.server.requests[1].body);
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.equal(await Deno.readTextFile(join(run.dir, "notes.txt")), "allowed\n");
    const typo = await agent([], ["--allow-tools", "note,noet"]);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /--allow-tools names "noet", which the manifest does not have/);
    noStackTrace(typo.stderr);
    assert.equal(typo.server.requests.length, 0);
  } finally {
    await done();
  }
});

Deno.test("cli: --stream assembles tool-call deltas split across chunks and prints the answer as it arrives", async () => {
  try {
    const first = [
      sseData(deltaChunk({ role: "assistant", content: null })),
      sseData(deltaChunk({
        tool_calls: [{ index: 0, id: "st_1", type: "function", function: { name: "nap", arguments: "" } }],
      })),
      sseData(deltaChunk({ tool_calls: [{ index: 0, function: { arguments: '{"lab' } }] })),
      sseData(deltaChunk({
        tool_calls: [{
          index: 1,
          id: "st_2",
          type: "function",
          function: { name: "echo", arguments: '{"val' },
        }],
      })),
      sseData(deltaChunk({ tool_calls: [{ index: 0, function: { arguments: 'el":"s","ms":5}' } }] })),
      sseData(deltaChunk({ tool_calls: [{ index: 1, function: { arguments: 'ue":"split"}' } }] })),
      sseData(deltaChunk({}, "tool_calls")),
      sseData("[DONE]"),
    ].join("");
    // Cut the byte stream at arbitrary places, mid-line and mid-event, not at event boundaries.
    const pieces = [first.slice(0, 37), first.slice(37, 200), first.slice(200, 201), first.slice(201)];
    const second = [
      sseData(deltaChunk({ role: "assistant", content: "Hello" })),
      sseData(deltaChunk({ content: ", " })),
      sseData(deltaChunk({ content: "world" }, "stop")),
      sseData("[DONE]"),
    ];
    const run = await agent([{ sse: pieces }, { sse: second }], ["--stream"]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "Hello, world\n");
    assert.equal(run.server.requests[0].body.stream, true);
    assert.equal(run.server.requests[0].headers["accept"], "text/event-stream");
    const body = run.server.requests[1].body;
    assert.deepEqual(body.messages[2].tool_calls, [
      { id: "st_1", type: "function", function: { name: "nap", arguments: '{"label":"s","ms":5}' } },
      { id: "st_2", type: "function", function: { name: "echo", arguments: '{"value":"split"}' } },
    ]);
    const results = parsedToolMessages(body);
    assert.deepEqual(results.map((r) => [r.id, r.ok]), [["st_1", true], ["st_2", true]]);
    assert.deepEqual(results[1].result, { value: "split" });
  } finally {
    await done();
  }
});

Deno.test("cli: the API key is sent, but is absent from --debug output and from the audit log", async () => {
  const key = "sk-test-0123456789-SECRET";
  try {
    for (const how of ["env", "flag"] as const) {
      const run = await agent(
        [
          // The model echoes the key into a tool's arguments: the tool's result carries it back in the next request.
          callTools([{ id: "e1", name: "echo", args: { value: `key=${key}` } }]),
          answer("ok"),
        ],
        ["--debug", ...(how === "flag" ? ["--api-key", key] : [])],
        { env: how === "env" ? { OAI_API_KEY: key } : {} },
      );
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.server.requests[0].headers["authorization"], `Bearer ${key}`, how);
      assert.match(run.stderr, /debug: -> POST http:\/\/127\.0\.0\.1/);
      assert.match(run.stderr, /debug: <- 200/);
      assert.match(run.stderr, /Bearer \[REDACTED\]/);
      assert.ok(!run.stderr.includes(key), `${how}: the key leaked into stderr`);
      assert.ok(!run.stderr.includes("0123456789-SECRET"), `${how}: a fragment of the key leaked`);
      const auditDir = run.auditDir;
      const files = [...Deno.readDirSync(auditDir)];
      assert.ok(files.length > 0, "the call was audited");
      for (const file of files) {
        const text = await Deno.readTextFile(join(auditDir, file.name));
        assert.match(text, /"tool":"echo"/);
        assert.ok(!text.includes(key), `${how}: the key leaked into the audit log`);
      }
    }
  } finally {
    await done();
  }
});

Deno.test("cli: --save-messages then --load-messages resumes the conversation", async () => {
  try {
    const store = await Deno.makeTempDir({ prefix: "toolgate_transcript_" });
    cleanups.push(() => Deno.remove(store, { recursive: true }));
    const saved = join(store, "run.json");
    const first = await agent([
      callTools([{ id: "e1", name: "echo", args: { value: "v" } }]),
      answer("First answer."),
    ], ["--save-messages", saved, "--system", "Be brief."]);
    assert.equal(first.code, 0, first.stderr);
    const transcript = JSON.parse(await Deno.readTextFile(saved));
    assert.deepEqual(transcript.map((m: { role: string }) => m.role), [
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    assert.equal(transcript[0].content, "Be brief.");
    assert.deepEqual(transcript.at(-1), { role: "assistant", content: "First answer." });
    const second = await agent([answer("Second answer.")], [
      "--load-messages",
      saved,
      "--prompt",
      "and then?",
    ], {
      noPrompt: true,
    });
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, "Second answer.\n");
    const sent = second.server.requests[0].body.messages;
    assert.deepEqual(sent.slice(0, 5), transcript);
    assert.deepEqual(sent[5], { role: "user", content: "and then?" });
  } finally {
    await done();
  }
});

Deno.test("cli: usage errors exit 2 without a stack trace", async () => {
  try {
    const cases: [string[], RegExp][] = [
      [["run"], /--prompt TEXT or --prompt-file PATH/],
      [["--prompt", "x", "--max-steps", "0"], /--max-steps must be an integer > 0/],
      [["--prompt", "x", "--prompt-file", "y"], /cannot be used together/],
      [
        ["--prompt", "x", "--load-messages", "/no/such.json"],
        /--load-messages \/no\/such\.json: no such file/,
      ],
    ];
    for (const [args, pattern] of cases) {
      const run = await agent([], args, { noPrompt: true });
      assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
      assert.match(run.stderr, pattern);
      noStackTrace(run.stderr);
      assert.equal(run.server.requests.length, 0);
    }
    const env = await agent([], [], { env: { OAI_HTTP_TIMEOUT: "forever" } });
    assert.equal(env.code, 2);
    assert.match(env.stderr, /OAI_HTTP_TIMEOUT must be a number/);
  } finally {
    await done();
  }
});

Deno.test("cli: --prompt-file - reads the request from stdin", async () => {
  try {
    const run = await agent([answer("Read it.")], ["--prompt-file", "-"], {
      noPrompt: true,
      stdin: "from a pipe",
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.server.requests[0].body.messages[1].content, "from a pipe");
  } finally {
    await done();
  }
});
