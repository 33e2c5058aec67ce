/**
 * The worker pool against a real NATS server on loopback: workers as `toolgate worker` processes, callers as
 * executors with a pool. Envelopes equal to local ones, a dying worker (read-only: run again and answered once;
 * side effects: `unavailable`, run once), cancellation, no worker, another manifest, de-duplication, and a stop.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import type { Envelope } from "../../src/contract.ts";
import { connectPool } from "../../src/pool/connect.ts";
import { manifestHash, POOL, shortHash } from "../../src/pool/protocol.ts";
import { UserStop } from "../../src/process/stop.ts";
import {
  baseEnv,
  executorFor,
  killLeftovers,
  manifestOf,
  parsePids,
  readAudit,
  scratch,
  waitForFile,
  waitGone,
} from "../executor_helpers.ts";
import {
  natsServer,
  POOL_TOOLS,
  poolFor,
  poolTest,
  runsIn,
  startWorker,
  type WorkerProcess,
  writePoolManifest,
} from "./helpers.ts";
import { until } from "../processes.ts";

const MANIFEST = manifestOf(POOL_TOOLS);

/** The calls of the equality test: successes, failures, a timeout, refusals, and enough to keep two workers busy. */
const CALLS: readonly [string, string][] = [
  ["echo", '{"n":"7","text":"hi"}'],
  ["fail", "{}"],
  ["nap", "{}"],
  ["echo", "[1]"],
  ["nope", "{}"],
  ...Array.from({ length: 12 }, (_, i) => ["echo", JSON.stringify({ n: i })] as [string, string]),
];

poolTest("pool: calls through two workers answer exactly the envelopes of local calls", async () => {
  await using server = await natsServer();
  await using dir = await scratch();
  const path = await writePoolManifest(dir.path, POOL_TOOLS);
  await using _a = await startWorker(server.url, path, dir.path, "a");
  await using _b = await startWorker(server.url, path, dir.path, "b");
  await using pool = await poolFor(server, MANIFEST);
  await using audit = await scratch();
  // The caller's limits travel with each call: `nap` (30 s) times out after this caller's 4 s on the worker too
  // (long enough for a worker to take every other call on a loaded machine).
  const local = executorFor(MANIFEST, { defaultTimeoutSec: 4 });
  const remote = executorFor(MANIFEST, { defaultTimeoutSec: 4, pool, auditDir: audit.path });
  const [here, there] = await Promise.all([
    Promise.all(CALLS.map(([name, args]) => local.call(name, args))),
    Promise.all(CALLS.map(([name, args]) => remote.call(name, args))),
  ]);
  assert.deepEqual(there, here);
  assert.equal((here[2] as Envelope & { kind?: string }).kind, "timeout");
  // Both workers ran calls; the caller's audit names which, and refused calls never left the caller.
  const records = await readAudit(audit.path);
  const workers = new Set(records.map((record) => record.worker).filter((name) => name !== undefined));
  assert.deepEqual([...workers].sort(), ["a", "b"]);
  assert.equal(records.filter((record) => record.pool === server.url).length, CALLS.length - 2);
});

poolTest(
  "pool: a read-only call whose worker dies runs again on another worker and is answered once",
  async () => {
    await using server = await natsServer();
    await using dirA = await scratch();
    await using dirB = await scratch();
    await using audit = await scratch();
    await using manifestDir = await scratch();
    const path = await writePoolManifest(manifestDir.path, POOL_TOOLS);
    await using a = await startWorker(server.url, path, dirA.path, "a");
    await using pool = await poolFor(server, MANIFEST);
    const remote = executorFor(MANIFEST, { pool, auditDir: audit.path });
    const answer = remote.call("slow_read", "{}");
    let b: WorkerProcess | undefined;
    try {
      await until(async () => (await runsIn(dirA.path)).length > 0, "worker a takes the call");
      b = await startWorker(server.url, path, dirB.path, "b");
      await a.kill();
      assert.deepEqual(await answer, { ok: true, result: { slept: 3 }, tool: "slow_read" });
      assert.equal((await runsIn(dirA.path)).length, 1);
      assert.equal((await runsIn(dirB.path)).length, 1);
      const lines = (await readAudit(audit.path)).filter((record) => record.tool === "slow_read");
      assert.equal(lines.length, 1, "answered once");
      assert.equal(lines[0].worker, "b");
    } finally {
      await b?.[Symbol.asyncDispose]();
      killLeftovers([...await runsIn(dirA.path), ...await runsIn(dirB.path)].flat());
    }
  },
);

poolTest(
  "pool: a call with side effects whose worker dies answers unavailable and never runs again",
  async () => {
    await using server = await natsServer();
    await using dirA = await scratch();
    await using dirB = await scratch();
    await using manifestDir = await scratch();
    const path = await writePoolManifest(manifestDir.path, POOL_TOOLS);
    await using a = await startWorker(server.url, path, dirA.path, "a");
    await using pool = await poolFor(server, MANIFEST);
    const remote = executorFor(MANIFEST, { pool });
    const answer = remote.call("long_write", "{}");
    try {
      await until(async () => (await runsIn(dirA.path)).length > 0, "worker a takes the call");
      await using _b = await startWorker(server.url, path, dirB.path, "b");
      await a.kill();
      const killed = performance.now();
      const envelope = await answer;
      assert.equal(envelope.ok, false);
      assert.ok(!envelope.ok);
      assert.equal(envelope.kind, "unavailable");
      assert.equal(envelope.retryable, false);
      assert.match(envelope.message, /may have run/);
      // Told once the beats stop, before the stream would even hand the call out again.
      assert.ok(
        performance.now() - killed < POOL.ackWaitMs,
        `answered after ${performance.now() - killed} ms`,
      );
      // Past the time a redelivery would take: the other worker never ran it.
      await new Promise((resolve) => setTimeout(resolve, POOL.ackWaitMs + 2 * POOL.heartbeatMs));
      assert.equal((await runsIn(dirA.path)).length, 1);
      assert.deepEqual(await runsIn(dirB.path), []);
    } finally {
      killLeftovers([...await runsIn(dirA.path), ...await runsIn(dirB.path)].flat());
    }
  },
);

