/**
 * Benchmarks the worker pool: 1,000 trivial calls through a NATS JetStream pool of 1, 2 and 4 workers on this
 * machine, against the same calls run locally by the same executor. Two figures per setting, measured in one run:
 *
 * - latency: calls one after the other, so the pool's own cost per call shows (`overhead_ms`, and the ratio to a
 *   local call);
 * - throughput: the 1,000 calls with 16 in flight, in calls per second.
 *
 * The tool is `echo_stdin` (a shell that runs cat): the smallest real process. The sandbox is off on both sides,
 * so that the figures are the pool's, not bubblewrap's (which has its own benchmark). Each worker runs one call at
 * a time (`--concurrency 1`): the number of workers is the pool's width. Skipped without `nats-server`.
 *
 * Run: `deno run -A tests/bench/pool_bench.ts`
 *
 * @module
 */
import { join } from "node:path";
import type { Executor } from "../../src/run/executor.ts";
import { executorFor, manifestOf, scratch } from "../executor_helpers.ts";
import {
  NATS_SERVER,
  natsServer,
  poolFor,
  startWorker,
  type WorkerProcess,
  writePoolManifest,
} from "../pool/helpers.ts";

const CALLS = 1_000;
const WARMUP = 50;
const IN_FLIGHT = 16;
const ARGS = '{"n":1,"text":"hello"}';
const TOOLS = [{
  name: "echo",
  readOnly: true,
  command: [join(import.meta.dirname!, "..", "fixtures", "tools", "bin", "echo_stdin")],
}];

async function call(executor: Executor): Promise<void> {
  const envelope = await executor.call("echo", ARGS);
  if (!envelope.ok) throw new Error(`a call failed: ${JSON.stringify(envelope)}`);
}

/** Mean milliseconds per call, one call after the other. */
async function latency(executor: Executor, count: number): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await call(executor);
  const started = performance.now();
  for (let i = 0; i < count; i++) await call(executor);
  return (performance.now() - started) / count;
}

/** Calls per second, `IN_FLIGHT` at a time. */
async function throughput(executor: Executor, count: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next++ < count) await call(executor);
  }));
  return count / ((performance.now() - started) / 1000);
}

/** The pool's figures beside the local ones; `{}` when nats-server is missing. */
export async function benchPool(): Promise<Record<string, number>> {
  if (NATS_SERVER === undefined) {
    console.log("  skipped: nats-server is not installed (apt-get install nats-server)");
    return {};
  }
  await using server = await natsServer();
  await using dir = await scratch();
  const path = await writePoolManifest(dir.path, TOOLS);
  const manifest = manifestOf(TOOLS);
  await using pool = await poolFor(server, manifest);
  const local = executorFor(manifest, { cwd: dir.path });
  const remote = executorFor(manifest, { cwd: dir.path, pool });
  const results: Record<string, number> = {};
  results.local_ms_per_call = await latency(local, CALLS);
  results.local_calls_per_s = await throughput(local, CALLS);
  const workers: WorkerProcess[] = [];
  try {
    for (const width of [1, 2, 4]) {
      while (workers.length < width) {
        workers.push(await startWorker(server.url, path, dir.path, `w${workers.length + 1}`));
      }
      const perCall = await latency(remote, CALLS);
      results[`pool${width}_ms_per_call`] = perCall;
      results[`pool${width}_overhead_ms`] = perCall - results.local_ms_per_call;
      results[`pool${width}_latency_ratio`] = perCall / results.local_ms_per_call;
      results[`pool${width}_calls_per_s`] = await throughput(remote, CALLS);
    }
  } finally {
    for (const worker of workers) await worker[Symbol.asyncDispose]();
  }
  return results;
}

if (import.meta.main) {
  for (const [key, value] of Object.entries(await benchPool())) {
    console.log(`  ${key}: ${Number(value.toFixed(3))}`);
  }
}
