/**
 * Benchmarks a warm call of an upstream MCP tool through toolgate's gateway against the same call made directly
 * with the official SDK client over stdio to the same server, in one run, interleaved (target: at most 1.2x for
 * an unconfined server; the confined figure is printed beside it).
 *
 * The server is `@modelcontextprotocol/server-everything` (stdio), its `echo` tool, installed by the gateway
 * tests' setup into tests/.cache/gateway. toolgate's side is the client path `toolgate call` and `serve` use: an
 * {@linkcode Executor} with the gateway connected and the server already started, each call `Executor.call` (the
 * preflight against the server's inputSchema, the policy, the pin check, the envelope; the audit line, written
 * before the answer, timed with it). The direct side is the SDK's `Client` over its own
 * `StdioClientTransport`, one `callTool` each.
 *
 * Run: `deno run -A tests/bench/gateway_bench.ts` (`--rounds N` to change the number of rounds; `--baseline DIR`:
 * another checkout's executor and gateway, unconfined with its audit log, as one more variant interleaved with these:
 * a before-and-after ratio from one run).
 *
 * @module
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
import { after } from "../../src/base/timer.ts";
import { writePins } from "../../src/manifest/pins.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";
import { Executor } from "../../src/run/executor.ts";
import { stateRoot } from "../../src/state/state.ts";
import { probeSandbox, type SandboxMode } from "../../src/sandbox/sandbox.ts";
import { EVERYTHING_SERVER, EVERYTHING_STDIO, installNode, NODE } from "../gateway_support.ts";

/** The target for an unconfined server: a warm call through toolgate over the same call made directly. */
export const TARGET_RATIO = 1.2;
const WARMUP = 30;
const ROUNDS = 300;
const TOOL = "mcp__ev__echo";
const ARGS = { message: "hello gateway" };
const ARGS_TEXT = JSON.stringify(ARGS);
/** `--audit-per-call`: one more unconfined figure, its audit file opened and closed at every call (not held). */
const PER_CALL = Deno.args.includes("--audit-per-call");
/** `--baseline DIR`: another checkout of toolgate, measured beside this one. */
const BASELINE = Deno.args.includes("--baseline")
  ? Deno.args[Deno.args.indexOf("--baseline") + 1]
  : undefined;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The value below which a tenth of `values` lie: on a loaded machine, the call's own cost with little of the noise. */
function tenth(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 10)];
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/**
 * The time `run` takes to answer. Then a turn of the event loop goes by, untimed: whatever a call left for later
 * (a timer, a stream's close) runs here, not inside the next variant's timing (where it would slow the direct
 * call and flatter the ratio). A gateway call's audit line is written before its answer: it is timed.
 */
async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  const took = performance.now() - started;
  await new Promise<void>((resolve) => after(1, resolve));
  return took;
}

/** A project folder: its manifest names the everything server, with its pins and audit log in folders of its own. */
async function setUp(dir: string) {
  const manifestPath = join(dir, "tools.json");
  await Deno.writeTextFile(
    manifestPath,
    JSON.stringify({
      tools: [],
      mcpServers: {
        ev: { ...EVERYTHING_STDIO, allow: ["echo"] },
      },
    }),
  );
  const loaded = validateManifest(JSON.parse(await Deno.readTextFile(manifestPath)), manifestPath);
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: dir,
    XDG_STATE_HOME: join(dir, "state"),
    XDG_CONFIG_HOME: join(dir, "config"),
  };
  // A log of its own for each executor, as one `toolgate serve` has: lines of another writer in between would
  // make each line read the file's last byte first (see audit.ts).
  const auditDir = join(dir, "audit");
  await Deno.mkdir(auditDir, { mode: 0o700 });
  let executors = 0;
  const executor = (sandbox: SandboxMode, keepAuditOpen = true, audit = true, from: Checkout = HERE) =>
    new from.Executor({
      manifest: loaded.manifest,
      env,
      cwd: dir,
      auditDir: audit ? join(auditDir, String(executors++)) : null,
      // Not the user's key: a benchmark leaves nothing in the home directory.
      auditKey: crypto.getRandomValues(new Uint8Array(32)),
      // As the commands do.
      keepAuditOpen,
      sandbox,
      // As the commands wire it.
      openGateway: from.openGateway,
    });
  // What `toolgate trust` does: list the server's tools once and pin their definitions.
  const trusting = executor("off");
  try {
    const problems = await trusting.connectGateway();
    if (problems.some((line) => line.includes("cannot be used"))) throw new Error(problems.join("\n"));
    writePins(stateRoot(env), await Deno.realPath(manifestPath), {
      ev: Object.fromEntries((await trusting.serverDefinitions("ev")).map((d) => [d.name, d])),
    });
  } finally {
    await trusting.close();
  }
  return { executor };
}