poolTest("pool: a cancelled call ends its tree on the worker and answers killed_by user", async () => {
  await using server = await natsServer();
  await using dir = await scratch();
  const path = await writePoolManifest(dir.path, POOL_TOOLS);
  await using _worker = await startWorker(server.url, path, dir.path, "a");
  await using pool = await poolFor(server, MANIFEST);
  const remote = executorFor(MANIFEST, { pool, graceMs: 500 });
  const controller = new AbortController();
  const answer = remote.call("hang", "{}", { signal: controller.signal });
  const pids = parsePids(await waitForFile(join(dir.path, "pids")));
  try {
    controller.abort(new UserStop());
    const envelope = await answer;
    assert.ok(!envelope.ok);
    assert.equal(envelope.kind, "execution_error");
    assert.equal(envelope.killed_by, "user");
    assert.equal(envelope.cancelled, true);
    assert.deepEqual(await waitGone(pids, 3000), [], "the tree on the worker is gone");
  } finally {
    killLeftovers(pids);
  }
});

poolTest(
  "pool: without a worker a call answers unavailable within its timeout, and never runs later",
  async () => {
    await using server = await natsServer();
    await using dir = await scratch();
    const path = await writePoolManifest(dir.path, POOL_TOOLS);
    await using pool = await poolFor(server, MANIFEST);
    const remote = executorFor(MANIFEST, { pool, defaultTimeoutSec: 1 });
    const started = performance.now();
    const envelope = await remote.call("slow_write", "{}");
    const elapsed = performance.now() - started;
    assert.ok(!envelope.ok);
    assert.equal(envelope.kind, "unavailable");
    assert.equal(envelope.retryable, true);
    assert.match(envelope.message, /No worker .* took the call within 1 s; it did not run/);
    assert.ok(elapsed >= 900 && elapsed < 1500, `answered after ${elapsed} ms`);
    // A worker that comes later finds the call in the stream, and its caller no longer wants it.
    await using worker = await startWorker(server.url, path, dir.path, "late");
    await new Promise((resolve) => setTimeout(resolve, 2000));
    assert.deepEqual(await runsIn(dir.path), []);
    assert.doesNotMatch(worker.stderr(), /failed/);
  },
);

poolTest(
  "pool: a worker with another manifest runs nothing; the caller is told so, never the worker's hash",
  async () => {
    await using server = await natsServer();
    await using dir = await scratch();
    const other = POOL_TOOLS.map((tool) =>
      tool.name === "echo" ? { ...tool, description: "Changed." } : tool
    );
    const path = await writePoolManifest(dir.path, other);
    await using worker = await startWorker(server.url, path, dir.path, "other");
    await using pool = await poolFor(server, MANIFEST);
    const remote = executorFor(MANIFEST, { pool, defaultTimeoutSec: 1 });
    const envelope = await remote.call("slow_read", "{}");
    assert.ok(!envelope.ok);
    assert.equal(envelope.kind, "unavailable");
    assert.equal(envelope.retryable, false);
    // The caller names its own manifest; the worker's hash is in the worker's log only, never sent to a caller.
    assert.match(
      envelope.message,
      /worker other serves another manifest than this caller's \(sha256:[0-9a-f]{12};/,
    );
    const theirs = await manifestHash(manifestOf(other));
    assert.ok(!envelope.message.includes(shortHash(theirs)), envelope.message);
    assert.deepEqual(await runsIn(dir.path), []);
    assert.match(worker.stderr(), /not run here/);
  },
);

poolTest("pool: the stream drops a call published again with the same id", async () => {
  await using server = await natsServer();
  const nc = await connectPool(server.address, baseEnv(), "test");
  try {
    const js = jetstream(nc);
    const first = await js.publish(POOL.subject, "{}", { msgID: "call-1" });
    const again = await js.publish(POOL.subject, "{}", { msgID: "call-1" });
    assert.equal(first.duplicate, false);
    assert.equal(again.duplicate, true);
    assert.equal(again.seq, first.seq);
  } finally {
    await nc.close();
  }
});

poolTest("pool: a stopped worker takes no more calls and finishes the one it runs", async () => {
  await using server = await natsServer();
  await using dir = await scratch();
  const path = await writePoolManifest(dir.path, POOL_TOOLS);
  const worker = await startWorker(server.url, path, dir.path, "a");
  await using pool = await poolFor(server, MANIFEST);
  const remote = executorFor(MANIFEST, { pool });
  try {
    const answer = remote.call("slow_read", "{}");
    await until(async () => (await runsIn(dir.path)).length > 0, "the worker takes the call");
    const code = await worker.stop();
    assert.equal(code, 143);
    assert.deepEqual(await answer, { ok: true, result: { slept: 3 }, tool: "slow_read" });
    // Nobody serves now: the next call is not taken.
    const next = await executorFor(MANIFEST, { pool, defaultTimeoutSec: 1 }).call("echo", "{}");
    assert.ok(!next.ok && next.kind === "unavailable");
  } finally {
    await worker[Symbol.asyncDispose]();
    killLeftovers((await runsIn(dir.path)).flat());
  }
});
