import assert from "node:assert/strict";
import { failure, success } from "../src/contract.ts";
import { Progress } from "../src/progress.ts";

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

Deno.test("progress: shows the running tools and their elapsed time, redrawn in place", async () => {
  const { progress, written, advance } = harness();
  progress.start("c1", "nap");
  advance(1200);
  progress.start("c2", "echo");
  advance(300);
  progress.draw();
  await progress.close();
  assert.equal(written[0], "\r\x1b[2K  running nap 0.0s");
  assert.equal(written[2], "\r\x1b[2K  running 2 tools: nap 1.5s, echo 0.3s");
  assert.equal(written.at(-1), "\r\x1b[2K", "the line is cleared at the end");
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

Deno.test("progress: the line never outgrows the terminal", async () => {
  const written: string[] = [];
  const progress = new Progress({
    enabled: true,
    write: (t) => Promise.resolve(void written.push(t)),
    columns: 40,
  });
  for (let i = 0; i < 20; i++) progress.start(`c${i}`, `tool_number_${i}`);
  await progress.close();
  for (const line of written) assert.ok(line.replace("\r\x1b[2K", "").length <= 39, line);
});
