/**
 * Benchmarks a background job's `poll` (the `job` tool, answered in toolgate's own process from the job table)
 * against a trivial call (`/bin/cat` through the same executor: a process started and waited for), interleaved in
 * one run. Issue 14's target: a poll costs no more than a trivial call (ratio <= 1). Both go through the whole
 * pipeline: lookup, preflight, policy, run, envelope, audit line.
 *
 * Run: `deno run --no-prompt --allow-read --allow-write --allow-env --allow-run tests/bench/jobs_bench.ts`
 *
 * @module
 */
import { join } from "node:path";
import { Executor } from "../../src/run/executor.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";
import { REPO } from "../support.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

/** The target: a poll is no dearer than a trivial call. */
export const TARGET_RATIO = 1;
const WARMUP = 20;
const ROUNDS = 200;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

/** Runs the benchmark; returns the figures (the ratio, and milliseconds as context). */
export async function benchJobs(): Promise<Record<string, number>> {
  const belt = JSON.parse(await Deno.readTextFile(join(REPO, "tools.json"))).tools;
  // The belt's own entries (so that exec and job are the built-in ones) and a trivial tool beside them.
  const loaded = validateManifest(
    { tools: [...belt, { name: "cat", command: ["/bin/cat"], readOnly: true }] },
    join(REPO, "tools.json"),
    { allowAbsoluteCommands: true },
  );
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const workspace = await Deno.makeTempDir({ prefix: "toolgate_bench_jobs_" });
  const state = await Deno.makeTempDir({ prefix: "toolgate_bench_jobs_state_" });
  const executor = new Executor({
    manifest: loaded.manifest,
    env: { PATH: "/usr/bin:/bin", HOME: state, XDG_STATE_HOME: state },
    cwd: workspace,
    auditDir: join(state, "audit"),
    auditKey: crypto.getRandomValues(new Uint8Array(32)),
    sandbox: "off",
  });
  try {
    const started = await executor.call(
      "exec",
      JSON.stringify({ shell: "for i in $(seq 1 500); do echo line $i; done; sleep 120", background: true }),
    );
    if (!started.ok) throw new Error(JSON.stringify(started));
    const jobId = (started.result as { job_id: string }).job_id;
    const poll = async () => {
      const envelope = await executor.call("job", JSON.stringify({ action: "poll", job_id: jobId }));
      if (!envelope.ok) throw new Error(JSON.stringify(envelope));
    };
    const trivial = async () => {
      const envelope = await executor.call("cat", '{"n":1}');
      if (!envelope.ok) throw new Error(JSON.stringify(envelope));
    };
    const variants = [poll, trivial];
    for (let i = 0; i < WARMUP; i++) for (const run of variants) await run();
    const times: number[][] = [[], []];
    for (let i = 0; i < ROUNDS; i++) {
      for (let k = 0; k < variants.length; k++) {
        const which = (i + k) % variants.length;
        times[which].push(await timed(variants[which]));
      }
    }
    const [pollMs, callMs] = times;
    return {
      ratio_median_poll_over_trivial_call: median(pollMs) / median(callMs),
      poll_ms_median: median(pollMs),
      trivial_call_ms_median: median(callMs),
    };
  } finally {
    await executor.endJobs();
    await Deno.remove(workspace, { recursive: true });
    await Deno.remove(state, { recursive: true });
  }
}

if (import.meta.main) {
  const figures = await benchJobs();
  const fixed = (n: number) => n.toFixed(3);
  console.log(
    `job poll over a trivial call: ${fixed(figures.ratio_median_poll_over_trivial_call)}x median (${
      fixed(figures.poll_ms_median)
    } ms vs ${fixed(figures.trivial_call_ms_median)} ms)`,
  );
  console.log(
    `${figures.ratio_median_poll_over_trivial_call <= TARGET_RATIO ? "meets" : "misses"} the target`,
  );
}
