/**
 * The agent loop's benchmark, against a loopback endpoint that answers at once:
 * - 64 parallel calls of a trivial concurrent tool in one turn, against the same 64 calls made straight through the
 *   executor: the loop's own overhead; and against 64 bare spawns of the same command line at once (the issue's
 *   target: at most 1.5x), unconfined and confined, each against its own bare spawn;
 * - 8 parallel calls of a tool that sleeps 200 ms in one turn, against one such call: the target is under 1.1x.
 *   The same 8 calls straight through the executor, and a turn whose calls spawn nothing, show what part of the
 *   difference is the loop's and what part is the cost of starting 8 processes at once.
 *
 * Run: `deno run --no-prompt --allow-read --allow-write --allow-env --allow-run --allow-net tests/bench/agent_bench.ts`
 *
 * @module
 */
import { join } from "node:path";
import { Policy } from "../../src/policy/policy.ts";
import { ChatClient } from "../../src/agent/chat_client.ts";
import { runLoop } from "../../src/agent/loop.ts";
import type { ChatMessage } from "../../src/agent/messages.ts";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { probeSandbox } from "../../src/sandbox/sandbox.ts";
import { answer, callTools, startChatServer } from "../agent/chat_server.ts";
import { FIXTURES } from "../support.ts";
import { confinedCommandLine, spawn } from "./sandbox_bench.ts";

/** The target: a turn of 64 trivial calls over 64 bare spawns of the same command line at once. */
export const PARALLEL64_TARGET = 1.5;

const TOOLS = join(FIXTURES, "agent", "tools.json");
const ROUNDS = 5;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/**
 * Runs the benchmark and returns its figures (milliseconds, and ratios).
 *
 * @example
 * ```ts ignore
 * import { benchAgent } from "./agent_bench.ts";
 * const figures = await benchAgent();
 * console.log(figures.sleep8_ratio); // target: under 1.1
 * ```
 */
export async function benchAgent(): Promise<Record<string, number>> {
  const loaded = await loadManifest(TOOLS);
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const cwd = await Deno.makeTempDir({ prefix: "toolgate_bench_" });
  const executor = new Executor({
    manifest: loaded.manifest,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: cwd },
    cwd,
    auditDir: null,
    sandbox: "off",
  });
  // The turn's calls, by the user's request: the endpoint asks for them, then answers once their results are in.
  let calls: { id: string; name: string; args: unknown }[] = [];
  const server = startChatServer((request) => {
    const last = request.body?.messages?.at(-1);
    return last?.role === "user" ? callTools(calls) : answer("done");
  });
  const client = new ChatClient({ baseUrl: server.baseUrl, timeoutMs: 30_000, retries: 0 });
  const policy = new Policy();
  const turn = async () => {
    const messages: ChatMessage[] = [{ role: "user", content: "go" }];
    const outcome = await runLoop(messages, { executor, client, policy, model: "bench", maxSteps: 2 });
    if (outcome.kind !== "answer") throw new Error("the benchmark turn did not finish");
  };
  try {
    // Warm up: the first spawn and the first request pay for loading code.
    await executor.call("echo", "{}");
    calls = [{ id: "w", name: "echo", args: {} }];
    await turn();

    const echoes = Array.from(
      { length: 64 },
      (_, i) => ({ id: `e${i}`, name: "echo", args: { value: `${i}` } }),
    );
    const direct64: number[] = [];
    const loop64: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      direct64.push(
        await timed(() => Promise.all(echoes.map((c) => executor.call(c.name, JSON.stringify(c.args))))),
      );
      calls = echoes;
      loop64.push(await timed(turn));
    }

    const naps = Array.from({ length: 8 }, (_, i) => ({ id: `p${i}`, name: "pause", args: {} }));
    const one: number[] = [];
    const eight: number[] = [];
    const eightDirect: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      one.push(await timed(() => executor.call("pause", "{}")));
      calls = naps;
      eight.push(await timed(turn));
      eightDirect.push(await timed(() => Promise.all(naps.map(() => executor.call("pause", "{}")))));
    }

    // 64 calls in one turn against 64 bare spawns of the very command line each call starts, at once: unconfined,
    // and confined where bubblewrap works (each against its own bare spawns).
    const echo = loaded.manifest.byName.get("echo")!;
    const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: cwd };
    const support = await probeSandbox(env.PATH, "bwrap", Deno.env.toObject());
    const modes: Record<string, { executor: Executor; bare: (i: number) => Promise<void> }> = {
      unconfined: { executor, bare: () => spawn(echo.program, [], cwd) },
    };
    if (support.ok) {
      modes.confined = {
        executor: new Executor({ manifest: loaded.manifest, env, cwd, auditDir: null, sandbox: "require" }),
        bare: (i) => {
          const [program, ...args] = confinedCommandLine(
            support,
            loaded.manifest,
            echo,
            env,
            cwd,
            `call-${Deno.pid}-b64-${i}`,
          );
          return spawn(program, args, cwd);
        },
      };
    } else {
      console.log(`agent: the confined 64-call figure is skipped: ${support.reason}`);
    }
    const against: Record<string, number> = {};
    for (const [mode, { executor: modeExecutor, bare }] of Object.entries(modes)) {
      const loop: number[] = [];
      const spawns: number[] = [];
      const modeTurn = async () => {
        const messages: ChatMessage[] = [{ role: "user", content: "go" }];
        const outcome = await runLoop(messages, {
          executor: modeExecutor,
          client,
          policy,
          model: "bench",
          maxSteps: 2,
        });
        if (outcome.kind !== "answer") throw new Error("the benchmark turn did not finish");
      };
      calls = echoes;
      await modeTurn();
      await Promise.all(echoes.map((_, i) => bare(i)));
      for (let i = 0; i < ROUNDS; i++) {
        spawns.push(await timed(() => Promise.all(echoes.map((_, j) => bare(j)))));
        loop.push(await timed(modeTurn));
      }
      against[`parallel64_${mode}_loop_ms`] = round(median(loop), 1);
      against[`parallel64_${mode}_bare_spawns_ms`] = round(median(spawns), 1);
      against[`parallel64_${mode}_over_bare_spawns`] = round(median(loop) / median(spawns));
      console.log(
        `agent: 64 calls in one turn, ${mode}: ${
          (median(loop) / median(spawns)).toFixed(2)
        }x 64 bare spawns at once (target ${PARALLEL64_TARGET}x; floor ${median(spawns).toFixed(1)} ms)`,
      );
    }

    // The loop alone: a turn whose 8 calls name no tool, so that nothing is spawned (two requests and bookkeeping).
    const bare: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      calls = Array.from({ length: 8 }, (_, j) => ({ id: `u${j}`, name: "no_such_tool", args: {} }));
      bare.push(await timed(turn));
    }
    return {
      parallel64_direct_ms: round(median(direct64), 1),
      parallel64_loop_ms: round(median(loop64), 1),
      parallel64_overhead_ratio: round(median(loop64) / median(direct64)),
      sleep8_one_call_ms: round(median(one), 1),
      sleep8_turn_ms: round(median(eight), 1),
      sleep8_ratio: round(median(eight) / median(one)),
      sleep8_direct_ms: round(median(eightDirect), 1),
      sleep8_direct_ratio: round(median(eightDirect) / median(one)),
      loop_turn_without_tools_ms: round(median(bare), 1),
      ...against,
    };
  } finally {
    await server.close();
    await Deno.remove(cwd, { recursive: true });
  }
}

if (import.meta.main) {
  const figures = await benchAgent();
  for (const [name, value] of Object.entries(figures)) console.log(`${name.padEnd(28)} ${value}`);
}