/** The executor and the gateway of a checkout: this one, or the one before (`--baseline`). */
interface Checkout {
  readonly Executor: typeof Executor;
  // deno-lint-ignore no-explicit-any
  readonly openGateway: (wiring: any) => Promise<any>;
}

const HERE: Checkout = {
  Executor,
  // As the commands wire it.
  openGateway: async (wiring) => new (await import("../../src/gateway/gateway.ts")).Gateway(wiring),
};

/** The checkout at `dir`: its executor and gateway modules, its schema engine loaded. */
async function checkoutAt(dir: string): Promise<Checkout> {
  const url = (path: string) => pathToFileURL(join(dir, path)).href;
  const executor = await import(url("src/run/executor.ts")) as typeof import("../../src/run/executor.ts");
  await (await import(url("src/manifest/schema.ts")) as typeof import("../../src/manifest/schema.ts"))
    .loadSchemaEngine();
  const gateway = url("src/gateway/gateway.ts");
  return {
    Executor: executor.Executor,
    // deno-lint-ignore no-explicit-any
    openGateway: async (wiring: any) => new (await import(gateway)).Gateway(wiring),
  };
}

/** An executor with the gateway connected and the server started (its first call made). */
async function warmExecutor(
  make: (sandbox: SandboxMode, keepAuditOpen?: boolean, audit?: boolean, from?: Checkout) => Executor,
  sandbox: SandboxMode,
  keepAuditOpen = true,
  audit = true,
  from: Checkout = HERE,
) {
  const executor = make(sandbox, keepAuditOpen, audit, from);
  const lines = await executor.connectGateway([TOOL]);
  if (lines.length > 0) throw new Error(lines.join("\n"));
  const call = async () => {
    const envelope = await executor.call(TOOL, ARGS_TEXT);
    if (!envelope.ok) throw new Error(`the gateway call failed: ${JSON.stringify(envelope)}`);
  };
  await call();
  return { executor, call };
}

/** The SDK client over stdio, connected to its own copy of the same server. */
async function directClient() {
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({ command: NODE, args: [EVERYTHING_SERVER, "stdio"], stderr: "ignore" }),
  );
  const call = async () => {
    const result = await client.callTool({ name: "echo", arguments: ARGS });
    if (result.isError) throw new Error(`the direct call failed: ${JSON.stringify(result)}`);
  };
  await call();
  return { client, call };
}

