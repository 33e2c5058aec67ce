/**
 * `toolgate serve --http` under load, against its floors measured in the same run: N concurrent MCP sessions (16,
 * then 64), each making its calls one after the other, from the bench's own lean client (load_client.ts), with the
 * default settings (audit on, to a folder the bench counts). Rounds interleave the variants, so that the machine's
 * noise falls on each alike:
 * - confined: a trivial tool (`permissions: "none"`) through `serve --sandbox require`, against the floor of bare
 *   spawns of the very confined command line a call starts (the cgroup wrapper where used, the seccomp shell,
 *   bwrap with the executor's arguments) by N concurrent spawners;
 * - unconfined: the same tool through `serve --sandbox off`, against bare spawns of the tool by N spawners;
 * - gateway: `read_graph` of the real npm server-memory (confined, as `serve` starts it) through `serve`, against
 *   the same server, one process, driven directly over one stdio connection by N concurrent requesters with the
 *   official SDK client.
 *
 * It prints calls/s, p50 and p99 of each, the ratios of calls/s to the floors, p99/p50, the audit lines counted
 * (exactly one per call) and the errors (zero), and `serve`'s resident memory with 16 and with 256 sessions open
 * (and the growth per session between them).
 *
 * Run alone: `deno run -A tests/bench/load_bench.ts` (`--calls N` calls per session at 16 sessions, `--rounds N`,
 * `--sessions 16,64` the concurrencies, `--cpu-prof DIR` to profile the `serve` of `--only confined|unconfined|gateway` (the confined one by default;
 * the gateway's calls go through it), `--baseline DIR` to run
 * another checkout of toolgate beside this one, interleaved: a before-and-after ratio from one run).
 *
 * Not here: the client and the serve handle (load_client.ts); the load test, untimed (tests/mcp/load_test.ts).
 *
 * @module
 */
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
import { launcherArgs } from "../../src/build/install.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";
import { probeSandbox, type SandboxSupport } from "../../src/sandbox/sandbox.ts";
import { installNode, MEMORY_SERVER, MODULES, NODE } from "../gateway_support.ts";
import { confinedCommandLine, spawn } from "./sandbox_bench.ts";
import {
  auditLines,
  drive,
  type LoadRun,
  LoadSession,
  REPO,
  residentMiB,
  startServe,
} from "./load_client.ts";

/** The targets: calls/s over the floor's, at 16 sessions. */
export const TARGETS = { confined: 0.8, unconfined: 0.5, gateway: 0.5, p99OverP50: 2 } as const;

function option(name: string, fallback: number): number {
  const at = Deno.args.indexOf(name);
  return at === -1 ? fallback : Number(Deno.args[at + 1]);
}
function textOption(name: string): string | undefined {
  const at = Deno.args.indexOf(name);
  return at === -1 ? undefined : Deno.args[at + 1];
}

const TOKEN = "load-bench-token-0123456789abcdef";
/** Calls each session makes at 16 sessions; at 64, a quarter as many (the same calls in all). */
const CALLS = option("--calls", 24);
const ROUNDS = option("--rounds", 2);
/** The concurrencies: `--sessions 16,64` (the default). */
const SESSIONS = (textOption("--sessions") ?? "16,64").split(",").map(Number);
const MEMORY_SESSIONS = [16, 256] as const;
const ONLY = textOption("--only");

type Support = Extract<SandboxSupport, { ok: true }>;

/** Sorted copy's value at fraction `q`. */
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** What one variant did over all rounds at one concurrency. */
interface Tally {
  calls: number;
  wallMs: number;
  times: number[];
  errors: number;
  firstError?: string;
  unanswered: number;
}

function tally(): Tally {
  return { calls: 0, wallMs: 0, times: [], errors: 0, unanswered: 0 };
}

function add(into: Tally, run: LoadRun, sessions: number): void {
  into.calls += run.outcomes.length;
  into.wallMs += run.wallMs;
  for (const outcome of run.outcomes) {
    into.times.push(outcome.ms);
    if (outcome.error !== undefined) {
      into.errors++;
      into.firstError ??= outcome.error;
    }
  }
  into.unanswered += sessions - run.answered;
}

/** `workers` concurrent loops of `each` runs of `once`; every run's time and the wall time. */
async function concurrently(
  workers: number,
  each: number,
  once: (worker: number) => Promise<unknown>,
): Promise<LoadRun> {
  const outcomes: { ms: number; error?: string }[] = [];
  const started = performance.now();
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; i < each; i++) {
      const t = performance.now();
      const error = await once(w).then(() => undefined, (e) => String(e));
      outcomes.push({ ms: performance.now() - t, error });
    }
  }));
  return { outcomes, wallMs: performance.now() - started, answered: workers };
}

