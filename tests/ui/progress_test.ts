import assert from "node:assert/strict";
import { failure, success } from "../../src/contract.ts";
import { heartbeatText, Progress } from "../../src/ui/progress.ts";

function harness(enabled = true) {
  const written: string[] = [];
  let now = 0;
  const progress = new Progress({
    enabled,
    write: (text) => Promise.resolve(void written.push(text)),
    now: () => now,
    intervalMs: 60_000,
  });
  return { progress, written, advance: (ms: number) => void (now += ms) };
}

Deno.test("progress: one line per running tool with its elapsed time, the block redrawn in place", async () => {
  const { progress, written, advance } = harness();
  progress.start("c1", "nap");
  advance(1200);
  progress.start("c2", "echo");
  advance(300);
  progress.draw();
  await progress.close();
  assert.equal(written[0], "\r\x1b[2K  running nap 0.0s");
  assert.equal(written[1], "\r\x1b[2K  running nap 1.2s\n  running echo 0.0s");
  // Redrawn from the block's first line: the last line cleared, then the one above it.
  assert.equal(written[2], "\r\x1b[2K\x1b[1A\x1b[2K  running nap 1.5s\n  running echo 0.3s");
  assert.equal(written.at(-1), "\r\x1b[2K\x1b[1A\x1b[2K", "both lines are cleared at the end");
});

Deno.test("progress: a finished tool leaves one line with its time and outcome", async () => {
  const { progress, written, advance } = harness();
  progress.start("c1", "nap");
  progress.start("c2", "note");
  advance(2000);
  progress.end("c1", success(1));
  progress.end("c2", failure("timeout", "slow"));
  await progress.close();
  const text = written.join("");
  assert.match(text, /✓ nap 2\.0s ok\n/);
  assert.match(text, /✗ note 2\.0s timeout\n/);
});

Deno.test("progress: disabled (no terminal, or --quiet) writes nothing", async () => {
  const { progress, written } = harness(false);
  progress.start("c1", "nap");
  progress.end("c1", success(1));
  await progress.close();
  assert.deepEqual(written, []);
});

