// Attacks by the chat endpoint (issue 11, "What was seen" 6), and by tools and MCP clients on the person's terminal:
// an answer past the size cap fails at once with a clear error (not retried, not "cannot reach"); a stream that
// carries no event data (comments only) fails after the HTTP timeout; escape sequences and bidi overrides from an
// answer, an error body, a tool's result or an MCP client never reach a terminal raw.
import assert from "node:assert/strict";
import { answer, deltaChunk, sseData } from "../agent/chat_server.ts";

import { startChatServer } from "../agent/chat_server.ts";
import { baseEnv } from "../mcp/helpers.ts";
import { hostTest, realTempDir } from "./helpers.ts";
import { HOSTILE, runAgent, serveHostileArgs } from "./hostile.ts";
import { NO_PTY, runInPty } from "./pty.ts";
import { cliArgs } from "../support.ts";

const MIB = 1024 * 1024;

Deno.test("an answer larger than --http-max-bytes fails at once with a clear error, not retried", async () => {
  const big = answer("x".repeat(2 * MIB));
  for (
    const [how, args, env] of [
      ["flag", ["--http-max-bytes", "1000000"], {}],
      ["env", [], { OAI_HTTP_MAX_BYTES: "1000000" }],
    ] as const
  ) {
    const run = await runAgent([big, big, big], [...args], { ...env });
    try {
      assert.equal(run.code, 1, how);
      assert.match(run.stderr, /the chat endpoint's answer is larger than 1000000 bytes/, how);
      assert.doesNotMatch(run.stderr, /cannot reach|attempts/, how);
      assert.equal(run.server.requests.length, 1, `${how}: retried`);
    } finally {
      await run.cleanup();
    }
  }
});

Deno.test("an answer without a Content-Length, streamed or not, is counted as it comes and capped", async () => {
  // No Content-Length: the cap holds on the bytes themselves.
  const chunks = Array.from({ length: 64 }, () => sseData(deltaChunk({ content: "y".repeat(32 * 1024) })));
  for (const [how, args] of [["stream", ["--stream"]], ["plain", []]] as const) {
    const run = await runAgent([{ sse: chunks, chunkDelayMs: 0 }], ["--http-max-bytes", "500000", ...args]);
    try {
      assert.equal(run.code, 1, how);
      assert.match(run.stderr, /the chat endpoint's answer is larger than 500000 bytes/, how);
      assert.equal(run.server.requests.length, 1, how);
    } finally {
      await run.cleanup();
    }
  }
});

Deno.test("the default cap is 16 MiB: a 17 MiB answer fails, a 15 MiB one is read", async () => {
  const over = await runAgent([answer("z".repeat(17 * MIB))]);
  try {
    assert.equal(over.code, 1);
    assert.match(over.stderr, new RegExp(`larger than ${16 * MIB} bytes`));
    assert.equal(over.server.requests.length, 1);
  } finally {
    await over.cleanup();
  }
  const under = await runAgent([answer("z".repeat(15 * MIB))]);
  try {
    assert.equal(under.code, 0, under.stderr.slice(0, 500));
    assert.equal(under.stdout.length, 15 * MIB + 1);
  } finally {
    await under.cleanup();
  }
});

Deno.test("a stream of SSE comments every 100 ms fails after the HTTP timeout", async () => {
  const pings = Array.from({ length: 60 }, () => ": ping\n\n");
  const run = await runAgent([{ sse: pings, chunkDelayMs: 100 }], ["--stream", "--http-timeout", "1"]);
  // From the request's arrival, not the run's start: a loaded machine takes seconds to start the CLI.
  const seconds = (Date.now() - run.server.requests[0].at) / 1000;
  try {
    assert.equal(run.code, 1);
    assert.match(run.stderr, /the chat endpoint's stream went quiet: no event data for 1 s/);
    assert.ok(seconds < 5, `failed ${seconds.toFixed(1)} s after its request; the pings went on for 6 s`);
  } finally {
    await run.cleanup();
  }
});

Deno.test("a stream whose events carry data more often than the timeout is read to its end", async () => {
  const events = [
    ...Array.from({ length: 6 }, (_, i) => sseData(deltaChunk({ content: `${i}` }))),
    sseData(deltaChunk({}, "stop")),
    sseData("[DONE]"),
  ];
  // 8 events 400 ms apart: 3.2 s in all, longer than the 1 s timeout, never a second without data.
  const run = await runAgent([{ sse: events, chunkDelayMs: 400 }], ["--stream", "--http-timeout", "1"]);
  try {
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "012345\n");
  } finally {
    await run.cleanup();
  }
});

/** An OSC window title, an OSC 52 clipboard write, a screen clear, an 8-bit CSI and a right-to-left override. */
const HOSTILE_TEXT =
  "\x1b]0;pwned-title\x07 \x1b]52;c;cHduZWQ=\x07 \x1b[2J \u009b31m red \u202edesrever\u202c done";
const encoder = new TextEncoder();

/** The byte sequences that drive a terminal: none may reach it raw. */
const RAW = [
  ["an OSC", "\x1b]"],
  ["a screen clear", "\x1b[2J"],
  ["BEL", "\x07"],
  ["an 8-bit CSI", "\u009b"],
  ["a right-to-left override", "\u202e"],
  ["a bidi pop", "\u202c"],
] as const;

function assertNeutralized(bytes: Uint8Array, where: string): void {
  const text = new TextDecoder().decode(bytes);
  for (const [what, sequence] of RAW) {
    const needle = encoder.encode(sequence);
    const found = bytes.findIndex((_, i) => needle.every((byte, j) => bytes[i + j] === byte));
    assert.equal(found, -1, `${what} reached the terminal raw in ${where}: ${JSON.stringify(text)}`);
  }
  assert.ok(
    text.includes("␛]0;pwned-title␇"),
    `${where}: the title sequence is not shown: ${JSON.stringify(text)}`,
  );
  assert.ok(text.includes("\\u{202e}desrever"), `${where}: the override is not shown`);
}

/** `toolgate ARGS` on a pty, with a clean environment but for deno's own and a state folder. */
async function onTerminal(
  args: readonly string[],
  cwd: string,
): Promise<{ code: number; bytes: Uint8Array }> {
  const state = await realTempDir("toolgate_pty_state_");
  try {
    return await runInPty([
      Deno.execPath(),
      ...cliArgs(["-A"], []),
      ...args,
    ], { env: { ...baseEnv(), XDG_STATE_HOME: state, TERM: "xterm" }, cwd, timeoutMs: 60_000 });
  } finally {
    await Deno.remove(state, { recursive: true });
  }
}

hostTest(
  "escape sequences in an answer, a streamed answer, an error body and a tool's result do not reach a terminal raw",
  NO_PTY,
  async () => {
    const dir = await realTempDir("toolgate_pty_");
    await using server = startChatServer([
      answer(HOSTILE_TEXT),
      { sse: [sseData(deltaChunk({ content: HOSTILE_TEXT }, "stop")), sseData("[DONE]")] },
      { status: 400, text: `bad request: ${HOSTILE_TEXT}` },
    ]);
    try {
      const common = ["--base-url", server.baseUrl, "--model", "m", "--tools", HOSTILE, "--sandbox", "off"];
      const answered = await onTerminal(["--prompt", "hi", ...common, "--cwd", dir], dir);
      assert.equal(answered.code, 0, new TextDecoder().decode(answered.bytes));
      assertNeutralized(answered.bytes, "the final answer");
      const streamed = await onTerminal(["--prompt", "hi", "--stream", ...common, "--cwd", dir], dir);
      assert.equal(streamed.code, 0, new TextDecoder().decode(streamed.bytes));
      assertNeutralized(streamed.bytes, "the streamed answer");
      const refused = await onTerminal(["--prompt", "hi", ...common, "--cwd", dir], dir);
      assert.equal(refused.code, 1);
      assert.match(new TextDecoder().decode(refused.bytes), /answered 400 Bad Request: bad request: /);
      assertNeutralized(refused.bytes, "the error body");
      const called = await onTerminal(
        ["call", "noisy", "--tools", HOSTILE, "--sandbox", "off", "--no-audit", "--cwd", dir],
        dir,
      );
      assert.equal(called.code, 0, new TextDecoder().decode(called.bytes));
      // The envelope's JSON already writes C0 controls as \u001b: the bidi and C1 characters are the raw ones.
      const text = new TextDecoder().decode(called.bytes);
      assert.ok(!text.includes("\u202e") && !text.includes("\u009b"), JSON.stringify(text));
      assert.ok(text.includes("\\u{202e}desrever") && text.includes("\\u{9b}31m"), JSON.stringify(text));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
  "pty",
);

Deno.test("the final answer goes to a pipe as it came (a script wants the bytes); stderr is made safe there too", async () => {
  const run = await runAgent([answer(HOSTILE_TEXT)]);
  try {
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, HOSTILE_TEXT + "\n");
  } finally {
    await run.cleanup();
  }
  const refused = await runAgent([{ status: 400, text: HOSTILE_TEXT }]);
  try {
    assert.equal(refused.code, 1);
    assertNeutralized(encoder.encode(refused.stderr), "stderr on a pipe");
  } finally {
    await refused.cleanup();
  }
});

Deno.test("escape sequences an MCP client sends do not reach the server's stderr raw", async () => {
  const dir = await realTempDir("toolgate_mcp_escapes_");
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: cliArgs(["-A"], serveHostileArgs(dir)),
      env: baseEnv(),
      clearEnv: true,
      stdin: "piped",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    // Not JSON: the server reports it on stderr, quoting what it received (V8 quotes a short line whole).
    await writer.write(encoder.encode("\x1b]0;pwn\x07\u202e!\n"));
    await writer.close();
    const { stderr } = await child.output();
    const text = new TextDecoder().decode(stderr);
    assert.match(text, /toolgate: mcp: .*␛\]0;pwn␇\\u\{202e\}!/);
    for (const raw of ["\x1b", "\x07", "\u202e"]) assert.ok(!text.includes(raw), JSON.stringify(text));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
