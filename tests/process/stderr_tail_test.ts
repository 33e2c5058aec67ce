import assert from "node:assert/strict";
import { stderrLines, StderrTail } from "../../src/process/stderr_tail.ts";
import { makeRedactor } from "../../src/state/redact.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("StderrTail: the last whole line with words, each time it changes; a line being written waits", () => {
  const seen: string[] = [];
  const tail = new StderrTail((line) => seen.push(line));
  tail.push(bytes("starting\nstep 1"));
  assert.deepEqual(seen, ["starting"], "a line still being written is not shown");
  tail.push(bytes("/3\n\n   \n"));
  tail.push(bytes("step 1/3\n"));
  // A progress bar redrawn with carriage returns: each redraw is a line.
  tail.push(bytes("\r 10%\r 20%\r 30%\r"));
  assert.deepEqual(seen, ["starting", "step 1/3", "30%"]);
});

Deno.test("StderrTail: a character split between chunks, and a line too long to keep", () => {
  const seen: string[] = [];
  const tail = new StderrTail((line) => seen.push(line));
  const text = bytes("étape 2\n");
  tail.push(text.slice(0, 1));
  tail.push(text.slice(1));
  tail.push(bytes("x".repeat(10_000)));
  tail.push(bytes("y".repeat(10_000) + "\n"));
  assert.equal(seen[0], "étape 2");
  assert.equal(seen[1], "x".repeat(4096));
});

Deno.test("stderrLines: escape sequences go before the masking, so one inside a secret cannot hide it", () => {
  const secret = "sk-live-0123456789abcdef";
  const seen: string[] = [];
  const onStderr = stderrLines((line) => seen.push(line), makeRedactor([secret]));
  onStderr(bytes(`key ${secret.slice(0, 10)}\x1b[0m${secret.slice(10)}\n`));
  onStderr(bytes("\x1b]0;title\x07\x1b[2J\x1b[1;31mred\x1b[0m\n"));
  assert.deepEqual(seen, ["key [REDACTED]", "red"]);
});
