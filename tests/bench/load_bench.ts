/**
 * `toolgate serve --http` under load, against its floors measured in the same run: N concurrent MCP sessions (16,
 * then 64), each making its calls one after the other, from the bench's own lean client (load_client.ts), with the
 * default settings (audit on, to a folder the bench counts). Rounds interleave the variants, so that the machine's
 * noise falls on each alike:
 * - confined: a trivial tool (`permissions: "none"`) through `serve --sandbox require`, against the floor of bare
 *   spawns of the very confined command line a call starts (the cgroup wrapper where used, the seccomp shell,
 *   bwrap with the executor's arguments) by N concurrent spawners;
 * - unconfined: the same tool through `serve --sandbox off`, against bare spawns of the tool by N spawners, and
 *   against bare spawns of the command line an unconfined call starts (the session starter, built for the bench's
 *   user as `deno task install` builds it, and the tool; without a C compiler, setsid(1), the cgroup's shell and
 *   the tool): the floor of the design;
 * - gateway: `read_graph` of the real npm server-memory (confined, as `serve` starts it) through `serve`, against
 *   the same server, one process, driven directly over one stdio connection by N concurrent requesters with the
 *   official SDK client; and the same calls in the stateless revision (2026-07-28: no session, each call one
 *   POST, each caller a client of its own name), read against the same floor.
 *
 * - the pool: the same tool through `serve --sandbox off --executor nats://...` and a real nats-server with 1, 2
 *   and 4 `toolgate worker`s on this machine (unconfined, each with its audit log), read beside the unconfined
 *   local serve of the same rounds.
 *
 * It prints calls/s, p50 and p99 of each, the ratios of calls/s to the floors (the pool's to the local serve),
 * p99/p50, the audit lines counted (exactly one per call; a pooled call's second, its worker's, counted apart) and
 * the errors (zero), the CPU time per call of each process (serve, the tools, the upstream server, the workers,
 * nats-server, this client; from /proc/PID/stat) and the cores they kept busy, and `serve`'s resident memory (VmRSS of
 * /proc/PID/status) with no session, 16 and 256 sessions open, each time before and after their calls (and the
 * growth per session between 16 and 256), once they are closed, and after rounds of 256 more.
 *
 * Run alone: `deno run -A tests/bench/load_bench.ts` (`--calls N` calls per session at 16 sessions, `--rounds N`,
 * `--sessions 16,64` the concurrencies, `--cpu-prof DIR` to profile the `serve` of `--only
 * confined|unconfined|gateway` (the confined one by default; the gateway's calls go through it), `--only
 * confined|unconfined|gateway|pool`, `--pool-workers 1,2,4` the pools (`0`: none), `--pool-concurrency N` each
 * worker's calls at once (default: its own, one per CPU), `--memory-rounds N` rounds of 256 sessions opened,
 * called and closed after the memory readings (default 1), `--baseline DIR` to run another checkout of toolgate
 * beside this one, interleaved: a before-and-after ratio from one run, confined, unconfined and gateway).
 *
 * Not here: the client and the serve handle (load_client.ts); the load test, untimed (tests/mcp/load_test.ts).
 *
 * @module
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
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
import { cgroupWrapper } from "../../src/sandbox/cgroups.ts";
import { sessionStartLine } from "../../src/sandbox/session_start.ts";
import { buildSessionStart } from "../../src/build/native.ts";
import { groupLauncher } from "../../src/process/process_tree.ts";
import {
  NATS_SERVER,
  type NatsServer,
  natsServer,
  POOL_ENV,
  startWorker,
  type WorkerProcess,
} from "../pool/helpers.ts";
import {
  auditLines,
  cpuTime,
  descendantsNamed,
  drive,
  type LoadRun,
  LoadSession,
  REPO,
  residentMiB,
  startServe,
} from "./load_client.ts";

/** The issue's targets: calls/s over the floor's, at 16 sessions. */
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
/** Rounds of 256 more sessions, each opened, called and closed, after the memory readings (`--memory-rounds N`). */
const MEMORY_ROUNDS = option("--memory-rounds", 1);
const ONLY = textOption("--only");
/** The worker pools driven by the same sessions: 1, 2 and 4 workers (`--pool-workers 1,2,4`; `0`: none). */
const POOL_WIDTHS = (textOption("--pool-workers") ?? "1,2,4").split(",").map(Number).filter((n) => n > 0);
/** Each worker's `--concurrency` (`--pool-concurrency N`; default: the worker's own, one per CPU). */
const POOL_CONCURRENCY = textOption("--pool-concurrency");

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
  /** CPU ms used during the runs, by process group (`serve`, `tools`: serve's children, `workers`, ...). */
  cpu: Record<string, number>;
}