/** Benchmarks the gateway; returns the figures (ratios, and absolute numbers as context). */
export async function benchGateway(rounds = ROUNDS): Promise<Record<string, number>> {
  const missing = await installNode();
  if (missing !== undefined) {
    console.log(`  skipped: ${missing}`);
    return {};
  }
  await loadSchemaEngine();
  const dir = await Deno.makeTempDir({ prefix: "toolgate_bench_gateway_" });
  const running: { close(): Promise<void> }[] = [];
  try {
    const { executor } = await setUp(dir);
    const support = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin");
    const unconfined = await warmExecutor(executor, "off");
    running.push(unconfined.executor);
    const direct = await directClient();
    running.push(direct.client);
    const confined = support.ok ? await warmExecutor(executor, "require") : undefined;
    if (confined !== undefined) running.push(confined.executor);
    else console.log(`  no confined figure: ${support.ok ? "" : support.reason}`);
    const perCall = PER_CALL ? await warmExecutor(executor, "off", false) : undefined;
    if (perCall !== undefined) running.push(perCall.executor);
    // The same gateway with no audit log: how much of the figure above is the line written before the answer.
    const unaudited = await warmExecutor(executor, "off", true, false);
    running.push(unaudited.executor);
    const before = BASELINE === undefined
      ? undefined
      : await warmExecutor(executor, "off", true, true, await checkoutAt(BASELINE));
    if (before !== undefined) running.push(before.executor);

    const variants = [
      direct.call,
      unconfined.call,
      ...(confined ? [confined.call] : []),
      ...(perCall ? [perCall.call] : []),
      unaudited.call,
      ...(before ? [before.call] : []),
    ];
    for (let i = 0; i < WARMUP; i++) for (const run of variants) await run();
    const times: number[][] = variants.map(() => []);
    for (let i = 0; i < rounds; i++) {
      // The order rotates every round: none always runs first after the others' garbage.
      for (let k = 0; k < variants.length; k++) {
        const which = (i + k) % variants.length;
        times[which].push(await timed(variants[which]));
      }
    }
    const [directMs, unconfinedMs] = times;
    const confinedMs = confined ? times[2] : undefined;
    const beforeMs = before ? times.at(-1)! : undefined;
    const unauditedMs = times.at(before ? -2 : -1)!;
    const perCallMs = perCall ? times.at(before ? -3 : -2)! : undefined;
    const figures: Record<string, number> = {
      ratio_median_unconfined: median(unconfinedMs) / median(directMs),
      ratio_mean_unconfined: mean(unconfinedMs) / mean(directMs),
      ratio_p10_unconfined: tenth(unconfinedMs) / tenth(directMs),
      direct_sdk_ms_median: median(directMs),
      gateway_unconfined_ms_median: median(unconfinedMs),
      ratio_median_unconfined_no_audit: median(unauditedMs) / median(directMs),
    };
    if (confinedMs !== undefined) {
      figures.ratio_median_confined = median(confinedMs) / median(directMs);
      figures.ratio_mean_confined = mean(confinedMs) / mean(directMs);
      figures.ratio_p10_confined = tenth(confinedMs) / tenth(directMs);
      figures.gateway_confined_ms_median = median(confinedMs);
    }
    if (beforeMs !== undefined) {
      figures.ratio_median_unconfined_before = median(beforeMs) / median(directMs);
      figures.unconfined_over_before = median(unconfinedMs) / median(beforeMs);
    }
    if (perCallMs !== undefined) {
      figures.ratio_median_audit_per_call = median(perCallMs) / median(directMs);
      figures.ratio_p10_audit_per_call = tenth(perCallMs) / tenth(directMs);
      figures.gateway_audit_per_call_ms_median = median(perCallMs);
    }
    return figures;
  } finally {
    for (const item of running.reverse()) await item.close().catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--rounds");
  const figures = await benchGateway(at >= 0 ? Number(Deno.args[at + 1]) : ROUNDS);
  if (figures.ratio_median_unconfined === undefined) Deno.exit(0);
  const fixed = (n: number, digits = 2) => n.toFixed(digits);
  console.log(
    `a warm echo call through the gateway over the SDK client's direct call (target <= ${TARGET_RATIO}x):`,
  );
  console.log(
    `  unconfined: ${fixed(figures.ratio_median_unconfined)}x median, ${
      fixed(figures.ratio_mean_unconfined)
    }x mean, ${fixed(figures.ratio_p10_unconfined)}x 10th percentile (${
      fixed(figures.gateway_unconfined_ms_median)
    } ms vs ${fixed(figures.direct_sdk_ms_median)} ms)`,
  );
  if (figures.ratio_median_confined !== undefined) {
    console.log(
      `  confined:   ${fixed(figures.ratio_median_confined)}x median, ${
        fixed(figures.ratio_mean_confined)
      }x mean, ${fixed(figures.ratio_p10_confined)}x 10th percentile (${
        fixed(figures.gateway_confined_ms_median)
      } ms)`,
    );
  }
  if (figures.ratio_median_audit_per_call !== undefined) {
    console.log(
      `  unconfined, audit file opened per call: ${fixed(figures.ratio_median_audit_per_call)}x median, ${
        fixed(figures.ratio_p10_audit_per_call)
      }x 10th percentile (${fixed(figures.gateway_audit_per_call_ms_median)} ms)`,
    );
  }
  console.log(
    `  unconfined, no audit log: ${
      fixed(figures.ratio_median_unconfined_no_audit)
    }x median (the audit line ` +
      `before each answer is the rest)`,
  );
  if (figures.unconfined_over_before !== undefined) {
    console.log(
      `  the checkout before, unconfined: ${fixed(figures.ratio_median_unconfined_before)}x median; ` +
        `this one over it: ${fixed(figures.unconfined_over_before)}`,
    );
  }
  const verdict = figures.ratio_median_unconfined <= TARGET_RATIO ? "meets" : "misses";
  console.log(`${verdict} the ${TARGET_RATIO}x target`);
}
