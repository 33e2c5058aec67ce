// The store of processes started ahead (src/process/starts_ahead.ts), with real processes: a call takes the one
// waiting only when its start is exactly the one it was made for; any other is ended first.
import assert from "node:assert/strict";
import { StartsAhead } from "../../src/process/starts_ahead.ts";
import { runProcess } from "../../src/process/runner.ts";
import { pgrep, until } from "../processes.ts";

const encoder = new TextEncoder();

/** A start of `sh` that waits on its stdin and says what it got (and its SECRET), marked for pgrep. */
function start(mark: string, env: Record<string, string> = { PATH: "/usr/bin:/bin" }) {
  return {
    program: "/bin/sh",
    args: ["-c", `read -r line; echo "$line\${SECRET-} $0"`, mark],
    env,
    cwd: "/",
  };
}

async function running(mark: string): Promise<number[]> {
  return await pgrep(mark, false);
}

function run(ahead: StartsAhead, request: ReturnType<typeof start>, input: string) {
  return runProcess({
    ...request,
    stdin: encoder.encode(`${input}\n`),
    timeoutMs: 10_000,
    graceMs: 500,
    maxOutputBytes: 4096,
    endsItsTree: true,
    ahead,
  });
}

Deno.test("starts ahead: the next call of the same start takes the process waiting, and gets its own input", async () => {
  const ahead = new StartsAhead();
  const mark = `same-${crypto.randomUUID()}`;
  const first = await run(ahead, start(mark), "one");
  assert.equal(new TextDecoder().decode(first.stdout), `one ${mark}\n`);
  ahead.refill();
  const [waiting] = await running(mark);
  assert.ok(waiting !== undefined, "a process waits for the next call");
  const second = await run(ahead, start(mark), "two");
  assert.equal(new TextDecoder().decode(second.stdout), `two ${mark}\n`);
  assert.deepEqual(await running(mark), [], "the call took the waiting process: none is left");
  await ahead.close();
});

Deno.test("starts ahead: a call of another start (an environment differs) ends the waiting process and starts its own", async () => {
  const ahead = new StartsAhead();
  const mark = `other-${crypto.randomUUID()}`;
  await run(ahead, start(mark, { PATH: "/usr/bin:/bin", SECRET: "a" }), "one");
  ahead.refill();
  const [waiting] = await running(mark);
  assert.ok(waiting !== undefined);
  const other = await run(ahead, start(mark, { PATH: "/usr/bin:/bin", SECRET: "b" }), "two");
  assert.equal(new TextDecoder().decode(other.stdout), `twob ${mark}\n`, "its own environment's process");
  assert.deepEqual(await running(mark), [], "the waiting process was ended, not handed to the other start");
  await ahead.close();
});

Deno.test("starts ahead: a process that ended while it waited is not handed out; close ends the one waiting", async () => {
  const ahead = new StartsAhead();
  const mark = `ended-${crypto.randomUUID()}`;
  await run(ahead, start(mark), "one");
  ahead.refill();
  const [waiting] = await running(mark);
  Deno.kill(waiting, "SIGKILL");
  await until(async () => (await running(mark)).length === 0, "the waiting process gone");
  const next = await run(ahead, start(mark), "two");
  assert.equal(next.code, 0);
  assert.equal(new TextDecoder().decode(next.stdout), `two ${mark}\n`);
  ahead.refill();
  await until(async () => (await running(mark)).length === 1, "a process waiting again");
  await ahead.close();
  assert.deepEqual(await running(mark), [], "close ended it");
  ahead.refill();
  assert.deepEqual(await running(mark), [], "nothing starts ahead after close");
});