function tally(): Tally {
  return { calls: 0, wallMs: 0, times: [], errors: 0, unanswered: 0, cpu: {} };
}

/** The processes whose CPU time a variant's runs are charged: a group's name, and its pids. */
type CpuGroups = Record<string, readonly number[]>;

/**
 * The CPU ms of each group so far: each process's own time under its group's name, its children's (the tools it
 * ran and waited for) under `tools` for serve and `worker_tools` for workers.
 */
async function cpuOf(groups: CpuGroups): Promise<Record<string, number>> {
  const total: Record<string, number> = {};
  for (const [group, pids] of Object.entries(groups)) {
    for (const pid of pids) {
      const { self, children } = await cpuTime(pid);
      total[group] = (total[group] ?? 0) + self;
      if (group === "serve" || group === "workers") {
        const tools = group === "serve" ? "tools" : "worker_tools";
        total[tools] = (total[tools] ?? 0) + children;
      }
    }
  }
  return total;
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
  // The session starter, as `deno task install` builds it for its user (where a C compiler is found).
  const built = await buildSessionStart(env);
  const starter = built.ok ? built.path : undefined;
  console.log(
    starter === undefined
      ? `load bench: no session starter (${
        !built.ok && built.reason
      }): unconfined calls start through setsid(1) and a shell`
      : `load bench: unconfined calls start through the session starter ${starter}`,
  );
  return { dir, env: served, manifest: loaded.manifest, gateway: node, starter };
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
  // The pool's figures are read beside the unconfined local ones: `--only pool` runs both.
  const want = (name: string) =>
    ONLY === undefined || ONLY === name || (ONLY === "pool" && name === "unconfined");

  const servers: Record<string, Awaited<ReturnType<typeof startServe>>> = {};
  const tallies: Record<string, Record<number, Tally>> = {};
  let auditExpected: Record<string, number> = {};
  /** serve's resident memory, MiB: with N sessions open and each having made one call. */
  const memory: Record<number, number> = {};
  /** The same with N sessions open, before their calls. */
  const memoryOpen: Record<number, number> = {};
  /** Before the sessions opened, and once they are closed again. */
  const memoryIdle: { before?: number; after?: number; again: number[] } = { again: [] };
  const memoryErrors: string[] = [];
  const audited: Record<string, number> = {};
  const auditDirs: Record<string, string> = {};
  const workers: WorkerProcess[] = [];
  const natsServers: NatsServer[] = [];
  let poolDir: string | undefined;
  const poolWorkers: Record<string, WorkerProcess[]> = {};
  const poolNats: Record<string, NatsServer> = {};
  // Whatever happens, serve goes, and the bench's folder and cgroup slots with it.
  const teardown = async () => {
    for (const server of Object.values(servers)) await server[Symbol.asyncDispose]();
    for (const worker of workers) await worker[Symbol.asyncDispose]();
    for (const nats of natsServers) await Promise.resolve(nats[Symbol.asyncDispose]()).catch(() => {});
    if (poolDir !== undefined) await Deno.remove(poolDir, { recursive: true }).catch(() => {});
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
      // Its own session starter, as its install would build it: a starter of another source has another name.
      const { buildSessionStart } = await import(
        pathToFileURL(join(baseline, "src", "build", "native.ts")).href
      ) as typeof import("../../src/build/native.ts");
      const built = await buildSessionStart(env);
      console.log(`load bench: the baseline's session starter: ${built.ok ? built.path : built.reason}`);
      if (servers.confined !== undefined && (want("confined") || want("gateway"))) {
        await start("confined_before", "require", baseline);
      }
      if (servers.unconfined !== undefined) await start("unconfined_before", "off", baseline);
    }
    // The pools: each its own nats-server, its `serve --http --executor nats://...` and its workers, unconfined
    // as the local serve they are read beside (what shows is the pool's cost, not bubblewrap's), audit on both
    // sides. A project of their own: the trivial tool alone, the manifest callers and workers hash alike.
    if (want("pool") && servers.unconfined !== undefined && POOL_WIDTHS.length > 0) {
      if (NATS_SERVER === undefined) {
        console.log("load bench: pool variants skipped: nats-server is not installed");
      } else {
        const pooled = await setUp(undefined);
        poolDir = pooled.dir;
        for (const width of POOL_WIDTHS) {
          const nats = await natsServer();
          natsServers.push(nats);
          const name = `pool${width}`;
          poolNats[name] = nats;
          poolWorkers[name] = [];
          auditDirs[name] = join(audit, name);
          servers[name] = await startServe(pooled.dir, { ...pooled.env, ...POOL_ENV }, TOKEN, [
            "--max-sessions",
            "300",
            "--allow-tools",
            "trivial",
            "--sandbox",
            "off",
            "--executor",
            nats.url,
            "--audit-dir",
            auditDirs[name],
          ]);
          auditDirs[`${name}_workers`] = join(audit, `${name}_workers`);
          for (let i = 0; i < width; i++) {
            const worker = await startWorker(
              nats.url,
              join(pooled.dir, "tools.json"),
              pooled.dir,
              `${name}-w${i + 1}`,
              {
                env: pooled.env,
                auditDir: join(auditDirs[`${name}_workers`], `w${i + 1}`),
                concurrency: POOL_CONCURRENCY === undefined ? null : Number(POOL_CONCURRENCY),
              },
            );
            workers.push(worker);
            poolWorkers[name].push(worker);
          }
        }
      }
    }

    // The upstream, driven directly: the same server, one process, one stdio connection.
    let upstream: Client | undefined;
    let upstreamPid: number | undefined;
    if (servers.confined !== undefined && project.gateway && want("gateway")) {
      upstream = new Client({ name: "load-bench", version: "1" });
      const transport = new StdioClientTransport({
        command: NODE,
        args: [MEMORY_SERVER],
        cwd: dir,
        env: { PATH: env.PATH, MEMORY_FILE_PATH: join(dir, "memory", "graph.jsonl") },
        stderr: "pipe",
      });
      await upstream.connect(transport);
      upstreamPid = transport.pid ?? undefined;
    }
    const tool = project.manifest.tools[0];
    type Variant = {
      name: string;
      run: (sessions: number, calls: number) => Promise<LoadRun>;
      audited?: string;
      /** The processes whose CPU time is charged to it (this bench's own as `client`). */
      cpu?: CpuGroups;
      /** Run once after the warm-up calls: where a variant learns what its CPU groups hold. */
      warmed?: () => Promise<void>;
    };
    const variants: Variant[] = [];
    const through = (server: string, name: string, stateless = false): Variant["run"] => (sessions, calls) =>
      drive(servers[server].url, TOKEN, sessions, calls, () => ({ name, args: {} }), stateless);
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
              undefined,
              project.starter,
            );
            return spawn(program, rest, dir);
          }),
      });
    }
    for (const name of ["confined_before", "unconfined_before"]) {
      if (servers[name] !== undefined && (name !== "confined_before" || want("confined"))) {
        variants.push({ name, run: through(name, "trivial"), audited: name });
      }
    }
    if (servers.unconfined !== undefined) {
      variants.push({
        name: "unconfined",
        run: through("unconfined", "trivial"),
        audited: "unconfined",
        cpu: { serve: [servers.unconfined.pid], client: [Deno.pid] },
      });
      variants.push({
        name: "spawn_floor",
        run: (sessions, calls) => concurrently(sessions, calls, () => spawn(tool.program, [], dir)),
      });
      // The floor of the design: the very command line an unconfined call starts, bare (the session starter, which
      // makes the session and joins the call's cgroup, then the tool; without it, a session of its own by
      // setsid(1), then the shell that joins the call's cgroup, then the tool).
      const cgroups = support?.cgroups;
      const [setsid] = groupLauncher();
      const starter = project.starter;
      if (cgroups !== undefined && (starter !== undefined || setsid !== undefined)) {
        variants.push({
          name: "command_floor",
          run: (sessions, calls) =>
            concurrently(sessions, calls, (w) => {
              const slot = `call-${Deno.pid}-loadbench-${w}`;
              if (starter !== undefined) {
                const [program, ...args] = sessionStartLine(starter, { support: cgroups, slot });
                return spawn(program, [...args, tool.program], dir);
              }
              return spawn(
                setsid!,
                [...cgroupWrapper(cgroups, undefined, slot, false, false), tool.program],
                dir,
              );
            }),
        });
      }
    }
    for (const width of POOL_WIDTHS) {
      const name = `pool${width}`;
      if (servers[name] === undefined) continue;
      variants.push({
        name,
        run: through(name, "trivial"),
        audited: name,
        cpu: {
          serve: [servers[name].pid],
          workers: poolWorkers[name].map((worker) => worker.pid),
          nats: [poolNats[name].pid],
          client: [Deno.pid],
        },
      });
    }
    if (upstream !== undefined) {
      // The server-memory `serve` started (it runs from the first call on: the warm-up's).
      const gatewayUpstream: number[] = [];
      variants.push({
        name: "gateway",
        run: through("confined", "mcp__mem__read_graph"),
        audited: "confined",
        cpu: { serve: [servers.confined.pid], upstream: gatewayUpstream, client: [Deno.pid] },
        warmed: async () => {
          gatewayUpstream.push(...await descendantsNamed(servers.confined.pid, "node"));
        },
      });
      if (servers.confined_before !== undefined) {
        variants.push({
          name: "gateway_before",
          run: through("confined_before", "mcp__mem__read_graph"),
          audited: "confined_before",
        });
      }
      // The same calls in the stateless revision: no session, the SDK's transport not in the way.
      variants.push({
        name: "gateway_stateless",
        run: through("confined", "mcp__mem__read_graph", true),
        audited: "confined",
        cpu: { serve: [servers.confined.pid], upstream: gatewayUpstream, client: [Deno.pid] },
      });
      variants.push({
        name: "upstream_floor",
        run: (sessions, calls) =>
          concurrently(sessions, calls, async () => {
            const result = await upstream!.callTool({ name: "read_graph", arguments: {} });
            if (result.isError) throw new Error(JSON.stringify(result));
          }),
        cpu: { upstream: upstreamPid === undefined ? [] : [upstreamPid], client: [Deno.pid] },
      });
    }

    try {
      // One warm-up call of each, untimed.
      for (const variant of variants) await variant.run(2, 2);
      for (const variant of variants) await variant.warmed?.();
      auditExpected = Object.fromEntries(
        await Promise.all(Object.entries(auditDirs).map(async ([name, d]) => [name, await auditLines(d)])),
      );
      for (let round = 0; round < ROUNDS; round++) {
        for (const sessions of SESSIONS) {
          const calls = Math.max(2, Math.round(CALLS * 16 / sessions));
          // Each round in its own order: whatever runs after a variant pays for its leftovers.
          const order = round % 2 === 0 ? variants : [...variants].reverse();
          for (const variant of order) {
            const before = variant.cpu && await cpuOf(variant.cpu);
            const run = await variant.run(sessions, calls);
            const into = (tallies[variant.name] ??= {})[sessions] ??= tally();
            add(into, run, sessions);
            if (variant.cpu !== undefined && before !== undefined) {
              for (const [group, ms] of Object.entries(await cpuOf(variant.cpu))) {
                into.cpu[group] = (into.cpu[group] ?? 0) + ms - (before[group] ?? 0);
              }
            }
            if (variant.audited !== undefined) auditExpected[variant.audited] += run.outcomes.length;
            // A pooled call has a second line, its worker's.
            if (`${variant.audited}_workers` in auditExpected) {
              auditExpected[`${variant.audited}_workers`] += run.outcomes.length;
            }
          }
        }
      }
    } finally {
      await upstream?.close();
    }

    // Resident memory (VmRSS) with none, 16, then 256 sessions open, on the unconfined serve: each time once they
    // are open, and again once each has made one call; once they are closed; and after 256 more.
    const memoryServer = servers.unconfined ?? servers.confined;
    const memoryAudit = servers.unconfined !== undefined ? "unconfined" : "confined";
    if (memoryServer !== undefined) {
      // Let the runtime settle (a collection may be due) before reading.
      const settled = async () => {
        await new Promise((resolve) => setTimeout(resolve, 500));
        return await residentMiB(memoryServer.pid);
      };
      const inBatches = async <T>(count: number, each: (i: number) => Promise<T>): Promise<T[]> => {
        const all: T[] = [];
        for (let i = 0; i < count; i += 16) {
          all.push(
            ...await Promise.all(Array.from({ length: Math.min(16, count - i) }, (_, j) => each(i + j))),
          );
        }
        return all;
      };
      memoryIdle.before = await settled();
      const open: LoadSession[] = [];
      for (const target of MEMORY_SESSIONS) {
        const opened = await inBatches(target - open.length, () => LoadSession.open(memoryServer.url, TOKEN));
        open.push(...opened);
        memoryOpen[target] = await settled();
        await inBatches(opened.length, async (i) => {
          const outcome = await opened[i].call("trivial", {});
          if (outcome.error !== undefined) memoryErrors.push(outcome.error);
        });
        auditExpected[memoryAudit] += opened.length;
        memory[target] = await settled();
      }
      await Promise.all(open.map((session) => session.close()));
      memoryIdle.after = await settled();
      // 256 sessions more, closed again, round after round: what a leak would add to, a high-water mark would not.
      for (let round = 0; round < MEMORY_ROUNDS; round++) {
        const again = await inBatches(MEMORY_SESSIONS[1], async () => {
          const session = await LoadSession.open(memoryServer.url, TOKEN);
          const outcome = await session.call("trivial", {});
          if (outcome.error !== undefined) memoryErrors.push(outcome.error);
          return session;
        });
        auditExpected[memoryAudit] += again.length;
        await Promise.all(again.map((session) => session.close()));
        memoryIdle.again.push(await settled());
      }
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
    ["gateway_stateless", "upstream_floor"],
    ["confined_before", "bwrap_floor"],
    ["gateway_before", "upstream_floor"],
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
        [`${floor}_${sessions}_p99_over_p50`]: quantile(fl.times, 0.99) / quantile(fl.times, 0.5),
      });
      lines.push(
        `load, ${sessions} sessions, ${name}: ${f1(perSecond(t))} calls/s, p50 ${f1(p50)} ms, p99 ${
          f1(p99)
        } ms ` +
          `(p99/p50 ${f2(p99 / p50)}); ${name} floor (${floor.replace("_floor", "")}) ${
            f1(perSecond(fl))
          } calls/s, ` +
          `p50 ${f1(quantile(fl.times, 0.5))} ms, p99 ${f1(quantile(fl.times, 0.99))} ms; ${name}/floor ${
            f2(ratio)
          }` +
          (sessions === 16 && name in TARGETS ? ` (target ${TARGETS[name as keyof typeof TARGETS]})` : "") +
          `; ${t.errors} errors, ${t.unanswered} sessions unanswered` +
          (t.firstError === undefined ? "" : ` (first: ${t.firstError})`) +
          (fl.errors === 0 ? "" : `; floor errors ${fl.errors} (${fl.firstError})`),
      );
    }
  }
  // The unconfined calls against the floor of their design, and that floor against the bare tool's.
  for (const sessions of SESSIONS) {
    const [t, command, bare] = ["unconfined", "command_floor", "spawn_floor"].map((name) =>
      tallies[name]?.[sessions]
    );
    if (t === undefined || command === undefined || bare === undefined) continue;
    Object.assign(result, {
      [`unconfined_${sessions}_over_command_floor`]: perSecond(t) / perSecond(command),
      [`command_floor_${sessions}_calls_per_s`]: perSecond(command),
      [`command_floor_${sessions}_over_spawn_floor`]: perSecond(command) / perSecond(bare),
      [`command_floor_${sessions}_errors`]: command.errors,
    });
    lines.push(
      `load, ${sessions} sessions, unconfined: over bare spawns of the same command line (${
        project.starter === undefined
          ? "setsid, the cgroup's shell, the tool"
          : "the session starter, the tool"
      }) ${f2(perSecond(t) / perSecond(command))}; that command line bare ${
        f1(perSecond(command))
      } calls/s, ${f2(perSecond(command) / perSecond(bare))} of the bare tool's; ${command.errors} errors`,
    );
  }
  // Where each call's CPU went, by process, and how many of the machine's cores the whole kept busy.
  for (const sessions of SESSIONS) {
    for (
      const name of [
        "unconfined",
        "gateway",
        "gateway_stateless",
        "upstream_floor",
        ...POOL_WIDTHS.map((width) => `pool${width}`),
      ]
    ) {
      const t = tallies[name]?.[sessions];
      if (t === undefined || Object.keys(t.cpu).length === 0) continue;
      const parts = Object.entries(t.cpu).map(([group, ms]) => [group, ms / t.calls] as const);
      const total = parts.reduce((sum, [, ms]) => sum + ms, 0);
      for (const [group, ms] of parts) result[`${name}_${sessions}_cpu_ms_${group}`] = ms;
      result[`${name}_${sessions}_cpu_ms_per_call`] = total;
      result[`${name}_${sessions}_cores_busy`] = total * t.calls / t.wallMs;
      lines.push(
        `load, ${sessions} sessions, ${name}: CPU per call ${f1(total)} ms (${
          parts.map(([group, ms]) => `${group} ${f1(ms)}`).join(", ")
        }); ${f2(total * t.calls / t.wallMs)} of ${navigator.hardwareConcurrency} cores busy`,
      );
    }
  }
  // The pools beside the local serve (unconfined, the same tool, the same sessions, the same rounds).
  for (const sessions of SESSIONS) {
    const local = tallies.unconfined?.[sessions];
    for (const width of POOL_WIDTHS) {
      const t = tallies[`pool${width}`]?.[sessions];
      if (t === undefined || local === undefined) continue;
      const p50 = quantile(t.times, 0.5);
      const p99 = quantile(t.times, 0.99);
      const localP50 = quantile(local.times, 0.5);
      const ratio = perSecond(t) / perSecond(local);
      Object.assign(result, {
        [`pool${width}_${sessions}_calls_per_s`]: perSecond(t),
        [`pool${width}_${sessions}_p50_ms`]: p50,
        [`pool${width}_${sessions}_p99_ms`]: p99,
        [`pool${width}_${sessions}_over_local`]: ratio,
        [`pool${width}_${sessions}_p50_over_local`]: p50 / localP50,
        [`pool${width}_${sessions}_errors`]: t.errors,
      });
      lines.push(
        `load, ${sessions} sessions, pool of ${width} worker${width === 1 ? "" : "s"}: ${
          f1(perSecond(t))
        } calls/s, p50 ${f1(p50)} ms, p99 ${f1(p99)} ms; local (unconfined serve) ${
          f1(perSecond(local))
        } calls/s, p50 ${f1(localP50)} ms; pool/local ${f2(ratio)} in calls/s, ${
          f2(p50 / localP50)
        } in p50; ${t.errors} errors, ${t.unanswered} sessions unanswered` +
          (t.firstError === undefined ? "" : ` (first: ${t.firstError})`),
      );
    }
  }
  for (const sessions of SESSIONS) {
    for (const name of ["confined", "unconfined", "gateway"]) {
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
      `load, audit (${name.endsWith("_workers") ? name.replace("_", " ") : `${name} serve`}): ${
        audited[name]
      } lines for ${expected} calls (one per call: ${audited[name] === expected ? "yes" : "NO"})`,
    );
  }
  if (memory[16] !== undefined) {
    const perSession = (memory[256] - memory[16]) / (256 - 16);
    const perOpen = (memoryOpen[256] - memoryOpen[16]) / (256 - 16);
    Object.assign(result, {
      memory_before_mib: memoryIdle.before!,
      memory_16_open_mib: memoryOpen[16],
      memory_16_sessions_mib: memory[16],
      memory_256_open_mib: memoryOpen[256],
      memory_256_sessions_mib: memory[256],
      memory_closed_mib: memoryIdle.after!,
      ...memoryIdle.again.length === 0 ? {} : { memory_closed_again_mib: memoryIdle.again.at(-1)! },
      memory_per_session_kib: perSession * 1024,
      memory_per_open_session_kib: perOpen * 1024,
      memory_errors: memoryErrors.length,
    });
    lines.push(
      `load, memory: serve's resident memory ${
        f1(memoryIdle.before!)
      } MiB with no session open; at 16 sessions ${f1(memoryOpen[16])} MiB open, ${
        f1(memory[16])
      } MiB once each made a call; at 256 sessions ${f1(memoryOpen[256])} MiB open, ${
        f1(memory[256])
      } MiB after the calls; ${
        f1(memoryIdle.after!)
      } MiB once closed; after each round of 256 more sessions ` +
        `and calls, closed: ${
          memoryIdle.again.map(f1).join(", ") || "none run"
        } MiB. Per session from 16 to 256: ${f1(perOpen * 1024)} KiB open, ${
          f1(perSession * 1024)
        } KiB after a call; ${memoryErrors.length} errors` +
        (memoryErrors.length === 0 ? "" : ` (first: ${memoryErrors[0]})`),
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
