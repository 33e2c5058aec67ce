/**
 * Benchmarks the executor's per-call cost against a bare `Deno.Command` spawn of the same trivial tool, measured
 * in one run with the two interleaved (target: at most 1.15x), and the throughput of 64 concurrent calls.
 *
 * The executor runs as a caller would: audit log on, sandbox off (confinement has its own benchmark), the
 * default limits. The bare baseline does the same process work and nothing else: spawn, write the arguments to
 * stdin, read stdout and stderr to their end, wait for the status.
 *
 * Run: `deno run -A tests/bench/executor_bench.ts`
 *
 * @module
 */
import { join } from "node:path";
import { Executor } from "../../src/run/executor.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";
import { FIXTURES } from "../support.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

/** The target for the executor's cost over a bare spawn. */
export const TARGET_RATIO = 1.15;
/** How soon a tool with `timeoutSec: 1` (and a 100 ms grace) must be ended and answered. */
export const TIMEOUT_STOP_TARGET_MS = 2500;
const WARMUP = 40;
const ROUNDS = 400;
const CONCURRENCY = 64;
const THROUGHPUT_REPEATS = 5;

const ARGS = '{"n":1,"text":"hello"}';
const SETSID = "/usr/bin/setsid";
const encoder = new TextEncoder();

/**
 * The bare baseline: what any runner must do to run the tool once. `inGroup` starts it through setsid(1), as the
 * executor does to end whole trees: the least a runner that can kill a tree pays on top.
 */