/** The project: a trivial tool and a memory server, trusted as its user would; its audit folder. */
async function setUp(support: Support | undefined) {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate-load-" }));
  const state = join(dir, ".state");
  await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
  await Deno.writeTextFile(join(dir, "tools", "bin", "trivial"), "#!/bin/sh\necho '{\"ok\":1}'\n", {
    mode: 0o755,
  });
  const trivial = {
    name: "trivial",
    command: ["./tools/bin/trivial"],
    permissions: "none",
    readOnly: true,
    concurrent: true,
  };
  const node = support !== undefined && await installNode() === undefined;
  const manifest = {
    tools: [trivial],
    ...(node
      ? {
        mcpServers: {
          mem: {
            command: NODE,
            args: [MEMORY_SERVER],
            permissions: { read: [MODULES] },
            allow: ["read_graph"],
          },
        },
      }
      : {}),
  };
  if (node) {
    await Deno.mkdir(join(dir, "memory"));
    await Deno.writeTextFile(join(dir, "memory", "graph.jsonl"), "");
  }
  await Deno.writeTextFile(join(dir, "tools.json"), JSON.stringify(manifest));
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: dir,
    XDG_STATE_HOME: state,
    XDG_CONFIG_HOME: join(dir, ".config"),
    NO_COLOR: "1",
  };
  const trusted = await new Deno.Command(Deno.execPath(), {
    args: [...launcherArgs({ source: REPO }), "trust"],
    cwd: dir,
    clearEnv: true,
    env: { ...env, DENO_DIR: denoDir() },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!trusted.success) {
    const said = new TextDecoder().decode(trusted.stdout) + new TextDecoder().decode(trusted.stderr);
    throw new Error(`toolgate trust failed: ${said}`);
  }
  await loadSchemaEngine();
  const loaded = validateManifest(manifest, join(dir, "tools.json"));
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const served: Record<string, string> = { ...env, DENO_DIR: denoDir() };
  return { dir, env: served, manifest: loaded.manifest, gateway: node };
}

/** The Deno cache this process uses (a HOME of the bench's own must not make serve fetch its packages again). */
function denoDir(): string {
  return Deno.env.get("DENO_DIR") ?? join(Deno.env.get("HOME") ?? "/root", ".cache", "deno");
}

const f2 = (n: number) => n.toFixed(2);
const f1 = (n: number) => n.toFixed(1);

