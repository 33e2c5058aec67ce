/**
 * Benchmarks the worker pool: trivial calls through a NATS JetStream pool of 1, 2 and 4 workers on this machine,
 * against the same calls run locally by the same executor, interleaved (a local call, then a pooled one, every
 * order in turn), so that the machine's noise falls on both alike. Two figures per setting, in one run:
 *
 * - latency: calls one after the other, so the pool's own cost per call shows: the medians of each
 *   (`ms_per_call`), their difference (`overhead_ms`, the target: at most 3 ms) and their ratio;
 * - throughput: 500 calls with 16 in flight, in calls per second, the local executor's measured just before.
 *
 * And two figures of calls with side effects, whose tool runs only once the caller's go came:
 * - beside a read-only call through one worker (`pool1_side_effects_*`): a worker starts a read-only call while
 *   the go travels, and one with side effects too, held at its gate (the session starter's, here) until the go;
 * - confined, through one confined worker, beside the same call run locally (`pool1_confined_side_effects_*`):
 *   the gate of a confined start comes before bubblewrap, so only the cgroup's setup is made before the go. The
 *   noisiest figure here: a run of this checkout beside a copy of itself said 0.87 to 1.15.
 *
 * The tool is `echo_stdin` (a shell that runs cat): the smallest real process, read-only by its manifest (and, for
 * the figures of side effects, the same tool declared with them). The sandbox is off on both sides but for the
 * confined figure, so that the figures are the pool's, not bubblewrap's (which has its own benchmark). The session
 * starter is built first, as `deno task install` builds it. Each worker runs one call at a time
 * (`--concurrency 1`): the number of workers is the pool's width. Skipped without `nats-server`.
 *
 * Run: `deno run -A tests/bench/pool_bench.ts` (`--baseline DIR`: another checkout of toolgate's pool, its client and
 * workers, on a nats-server of its own, interleaved with this one's: a before-and-after ratio from one run).
 *
 * @module
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Executor } from "../../src/run/executor.ts";
import { baseEnv, executorFor, manifestOf, scratch } from "../executor_helpers.ts";
import { probeSandbox } from "../../src/sandbox/sandbox.ts";
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
/** Pairs of confined calls (each starts a sandbox, a few ms). */
const CONFINED_PAIRS = 150;
const THROUGHPUT_CALLS = 500;
const WARMUP = 50;
const IN_FLIGHT = 16;
const ARGS = '{"n":1,"text":"hello"}';
const ECHO_STDIN = join(import.meta.dirname!, "..", "fixtures", "tools", "bin", "echo_stdin");
/**
 * The same tool twice: read-only (its worker starts it while the caller's go travels) and, for one figure, as a
 * call with side effects (its worker waits for the go).
 */
const TOOLS = [
  { name: "echo", readOnly: true, command: [ECHO_STDIN] },
  { name: "echo_effects", command: [ECHO_STDIN] },
];

async function call(executor: Executor, tool = "echo"): Promise<void> {
  const envelope = await executor.call(tool, ARGS);
  if (!envelope.ok) throw new Error(`a call failed: ${JSON.stringify(envelope)}`);
}

/** This checkout's builder of the session starter. */
const HERE_NATIVE = join(import.meta.dirname!, "..", "..", "src", "build", "native.ts");

/** Another checkout to measure beside this one (`--baseline DIR`). */
const BASELINE = Deno.args.includes("--baseline")
  ? Deno.args[Deno.args.indexOf("--baseline") + 1]
  : undefined;

/** The median of `values`. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * Median milliseconds per call of each executor, one call after the other, interleaved (the order turning); each
 * calls `tool`, or its own of `tools`.
 */
async function latency(
  executors: readonly Executor[],
  rounds: number,
  tools?: readonly string[],
): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) {
    for (const [side, executor] of executors.entries()) await call(executor, tools?.[side]);
  }
  const times: number[][] = executors.map(() => []);
  // Every order in turn, so that each side follows each other as often: with three sides, turning the order
  // around left one in the middle always, and an identical checkout measured 1.08 to 1.10 times slower there.
  const orders = permutations(executors.map((_, side) => side));
  for (let i = 0; i < rounds; i++) {
    for (const side of orders[i % orders.length]) {
      const started = performance.now();
      await call(executors[side], tools?.[side]);
      times[side].push(performance.now() - started);
    }
  }
  return times.map(median);
}

