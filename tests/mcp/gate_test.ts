/** The MCP server's call gate: concurrent calls share, other calls run alone, first come first served. */
import assert from "node:assert/strict";
import { CallGate } from "../../src/mcp/gate.ts";

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("CallGate: shared slots run together; an exclusive one waits for them and holds others back", async () => {
  const gate = new CallGate();
  const events: string[] = [];
  const a = await gate.acquire(false);
  const b = await gate.acquire(false);
  const exclusive = gate.acquire(true).then((release) => (events.push("exclusive"), release));
  const later = gate.acquire(false).then((release) => (events.push("later"), release));
  await tick();
  assert.deepEqual(events, []);
  a!();
  await tick();
  assert.deepEqual(events, []);
  b!();
  const releaseExclusive = await exclusive;
  await tick();
  assert.deepEqual(events, ["exclusive"]);
  releaseExclusive!();
  (await later)!();
  assert.deepEqual(events, ["exclusive", "later"]);
});

Deno.test("CallGate: a call cancelled while it waits holds nothing and lets the queue move", async () => {
  const gate = new CallGate();
  const first = await gate.acquire(true);
  const controller = new AbortController();
  const cancelled = gate.acquire(true, controller.signal);
  const next = gate.acquire(false);
  controller.abort();
  assert.equal(await cancelled, undefined);
  first!();
  const release = await next;
  assert.equal(typeof release, "function");
  release!();
  release!(); // a second release is harmless
  assert.equal(await gate.acquire(true, AbortSignal.abort()), undefined);
  (await gate.acquire(true))!();
});
