/** The one scheduler: concurrent calls share, other calls run alone, first come first served, caps, cancellation. */
import assert from "node:assert/strict";
import { CallLimit, type Release, Scheduler } from "../../src/run/scheduler.ts";

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Acquires and records the order in which turns come. */
function taker(scheduler: Scheduler, events: string[]) {
  return (name: string, concurrent: boolean, signal?: AbortSignal): Promise<Release | undefined> =>
    scheduler.acquire(concurrent, signal).then((release) => {
      if (release) events.push(name);
      return release;
    });
}

Deno.test("Scheduler: concurrent calls run together; a call that is not concurrent waits for them and holds later ones back", async () => {
  const scheduler = new Scheduler();
  const events: string[] = [];
  const take = taker(scheduler, events);
  const a = await take("a", true);
  const b = await take("b", true);
  const exclusive = take("exclusive", false);
  const later = take("later", true);
  await tick();
  assert.deepEqual(events, ["a", "b"]);
  a!();
  await tick();
  assert.deepEqual(events, ["a", "b"], "b still runs");
  b!();
  const releaseExclusive = await exclusive;
  await tick();
  assert.deepEqual(events, ["a", "b", "exclusive"], "the later concurrent call waits for the exclusive one");
  releaseExclusive!();
  (await later)!();
  assert.deepEqual(events, ["a", "b", "exclusive", "later"]);
});

Deno.test("Scheduler: a call cancelled while it waits holds nothing and lets the line move", async () => {
  const scheduler = new Scheduler();
  const first = await scheduler.acquire(false);
  const controller = new AbortController();
  const cancelled = scheduler.acquire(false, controller.signal);
  const next = scheduler.acquire(true);
  assert.equal(scheduler.waiting, 2);
  controller.abort();
  assert.equal(await cancelled, undefined);
  assert.equal(scheduler.waiting, 1);
  first!();
  const release = await next;
  assert.equal(typeof release, "function");
  release!();
  release!(); // a second release is harmless
  assert.equal(scheduler.inFlight, 0);
  assert.equal(await scheduler.acquire(false, AbortSignal.abort()), undefined);
  (await scheduler.acquire(false))!();
});

Deno.test("Scheduler: maxInFlight caps the calls running at once; the rest wait in arrival order", async () => {
  const scheduler = new Scheduler({ maxInFlight: 2 });
  const events: string[] = [];
  const take = taker(scheduler, events);
  const running = await Promise.all([take("1", true), take("2", true)]);
  const third = take("3", true);
  const fourth = take("4", true);
  await tick();
  assert.deepEqual(events, ["1", "2"]);
  assert.equal(scheduler.inFlight, 2);
  running[1]!();
  const releaseThird = await third;
  await tick();
  assert.deepEqual(events, ["1", "2", "3"]);
  running[0]!();
  (await fourth)!();
  releaseThird!();
  assert.deepEqual(events, ["1", "2", "3", "4"]);
});

Deno.test("Scheduler.run: the work runs in its turn, the slot is freed after it, even when it throws", async () => {
  const scheduler = new Scheduler({ maxInFlight: 1 });
  assert.equal(await scheduler.run(false, undefined, () => Promise.resolve(42)), 42);
  await assert.rejects(scheduler.run(true, undefined, () => Promise.reject(new Error("boom"))), /boom/);
  assert.equal(scheduler.inFlight, 0);
  assert.equal(await scheduler.run(true, AbortSignal.abort(), () => Promise.resolve(1)), undefined);
});

Deno.test("Scheduler: sessions on one CallLimit do not block each other's turns, but share the cap", async () => {
  const limit = new CallLimit(2);
  const sessionA = new Scheduler({ limit });
  const sessionB = new Scheduler({ limit });
  const events: string[] = [];
  // A holds a long call that is not concurrent; B's concurrent call is not held back by it.
  const long = await taker(sessionA, events)("A:long", false);
  const quick = await taker(sessionB, events)("B:quick", true);
  assert.deepEqual(events, ["A:long", "B:quick"]);
  assert.equal(limit.used, 2);
  // The cap is full: B's next call waits, and so does A's, in turn.
  const waitingB = taker(sessionB, events)("B:next", true);
  const controller = new AbortController();
  const waitingA = taker(sessionA, events)("A:next", true, controller.signal);
  await tick();
  assert.deepEqual(events, ["A:long", "B:quick"]);
  quick!();
  (await waitingB)!();
  assert.deepEqual(events, ["A:long", "B:quick", "B:next"]);
  // A's waiting call is cancelled while the cap is free again: it takes nothing, and the cap holds its count.
  controller.abort();
  assert.equal(await waitingA, undefined);
  long!();
  assert.equal(limit.used, 0);
  assert.throws(() => new CallLimit(0), RangeError);
});

Deno.test("CallLimit: a freed slot goes to the session that waited first, then the next", async () => {
  const limit = new CallLimit(1);
  const a = new Scheduler({ limit });
  const b = new Scheduler({ limit });
  const c = new Scheduler({ limit });
  const events: string[] = [];
  const first = await taker(a, events)("a1", true);
  const fromB = taker(b, events)("b1", true);
  const fromC = taker(c, events)("c1", true);
  first!();
  (await fromB)!();
  (await fromC)!();
  assert.deepEqual(events, ["a1", "b1", "c1"]);
});