async function bare(program: string, inGroup = false): Promise<void> {
  const child = new Deno.Command(inGroup ? SETSID : program, {
    args: inGroup ? [program] : [],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(encoder.encode(ARGS));
  await writer.close();
  const [out] = await Promise.all([
    new Response(child.stdout).arrayBuffer(),
    new Response(child.stderr).arrayBuffer(),
  ]);
  await child.status;
  if (out.byteLength !== ARGS.length) throw new Error("the bare run lost output");
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

/** Executor.call against the bare spawns, one call at a time, the order rotating every round. */
async function perCall(executor: Executor, tool: string, program: string) {
  const call = async () => {
    const envelope = await executor.call(tool, ARGS);
    if (!envelope.ok) throw new Error(`the executor failed: ${JSON.stringify(envelope)}`);
  };
  const variants = [call, () => bare(program), () => bare(program, true)];
  for (let i = 0; i < WARMUP; i++) for (const run of variants) await run();
  const times: number[][] = variants.map(() => []);
  for (let i = 0; i < ROUNDS; i++) {
    for (let k = 0; k < variants.length; k++) {
      const which = (i + k) % variants.length;
      times[which].push(await timed(variants[which]));
    }
  }
  const [executorMs, bareMs, groupMs] = times;
  return { executorMs, bareMs, groupMs };
}

/**
 * From the call to the envelope of a tool that outlives its `timeoutSec: 1` (a 3 s sleep, 100 ms grace): the
 * timeout must end it on time, not when it would have ended anyway. The median of a few.
 */
async function timeoutStop(): Promise<number> {
  const loaded = validateManifest(
    { tools: [{ name: "t", command: ["/bin/sleep", "3"], timeoutSec: 1 }] },
    join(FIXTURES, "manifest.json"),
    { allowAbsoluteCommands: true },
  );
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const executor = new Executor({
    manifest: loaded.manifest,
    env: { PATH: "/usr/bin:/bin" },
    cwd: FIXTURES,
    auditDir: null,
    sandbox: "off",
    defaultTimeoutSec: 60,
    graceMs: 100,
  });
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    times.push(
      await timed(async () => {
        const envelope = await executor.call("t", "{}");
        if (envelope.ok || envelope.kind !== "timeout") {
          throw new Error(`no timeout: ${JSON.stringify(envelope)}`);
        }
      }),
    );
  }
  return median(times);
}

/** Benchmarks the executor; returns the figures (ratios, and absolute numbers as context). */
export async function benchExecutor(): Promise<Record<string, number>> {
  const auditDir = await Deno.makeTempDir({ prefix: "toolgate_bench_audit_" });
  try {
    const loaded = validateManifest(
      {
        tools: [
          { name: "cat", command: ["/bin/cat"] },
          {
            name: "echo_stdin",
            command: ["./tools/bin/echo_stdin"],
            schema: {
              type: "object",
              properties: { n: { type: "integer" }, text: { type: "string" } },
              additionalProperties: false,
            },
          },
        ],
      },
      join(FIXTURES, "manifest.json"),
      { allowAbsoluteCommands: true },
    );
    if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
    const executor = new Executor({
      manifest: loaded.manifest,
      env: { PATH: "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/" },
      cwd: FIXTURES,
      auditDir,
      // Not the user's key: a benchmark leaves nothing in the home directory.
      auditKey: crypto.getRandomValues(new Uint8Array(32)),
      sandbox: "off",
    });

    const cat = await perCall(executor, "cat", "/bin/cat");
    const sh = await perCall(executor, "echo_stdin", join(FIXTURES, "tools", "bin", "echo_stdin"));

    // Throughput: 64 calls at once against the same 64 one after another, alternating, best of a few.
    const once = () => executor.call("cat", ARGS);
    const concurrentMs: number[] = [];
    const sequentialMs: number[] = [];
    for (let r = 0; r < THROUGHPUT_REPEATS; r++) {
      concurrentMs.push(await timed(() => Promise.all(Array.from({ length: CONCURRENCY }, once))));
      sequentialMs.push(
        await timed(async () => {
          for (let i = 0; i < CONCURRENCY; i++) await once();
        }),
      );
    }
    const timeoutStopMs = await timeoutStop();
    const concurrent = median(concurrentMs);
    const sequential = median(sequentialMs);
    return {
      ratio_median_cat: median(cat.executorMs) / median(cat.bareMs),
      ratio_median_cat_over_setsid_spawn: median(cat.executorMs) / median(cat.groupMs),
      ratio_median_sh_fixture_over_setsid_spawn: median(sh.executorMs) / median(sh.groupMs),
      setsid_spawn_ms_median_cat: median(cat.groupMs),
      ratio_mean_cat: mean(cat.executorMs) / mean(cat.bareMs),
      ratio_median_sh_fixture: median(sh.executorMs) / median(sh.bareMs),
      ratio_mean_sh_fixture: mean(sh.executorMs) / mean(sh.bareMs),
      executor_ms_median_cat: median(cat.executorMs),
      bare_ms_median_cat: median(cat.bareMs),
      executor_ms_median_sh_fixture: median(sh.executorMs),
      bare_ms_median_sh_fixture: median(sh.bareMs),
      concurrent64_calls_per_s: CONCURRENCY / (concurrent / 1000),
      sequential64_calls_per_s: CONCURRENCY / (sequential / 1000),
      concurrent64_speedup_over_sequential: sequential / concurrent,
      timeout_stop_ms: timeoutStopMs,
    };
  } finally {
    await Deno.remove(auditDir, { recursive: true });
  }
}

if (import.meta.main) {
  const figures = await benchExecutor();
  const fixed = (n: number, digits = 2) => n.toFixed(digits);
  console.log(`executor per call over a bare Deno.Command spawn (target <= ${TARGET_RATIO}x):`);
  console.log(
    `  /bin/cat:            ${fixed(figures.ratio_median_cat)}x median, ${
      fixed(figures.ratio_mean_cat)
    }x mean (${fixed(figures.executor_ms_median_cat)} ms vs ${fixed(figures.bare_ms_median_cat)} ms)`,
  );
  console.log(
    `  sh fixture (schema): ${fixed(figures.ratio_median_sh_fixture)}x median, ${
      fixed(figures.ratio_mean_sh_fixture)
    }x mean (${fixed(figures.executor_ms_median_sh_fixture)} ms vs ${
      fixed(figures.bare_ms_median_sh_fixture)
    } ms)`,
  );
  console.log(
    `over a bare spawn through setsid(1), the least a tree-killing runner pays: ${
      fixed(figures.ratio_median_cat_over_setsid_spawn)
    }x (/bin/cat), ${fixed(figures.ratio_median_sh_fixture_over_setsid_spawn)}x (sh fixture)`,
  );
  console.log(
    `64 concurrent calls: ${
      fixed(figures.concurrent64_speedup_over_sequential)
    }x the throughput of 64 sequential (${fixed(figures.concurrent64_calls_per_s, 0)} vs ${
      fixed(figures.sequential64_calls_per_s, 0)
    } calls/s)`,
  );
  const verdict = figures.ratio_median_cat <= TARGET_RATIO ? "meets" : "misses";
  console.log(`${verdict} the ${TARGET_RATIO}x target`);
  const stop = figures.timeout_stop_ms < TIMEOUT_STOP_TARGET_MS ? "meets" : "misses";
  console.log(
    `a 1 s timeout answers in ${
      fixed(figures.timeout_stop_ms, 0)
    } ms: ${stop} the ${TIMEOUT_STOP_TARGET_MS} ms target`,
  );
}
