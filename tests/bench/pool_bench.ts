/**
 * Benchmarks the worker pool: trivial calls through a NATS JetStream pool of 1, 2 and 4 workers on this machine,
 * against the same calls run locally by the same executor, interleaved (a local call, then a pooled one, the order
 * turning each round), so that the machine's noise falls on both alike. Two figures per setting, in one run:
 *
 * - latency: calls one after the other, so the pool's own cost per call shows: the medians of each
 *   (`ms_per_call`), their difference (`overhead_ms`, the target: at most 3 ms) and their ratio;
 * - throughput: 500 calls with 16 in flight, in calls per second, the local executor's measured just before.
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

/** Pairs of calls (one local, one pooled) per pool width. */
const PAIRS = 300;
const THROUGHPUT_CALLS = 500;
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

/** The median of `values`. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Median milliseconds per call of each executor, one call after the other, the two interleaved. */
async function latency(local: Executor, remote: Executor, pairs: number): Promise<[number, number]> {
  for (let i = 0; i < WARMUP; i++) await call(local), await call(remote);
  const times: [number[], number[]] = [[], []];
  for (let i = 0; i < pairs; i++) {
    for (const side of i % 2 === 0 ? [0, 1] : [1, 0]) {
      const started = performance.now();
      await call(side === 0 ? local : remote);
      times[side].push(performance.now() - started);
    }
  }
  return [median(times[0]), median(times[1])];
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
  const workers: WorkerProcess[] = [];
  const localMs: number[] = [];
  const localPerS: number[] = [];
  try {
    for (const width of [1, 2, 4]) {
      while (workers.length < width) {
        workers.push(await startWorker(server.url, path, dir.path, `w${workers.length + 1}`));
      }
      const [here, perCall] = await latency(local, remote, PAIRS);
      localMs.push(here);
      results[`pool${width}_ms_per_call`] = perCall;
      results[`pool${width}_overhead_ms`] = perCall - here;
      results[`pool${width}_latency_ratio`] = perCall / here;
      localPerS.push(await throughput(local, THROUGHPUT_CALLS));
      results[`pool${width}_calls_per_s`] = await throughput(remote, THROUGHPUT_CALLS);
    }
  } finally {
    for (const worker of workers) await worker[Symbol.asyncDispose]();
  }
  results.local_ms_per_call = median(localMs);
  results.local_calls_per_s = localPerS.reduce((a, b) => a + b) / localPerS.length;
  return results;
}

if (import.meta.main) {
  for (const [key, value] of Object.entries(await benchPool())) {
    console.log(`  ${key}: ${Number(value.toFixed(3))}`);
  }
}