/** The figures, printed and returned. */
export async function benchLoad(): Promise<Record<string, number>> {
  const probed = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin", "bwrap", Deno.env.toObject());
  if (!probed.ok) console.log(`load bench: confined and gateway variants skipped: ${probed.reason}`);
  const support = probed.ok ? probed : undefined;
  const project = await setUp(support);
  if (support !== undefined && !project.gateway) {
    console.log("load bench: gateway variant skipped: no Node server");
  }
  const { dir, env } = project;
  const audit = join(dir, ".audit");
  const common = ["--max-sessions", "300", "--allow-tools", "trivial,mcp__mem__read_graph"];
  const cpuProf = textOption("--cpu-prof");
  const want = (name: string) => ONLY === undefined || ONLY === name;

  const servers: Record<string, Awaited<ReturnType<typeof startServe>>> = {};
  const tallies: Record<string, Record<number, Tally>> = {};
  let auditExpected: Record<string, number> = {};
  const memory: Record<number, number> = {};
  const memoryErrors: string[] = [];
  const audited: Record<string, number> = {};
  const auditDirs: Record<string, string> = {};
  // Whatever happens, serve goes, and the bench's folder and cgroup slots with it.
  const teardown = async () => {
    for (const server of Object.values(servers)) await server[Symbol.asyncDispose]();
    // The floor's cgroup slots, removed by a shell (Deno lets only `--allow-all` read `/sys`).
    for (const base of new Set([support?.cgroups?.pids, support?.cgroups?.memory])) {
      if (base === undefined) continue;
      const script = `for d in "$1"/call-${Deno.pid}-loadbench-*; do rmdir "$d" 2>/dev/null; done; exit 0`;
      await new Deno.Command("/bin/sh", { args: ["-c", script, "sh", base], stderr: "null" }).output().catch(
        () => {},
      );
    }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    const baseline = textOption("--baseline");
    const start = async (name: string, sandbox: string, code?: string) => {
      auditDirs[name] = join(audit, name);
      servers[name] = await startServe(
        dir,
        env,
        TOKEN,
        [...common, "--sandbox", sandbox, "--audit-dir", auditDirs[name]],
        cpuProf !== undefined && name === (ONLY === undefined || ONLY === "gateway" ? "confined" : ONLY)
          ? [`--cpu-prof`, `--cpu-prof-dir=${cpuProf}`]
          : [],
        code,
      );
    };
    if (support !== undefined && (want("confined") || want("gateway"))) await start("confined", "require");
    if (want("unconfined")) await start("unconfined", "off");
    if (baseline !== undefined) {
      if (servers.confined !== undefined && want("confined")) {
        await start("confined_before", "require", baseline);
      }
      if (servers.unconfined !== undefined) await start("unconfined_before", "off", baseline);
    }

    // The upstream, driven directly: the same server, one process, one stdio connection.
    let upstream: Client | undefined;
    if (servers.confined !== undefined && project.gateway && want("gateway")) {
      upstream = new Client({ name: "load-bench", version: "1" });
      await upstream.connect(
        new StdioClientTransport({
          command: NODE,
          args: [MEMORY_SERVER],
          cwd: dir,
          env: { PATH: env.PATH, MEMORY_FILE_PATH: join(dir, "memory", "graph.jsonl") },
          stderr: "pipe",
        }),
      );
    }
    const tool = project.manifest.tools[0];
    type Variant = {
      name: string;
      run: (sessions: number, calls: number) => Promise<LoadRun>;
      audited?: string;
    };
    const variants: Variant[] = [];
    const through = (server: string, name: string): Variant["run"] => (sessions, calls) =>
      drive(servers[server].url, TOKEN, sessions, calls, () => ({ name, args: {} }));
    if (servers.confined !== undefined && want("confined")) {
      variants.push({ name: "confined", run: through("confined", "trivial"), audited: "confined" });
      variants.push({
        name: "bwrap_floor",
        run: (sessions, calls) =>
          concurrently(sessions, calls, (w) => {
            const [program, ...rest] = confinedCommandLine(
              support!,
              project.manifest,
              tool,
              { PATH: "/usr/bin:/bin", HOME: dir },
              dir,
              // A slot of this process's own (the sweep of other toolgates' probes keeps it), removed at the end.
              `call-${Deno.pid}-loadbench-${w}`,
            );
            return spawn(program, rest, dir);
          }),
      });
    }
    for (const name of ["confined_before", "unconfined_before"]) {
      if (servers[name] !== undefined) variants.push({ name, run: through(name, "trivial"), audited: name });
    }
    if (servers.unconfined !== undefined) {
      variants.push({ name: "unconfined", run: through("unconfined", "trivial"), audited: "unconfined" });
      variants.push({
        name: "spawn_floor",
        run: (sessions, calls) => concurrently(sessions, calls, () => spawn(tool.program, [], dir)),
      });
    }
    if (upstream !== undefined) {
      variants.push({
        name: "gateway",
        run: through("confined", "mcp__mem__read_graph"),
        audited: "confined",
      });
      variants.push({
        name: "upstream_floor",
        run: (sessions, calls) =>
          concurrently(sessions, calls, async () => {
            const result = await upstream!.callTool({ name: "read_graph", arguments: {} });
            if (result.isError) throw new Error(JSON.stringify(result));
          }),
      });
    }

    try {
      // One warm-up call of each, untimed.
      for (const variant of variants) await variant.run(2, 2);
      auditExpected = Object.fromEntries(
        await Promise.all(Object.entries(auditDirs).map(async ([name, d]) => [name, await auditLines(d)])),
      );
      for (let round = 0; round < ROUNDS; round++) {
        for (const sessions of SESSIONS) {
          const calls = Math.max(2, Math.round(CALLS * 16 / sessions));
          // Each round in its own order: whatever runs after a variant pays for its leftovers.
          const order = round % 2 === 0 ? variants : [...variants].reverse();
          for (const variant of order) {
            const run = await variant.run(sessions, calls);
            add((tallies[variant.name] ??= {})[sessions] ??= tally(), run, sessions);
            if (variant.audited !== undefined) auditExpected[variant.audited] += run.outcomes.length;
          }
        }
      }
    } finally {
      await upstream?.close();
    }

    // Resident memory with 16, then 256, sessions open (each has made one call), on the unconfined serve.
    const memoryServer = servers.unconfined ?? servers.confined;
    const memoryAudit = servers.unconfined !== undefined ? "unconfined" : "confined";
    if (memoryServer !== undefined) {
      const open: LoadSession[] = [];
      for (const target of MEMORY_SESSIONS) {
        while (open.length < target) {
          const batch = await Promise.all(
            Array.from({ length: Math.min(16, target - open.length) }, async () => {
              const session = await LoadSession.open(memoryServer.url, TOKEN);
              const outcome = await session.call("trivial", {});
              if (outcome.error !== undefined) memoryErrors.push(outcome.error);
              return session;
            }),
          );
          open.push(...batch);
          auditExpected[memoryAudit] += batch.length;
        }
        // Let the runtime settle (a collection may be due) before reading.
        await new Promise((resolve) => setTimeout(resolve, 500));
        memory[target] = await residentMiB(memoryServer.pid);
      }
      await Promise.all(open.map((session) => session.close()));
    }

    for (const [name, d] of Object.entries(auditDirs)) audited[name] = await auditLines(d);
  } finally {
    await teardown();
  }

  const result: Record<string, number> = {};
  const lines: string[] = [];
  const perSecond = (t: Tally) => t.calls / (t.wallMs / 1000);
  const pairs = [
    ["confined", "bwrap_floor"],
    ["unconfined", "spawn_floor"],
    ["gateway", "upstream_floor"],
    ["confined_before", "bwrap_floor"],
    ["unconfined_before", "spawn_floor"],
  ] as const;
  for (const sessions of SESSIONS) {
    for (const [name, floor] of pairs) {
      const t = tallies[name]?.[sessions];
      const fl = tallies[floor]?.[sessions];
      if (t === undefined || fl === undefined) continue;
      const p50 = quantile(t.times, 0.5);
      const p99 = quantile(t.times, 0.99);
      const ratio = perSecond(t) / perSecond(fl);
      Object.assign(result, {
        [`${name}_${sessions}_calls_per_s`]: perSecond(t),
        [`${name}_${sessions}_p50_ms`]: p50,
        [`${name}_${sessions}_p99_ms`]: p99,
        [`${name}_${sessions}_over_floor`]: ratio,
        [`${name}_${sessions}_p99_over_p50`]: p99 / p50,
        [`${name}_${sessions}_errors`]: t.errors + fl.errors,
        [`${floor}_${sessions}_calls_per_s`]: perSecond(fl),
      });
      lines.push(
        `load, ${sessions} sessions, ${name}: ${f1(perSecond(t))} calls/s, p50 ${f1(p50)} ms, p99 ${
          f1(p99)
        } ms ` +
          `(p99/p50 ${f2(p99 / p50)}); ${name} floor (${floor.replace("_floor", "")}) ${
            f1(perSecond(fl))
          } calls/s, ` +
          `p50 ${f1(quantile(fl.times, 0.5))} ms; ${name}/floor ${f2(ratio)}` +
          (sessions === 16 && name in TARGETS ? ` (target ${TARGETS[name as keyof typeof TARGETS]})` : "") +
          `; ${t.errors} errors, ${t.unanswered} sessions unanswered` +
          (t.firstError === undefined ? "" : ` (first: ${t.firstError})`) +
          (fl.errors === 0 ? "" : `; floor errors ${fl.errors} (${fl.firstError})`),
      );
    }
  }
  for (const sessions of SESSIONS) {
    for (const name of ["confined", "unconfined"]) {
      const now = tallies[name]?.[sessions];
      const before = tallies[`${name}_before`]?.[sessions];
      if (now === undefined || before === undefined) continue;
      const ratio = perSecond(now) / perSecond(before);
      result[`${name}_${sessions}_over_before`] = ratio;
      lines.push(`load, ${sessions} sessions, ${name}: this checkout/baseline ${f2(ratio)} in calls/s`);
    }
  }
  for (const [name, expected] of Object.entries(auditExpected)) {
    result[`audit_lines_${name}`] = audited[name];
    result[`audit_lines_missing_${name}`] = expected - audited[name];
    lines.push(
      `load, audit (${name} serve): ${audited[name]} lines for ${expected} calls (one per call: ${
        audited[name] === expected ? "yes" : "NO"
      })`,
    );
  }
  if (memory[16] !== undefined) {
    const perSession = (memory[256] - memory[16]) / (256 - 16);
    Object.assign(result, {
      memory_16_sessions_mib: memory[16],
      memory_256_sessions_mib: memory[256],
      memory_per_session_kib: perSession * 1024,
    });
    lines.push(
      `load, memory: serve's resident memory ${f1(memory[16])} MiB at 16 sessions, ${
        f1(memory[256])
      } MiB at 256 ` +
        `sessions: ${f1(perSession * 1024)} KiB per session`,
    );
  }
  lines.push(
    `load: ${ROUNDS} rounds, interleaved, ${CALLS} calls per session at 16 sessions ` +
      `(${
        Math.max(2, Math.round(CALLS / 4))
      } at 64); calls/s over the whole of each run, p50 and p99 per call`,
  );
  for (const line of lines) console.log(line);
  return result;
}

if (import.meta.main) await benchLoad();