/** Every order of `items`. */
function permutations(items: readonly number[]): number[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, at) =>
    permutations([...items.slice(0, at), ...items.slice(at + 1)]).map((rest) => [item, ...rest])
  );
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
  // The session starter, as `deno task install` builds it for its user (here and in the checkout before).
  for (
    const native of [
      HERE_NATIVE,
      ...BASELINE === undefined ? [] : [join(BASELINE, "src", "build", "native.ts")],
    ]
  ) {
    const { buildSessionStart } = await import(
      pathToFileURL(native).href
    ) as typeof import("../../src/build/native.ts");
    const built = await buildSessionStart(baseEnv());
    console.log(
      `  session starter: ${built.ok ? built.path : `none (${built.reason}): setsid(1) and a shell`}`,
    );
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
  // The checkout before, beside this one: its helpers start its own workers and open its own client.
  const before = BASELINE === undefined ? undefined : await import(
    pathToFileURL(join(BASELINE, "tests", "pool", "helpers.ts")).href
  ) as typeof import("../pool/helpers.ts");
  await using beforeServer = before === undefined ? undefined : await before.natsServer();
  await using beforePool = before === undefined || beforeServer === undefined
    ? undefined
    : await before.poolFor(beforeServer, manifest);
  const beforeRemote = beforePool && executorFor(manifest, { cwd: dir.path, pool: beforePool });
  try {
    for (const width of [1, 2, 4]) {
      for (let n = workers.length / (before === undefined ? 1 : 2) + 1; n <= width; n++) {
        workers.push(await startWorker(server.url, path, dir.path, `w${n}`));
        if (before !== undefined) {
          workers.push(await before.startWorker(beforeServer!.url, path, dir.path, `before-w${n}`));
        }
      }
      const [here, perCall, perCallBefore] = await latency(
        [local, remote, ...beforeRemote === undefined ? [] : [beforeRemote]],
        PAIRS,
      );
      localMs.push(here);
      results[`pool${width}_ms_per_call`] = perCall;
      results[`pool${width}_overhead_ms`] = perCall - here;
      results[`pool${width}_latency_ratio`] = perCall / here;
      if (width === 1) {
        // A call with side effects beside a read-only one, the same tool: what the go's round trip adds.
        const [readOnly, effects] = await latency([remote, remote], PAIRS, ["echo", "echo_effects"]);
        results.pool1_side_effects_ms_per_call = effects;
        results.pool1_side_effects_over_read_only_ms = effects - readOnly;
      }
      localPerS.push(await throughput(local, THROUGHPUT_CALLS));
      results[`pool${width}_calls_per_s`] = await throughput(remote, THROUGHPUT_CALLS);
      if (beforeRemote !== undefined) {
        results[`pool${width}_overhead_ms_before`] = perCallBefore - here;
        results[`pool${width}_calls_per_s_before`] = await throughput(beforeRemote, THROUGHPUT_CALLS);
        results[`pool${width}_overhead_over_before`] = (perCall - here) / (perCallBefore - here);
        results[`pool${width}_calls_per_s_over_before`] = results[`pool${width}_calls_per_s`] /
          results[`pool${width}_calls_per_s_before`];
      }
    }
  } finally {
    for (const worker of workers) await worker[Symbol.asyncDispose]();
  }
  Object.assign(
    results,
    await confinedSideEffects(server, path, dir.path, remote, before, beforeServer, beforeRemote),
  );
  results.local_ms_per_call = median(localMs);
  results.local_calls_per_s = localPerS.reduce((a, b) => a + b) / localPerS.length;
  return results;
}

/**
 * A call with side effects, confined on both sides, through one worker (`--sandbox require`) and locally (an
 * executor made as every command makes it): what the pool adds to it, its worker starting the call's sandbox while
 * the go travels (`pool1_confined_side_effects_overhead_ms`), beside the checkout before's when there is one.
 * `{}` without bubblewrap (said).
 */
async function confinedSideEffects(
  server: { url: string },
  path: string,
  cwd: string,
  remote: Executor,
  before?: typeof import("../pool/helpers.ts"),
  beforeServer?: { url: string },
  beforeRemote?: Executor,
): Promise<Record<string, number>> {
  const support = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin", "bwrap", Deno.env.toObject());
  if (!support.ok) {
    console.log(`  pool1_confined_side_effects: skipped (${support.reason})`);
    return {};
  }
  const confined = ["--sandbox", "require"];
  const workers = [await startWorker(server.url, path, cwd, "confined", { args: confined })];
  try {
    if (before !== undefined) {
      workers.push(
        await before.startWorker(beforeServer!.url, path, cwd, "before-confined", { args: confined }),
      );
    }
    const local = executorFor(remote.manifest, { cwd, sandbox: "require", residentHelpers: true });
    try {
      const [here, there, thereBefore] = await latency(
        [local, remote, ...beforeRemote === undefined ? [] : [beforeRemote]],
        CONFINED_PAIRS,
        ["echo_effects", "echo_effects", "echo_effects"],
      );
      return {
        pool1_confined_local_ms_per_call: here,
        pool1_confined_side_effects_overhead_ms: there - here,
        ...thereBefore === undefined ? {} : {
          pool1_confined_side_effects_overhead_ms_before: thereBefore - here,
          pool1_confined_side_effects_overhead_over_before: (there - here) / (thereBefore - here),
        },
      };
    } finally {
      await local.close();
    }
  } finally {
    for (const worker of workers) await worker[Symbol.asyncDispose]();
  }
}

if (import.meta.main) {
  for (const [key, value] of Object.entries(await benchPool())) {
    console.log(`  ${key}: ${Number(value.toFixed(3))}`);
  }
}