Deno.test("progress: no line outgrows the terminal, and many tools take a few lines", async () => {
  const written: string[] = [];
  const progress = new Progress({
    enabled: true,
    write: (t) => Promise.resolve(void written.push(t)),
    columns: 40,
  });
  for (let i = 0; i < 20; i++) progress.start(`c${i}`, `tool_number_${i}`);
  await progress.close();
  for (const text of written) {
    // deno-lint-ignore no-control-regex
    const lines = text.replace(/\r|\x1b\[1A|\x1b\[2K/g, "").split("\n");
    assert.ok(lines.length <= 8, text);
    for (const line of lines) assert.ok(line.length <= 39, line);
  }
  assert.match(written.at(-2)!, /\n {2}and 13 more tools$/);
});

// Issue 26: a long call showed its timer and, every 30 s, a standing heartbeat line under it as well. The line
// alone now says it all, the call's wall-clock limit beside its elapsed time.
Deno.test("progress: a long call's line carries its limit beside its elapsed time, and no standing heartbeat line is written", async () => {
  const { progress, written, advance } = harness();
  progress.start("c1", "exec", 310);
  progress.start("c2", "build");
  advance(30_000);
  progress.toolStderr("c1", "step 1/3");
  progress.draw();
  advance(30_400);
  progress.draw();
  advance(600);
  progress.end("c1", success(1));
  await progress.close();
  assert.equal(written[0], "\r\x1b[2K  running exec 0.0s/310s");
  assert.equal(written[1], "\r\x1b[2K  running exec 0.0s/310s\n  running build 0.0s");
  // Redrawn in place, the limit beside the time; a call without one shows its time alone.
  assert.equal(
    written[2],
    "\r\x1b[2K\x1b[1A\x1b[2K  running exec 30.0s/310s step 1/3\n  running build 30.0s",
  );
  assert.equal(
    written[3],
    "\r\x1b[2K\x1b[1A\x1b[2K  running exec 60.4s/310s step 1/3\n  running build 60.4s",
  );
  // The only line that stays is the finished call's.
  assert.equal(written[4], "\r\x1b[2K\x1b[1A\x1b[2K  ✓ exec 61.0s ok\n");
  assert.equal(written[5], "\r\x1b[2K  running build 61.0s");
  assert.equal(written.length, 7);
  assert.ok(!written.join("").includes("elapsed="), written.join(""));
});

Deno.test("progress: on its own timer, a real running call's line is redrawn in place with its limit, and nothing else stays", async () => {
  const written: string[] = [];
  const progress = new Progress({
    enabled: true,
    write: (text) => Promise.resolve(void written.push(text)),
    intervalMs: 100,
  });
  progress.start("c1", "nap", 10);
  const child = new Deno.Command("sleep", { args: ["0.8"] }).spawn();
  await child.status;
  progress.end("c1", success(1));
  await progress.close();
  const redraws = written.filter((text) =>
    text.startsWith("\r\x1b[2K  running nap ") && /^ {2}running nap \d+\.\ds\/10s$/.test(text.slice(5))
  );
  assert.ok(redraws.length >= 3, `${redraws.length} redraws in 0.8 s: ${JSON.stringify(written)}`);
  // Every write but the finished call's line ends where it began: nothing piles up on the terminal.
  const standing = written.filter((text) => text.includes("\n"));
  assert.equal(standing.length, 1, JSON.stringify(written));
  assert.match(standing[0], /✓ nap \d+\.\ds ok\n$/);
});

Deno.test("heartbeatText: serve's progress words, with the limit where the call has one", () => {
  assert.equal(heartbeatText("exec", 89_600, 3610), "running exec elapsed=90s/3610s");
  assert.equal(heartbeatText("build", 60_000), "running build elapsed=60s");
});

/** Lets the queued writes go out. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("progress: a toolgate/1 tool's progress shows in its line; a question holds the line", async () => {
  const { progress, written, advance } = harness();
  progress.start("c1", "build");
  advance(1000);
  progress.toolEvent("c1", { kind: "progress", progress: 3, total: 4, message: "linking\x1b[2J" });
  progress.draw();
  await settle();
  // The tool's control characters are shown, not obeyed.
  assert.equal(written.at(-1), "\r\x1b[2K  running build 1.0s 75% linking␛[2J");
  const before = written.length;
  const answer = await progress.hold(() => {
    progress.draw();
    return Promise.resolve("typed");
  });
  await settle();
  assert.equal(answer, "typed");
  assert.equal(written[before], "\r\x1b[2K", "the line is cleared before the question");
  assert.ok(
    !written.slice(before + 1, -1).some((text) => text.includes("running")),
    "not drawn over the question",
  );
  progress.toolEvent("c1", { kind: "progress", progress: 7 });
  progress.draw();
  await settle();
  assert.equal(written.at(-1), "\r\x1b[2K  running build 1.0s 7");
  await progress.close();
});

Deno.test("progress: an MCP server's log message and its progress show in its tool's line", async () => {
  const { progress, written, advance } = harness();
  progress.start("c1", "mcp__ev__build");
  advance(2000);
  progress.toolEvent("c1", {
    kind: "log",
    level: "info",
    logger: "ev",
    message: "compiling\n  module a\x1b[2J",
    data: "compiling",
  });
  progress.draw();
  await settle();
  assert.equal(written.at(-1), "\r\x1b[2K  running mcp__ev__build 2.0s compiling module a␛[2J");
  progress.toolEvent("c1", { kind: "progress", progress: 2, total: 4, message: "step 2 of 4" });
  progress.draw();
  await settle();
  assert.equal(written.at(-1), "\r\x1b[2K  running mcp__ev__build 2.0s 50% step 2 of 4");
  await progress.close();
});

Deno.test("progress: while the model is asked, one line says which model at which host and for how long, then goes", async () => {
  const { progress, written, advance } = harness();
  progress.waiting("qwen2.5", "127.0.0.1:11434");
  advance(3400);
  progress.draw();
  progress.doneWaiting();
  // The tools' line takes over for the next turn, as before.
  progress.start("c1", "nap");
  await progress.close();
  assert.deepEqual(written.slice(0, 3), [
    "\r\x1b[2K  waiting for qwen2.5 at 127.0.0.1:11434, 0 s",
    "\r\x1b[2K  waiting for qwen2.5 at 127.0.0.1:11434, 3 s",
    "\r\x1b[2K",
  ]);
  assert.equal(written[3], "\r\x1b[2K  running nap 0.0s");
  // Disabled (no terminal, --quiet): nothing.
  const quiet = harness(false);
  quiet.progress.waiting("m", "h");
  quiet.progress.doneWaiting();
  await quiet.progress.close();
  assert.deepEqual(quiet.written, []);
});

Deno.test("progress: a tool's last stderr line shows in its own line, beside its timer", async () => {
  const { progress, written, advance } = harness();
  progress.start("c1", "build");
  progress.start("c2", "fetch");
  advance(2000);
  progress.toolStderr("c1", "step 2/3 linking");
  progress.toolStderr("c3", "no such call: ignored");
  progress.draw();
  await settle();
  assert.equal(
    written.at(-1),
    "\r\x1b[2K\x1b[1A\x1b[2K  running build 2.0s step 2/3 linking\n  running fetch 2.0s",
  );
  await progress.close();
});
