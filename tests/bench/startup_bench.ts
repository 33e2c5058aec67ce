/**
 * Whole-process figures of the `toolgate` command against the runtime's floor, `deno run` of a hello-world file,
 * each run interleaved with the others in one loop (the machines are shared and noisy: read the ratios):
 * - `toolgate call` of a trivial tool (target: at most 3x hello-world), as installed (the split bundle that
 *   `deno task install` builds) and from the source files (`deno task agent`);
 * - the agent loop, one tool call then the answer, against a loopback endpoint (target: at most 3.5x);
 * - the agent loop with eight parallel 200 ms calls against the loop with one (target: at most 1.1x);
 * - `toolgate validate` of a 1,000-tool manifest, unchanged since the last run and just changed (targets: at most
 *   10x and 40x hello-world).
 *
 * Beside them, the floor of the command's design, measured in the same loop: one runtime that starts a second
 * (the launcher and the run it starts under the least set), which starts the tool (through setsid(1) unconfined,
 * as the very confined command line a call starts otherwise) and does nothing else. `call` over that floor is
 * what toolgate's own work costs.
 *
 * Run: `deno run -A tests/bench/startup_bench.ts`
 *
 * @module
 */
import { join } from "node:path";
import { REPO } from "../support.ts";
import { answer, callTools, type RecordedRequest, startChatServer } from "../agent/chat_server.ts";
import { generateManifest } from "./manifest_bench.ts";
import { buildBundle, launcherArgs, shimText } from "../../src/build/install.ts";
import { FRESH_MS } from "../../src/launcher/launch_record.ts";
import { COMMON_DENO_FLAGS } from "../../tools/deno_flags.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";
import { probeSandbox } from "../../src/sandbox/sandbox.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";
import { confinedCommandLine, shuffled } from "./sandbox_bench.ts";

/** The targets, as ratios. */
export const TARGETS = {
  call_over_hello: 3,
  agent_one_call_over_hello: 3.5,
  warm_call_over_hello: 3,
  warm_get_time_over_hello: 3.5,
  warm_agent_one_call_over_hello: 4,
  agent_eight_parallel_over_one: 1.1,
  validate_unchanged_over_hello: 10,
  validate_changed_over_hello: 40,
} as const;

const ROUNDS = Number(Deno.env.get("TOOLGATE_BENCH_ROUNDS") ?? 12);
/**
 * `TOOLGATE_BENCH_CPU=1`: each run is repeated under `perf stat -e task-clock` for the CPU time of its whole
 * process tree, steadier than wall time on a shared machine (printed for the warm runs and their floors).
 */
const CPU = Deno.env.get("TOOLGATE_BENCH_CPU") === "1";
/** The CPU time of the last run that {@linkcode time} measured, in milliseconds (`NaN` without `CPU`). */
let lastCpu = NaN;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function time(
  args: string[],
  cwd: string,
  env: Record<string, string>,
  program = Deno.execPath(),
  input?: string,
  measureCpu = CPU,
): Promise<number> {
  const start = performance.now();
  const child = new Deno.Command(program, {
    args,
    cwd,
    env,
    stdin: input === undefined ? "inherit" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (input !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
  }
  const output = await child.output();
  const elapsed = performance.now() - start;
  if (!output.success) {
    throw new Error(`${args.join(" ")} failed: ${new TextDecoder().decode(output.stderr).slice(0, 500)}`);
  }
  if (measureCpu) {
    const report = await Deno.makeTempFile();
    const perf = ["stat", "-x,", "-e", "task-clock", "-o", report, "--", program, ...args];
    await time(perf, cwd, env, "perf", input, false).catch(() => {});
    lastCpu = Number((await Deno.readTextFile(report)).match(/^([\d.]+),msec,task-clock/m)?.[1] ?? NaN);
    await Deno.remove(report);
  }
  return elapsed;
}

/** The figures, in milliseconds and ratios. */
export async function benchStartup(): Promise<Record<string, number>> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_startup_" }));
  const hello = join(dir, "hello.ts");
  await Deno.writeTextFile(hello, 'console.log("hello");\n');
  await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
  await Deno.writeTextFile(join(dir, "tools", "bin", "trivial"), "#!/bin/sh\necho '{\"ok\":1}'\n", {
    mode: 0o755,
  });
  await Deno.writeTextFile(join(dir, "tools", "bin", "nap"), "#!/bin/sh\nsleep 0.2\necho '{\"slept\":1}'\n", {
    mode: 0o755,
  });
  await Deno.writeTextFile(
    join(dir, "tools.json"),
    JSON.stringify({
      tools: [
        {
          name: "trivial",
          command: ["./tools/bin/trivial"],
          permissions: "none",
          readOnly: true,
          concurrent: true,
        },
        { name: "nap", command: ["./tools/bin/nap"], permissions: "none", readOnly: true, concurrent: true },
      ],
    }),
  );
  const big = join(dir, "big");
  await Deno.mkdir(big);
  const generated = generateManifest(1_000);
  await Deno.writeTextFile(join(big, "tools.json"), JSON.stringify(generated));
  // `validate` checks that every program is there.
  await Deno.mkdir(join(big, "tools", "bin"), { recursive: true });
  for (const tool of generated.tools) {
    await Deno.writeTextFile(join(big, String((tool.command as string[])[0])), "#!/bin/sh\n", {
      mode: 0o755,
    });
  }
  const env = { XDG_STATE_HOME: join(dir, "state"), NO_COLOR: "1" };
  // The state folder of a user who has run toolgate before (a cache is never the reason to create it).
  await Deno.mkdir(join(dir, "state", "toolgate"), { recursive: true, mode: 0o700 });
  // The design's floor: two runtimes, one starting the other, which starts the tool and reads its output.
  const floor = join(dir, "floor.ts");
  await Deno.writeTextFile(
    floor,
    [
      "const [role, ...rest] = Deno.args;",
      "const child = role === 'outer'",
      "  ? new Deno.Command(Deno.execPath(), { args: ['run', '-A', '--quiet', import.meta.filename!, 'inner', ...rest] })",
      "  : new Deno.Command(rest[0], { args: rest.slice(1), stdin: 'piped', stdout: 'piped', stderr: 'piped' });",
      "if (role === 'outer') Deno.exit((await child.spawn().status).code);",
      "const process = child.spawn();",
      "const writer = process.stdin.getWriter();",
      // A tool that never reads its arguments may be gone before they are written.
      "await writer.write(new TextEncoder().encode('{}')).then(() => writer.close()).catch(() => {});",
      "const output = await process.output();",
      "await Deno.stdout.write(output.stdout);",
      "Deno.exit(output.code);",
      "",
    ].join("\n"),
  );
  await loadSchemaEngine();
  const loaded = validateManifest(
    JSON.parse(await Deno.readTextFile(join(dir, "tools.json"))),
    join(dir, "tools.json"),
  );
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const support = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin", "bwrap", Deno.env.toObject());
  const trivial = join(dir, "tools", "bin", "trivial");
  const confinedLine = support.ok
    ? confinedCommandLine(
      support,
      loaded.manifest,
      loaded.manifest.tools[0],
      { PATH: "/usr/bin:/bin" },
      dir,
      "call-floor-1",
    )
    : undefined;
  const launcher = launcherArgs({ source: REPO });
  // The installed command's launcher: the split bundle `deno task install` builds.
  const bundle = join(dir, "bundle");
  const built = await buildBundle(bundle);
  if (!built.ok) throw new Error(`cannot build the bundle: ${built.reason}`);
  const installed = launcherArgs({ bundle });
  // The installed command itself, its shell front end included: warm (a command run before) and cold (each run
  // under a new key: a launch variable nothing else reads takes a new value, so the launcher plans and records).
  const shim = join(dir, "toolgate");
  await Deno.writeTextFile(shim, shimText(Deno.execPath(), { bundle }, Deno.version.deno, "bench"), {
    mode: 0o755,
  });
  // The workspace manifest runs once the user trusted it.
  await time([...installed, "trust"], dir, env);
  const belt = join(dir, "belt");
  await Deno.mkdir(join(belt, ".git"), { recursive: true });
  let miss = 0;
  const cold = () => ({ ...env, OPENAI_API_BASE: `http://cold-${++miss}.invalid` });
  const timeTime = '{"timezone":"UTC"}';
  // The endpoint asks for N calls of a tool, then answers once their results are in.
  let calls: { name: string; count: number } = { name: "trivial", count: 1 };
  const server = startChatServer((request: RecordedRequest) => {
    const messages = request.body?.messages ?? [];
    if (messages.some((m: { role: string }) => m.role === "tool")) return answer("done");
    return callTools(
      Array.from({ length: calls.count }, (_, i) => ({ id: `c${i}`, name: calls.name, args: {} })),
    );
  });
  const agent =
    (name: string, count: number, via = installed, program?: string, runEnv = () => env) => async () => {
      calls = { name, count };
      return await time(
        [...via, "--prompt", "go", "--base-url", server.baseUrl, "--model", "m", "--quiet"],
        dir,
        runEnv(),
        program,
      );
    };
  let generation = 0;
  const runs: Record<string, () => Promise<number>> = {
    hello: () => time(["run", "--quiet", hello], dir, env),
    floor_unconfined: () =>
      time(["run", "-A", "--quiet", floor, "outer", "/usr/bin/setsid", trivial], dir, env),
    ...(confinedLine &&
      { floor: () => time(["run", "-A", "--quiet", floor, "outer", ...confinedLine], dir, env) }),
    call: () => time([...installed, "call", "trivial"], dir, env),
    // The warm path's floor: one runtime that starts the tool (the very confined command line).
    ...(confinedLine &&
      { floor_warm: () => time(["run", "-A", "--quiet", floor, "inner", ...confinedLine], dir, env) }),
    warm_call: () => time(["call", "trivial"], dir, env, shim),
    cold_call: () => time(["call", "trivial"], dir, cold(), shim),
    warm_get_time: () => time(["call", "get_time", timeTime], belt, env, shim),
    // The built-in tool alone, as its entry runs (unconfined): a runtime, and the time zone data it loads.
    get_time_alone: () =>
      time(
        ["run", ...COMMON_DENO_FLAGS, join(bundle, "belt", "get_time.js")],
        belt,
        env,
        undefined,
        timeTime,
      ),
    cold_get_time: () => time(["call", "get_time", timeTime], belt, cold(), shim),
    warm_agent_one: agent("trivial", 1, [], shim),
    cold_agent_one: agent("trivial", 1, [], shim, cold),
    call_source: () => time([...launcher, "call", "trivial"], dir, env),
    call_unconfined: () => time([...installed, "call", "--sandbox", "off", "trivial"], dir, env),
    agent_one: agent("trivial", 1),
    agent_one_source: agent("trivial", 1, launcher),
    agent_nap_one: agent("nap", 1),
    agent_nap_eight: agent("nap", 8),
    validate_unchanged: () => time([...installed, "validate", "--tools", join(big, "tools.json")], dir, env),
    validate_changed: async () => {
      // A new description each time: the manifest's bytes change, so nothing about it can be reused.
      const manifest = generateManifest(1_000);
      manifest.tools[0] = { ...manifest.tools[0], description: `Changed ${++generation}.` };
      await Deno.writeTextFile(join(big, "changed.json"), JSON.stringify(manifest));
      return await time([...installed, "validate", "--tools", join(big, "changed.json")], dir, env);
    },
  };
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
  const cpus: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
  try {
    // Files just written are too fresh to be recorded: the warm runs record once they are older.
    await new Promise((done) => setTimeout(done, FRESH_MS + 100));
    for (const run of Object.values(runs)) await run();
    // Each round runs them in a new random order, so that none always follows the same one (a sandbox's
    // teardown is paid by whatever starts next).
    for (let i = 0; i < ROUNDS; i++) {
      for (const [name, run] of shuffled(Object.entries(runs))) {
        times[name].push(await run());
        cpus[name].push(lastCpu);
      }
    }
  } finally {
    await server[Symbol.asyncDispose]();
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  const figures = {
    hello_ms: m.hello,
    call_ms: m.call,
    call_over_hello: m.call / m.hello,
    floor_over_hello: m.floor / m.hello,
    floor_unconfined_over_hello: m.floor_unconfined / m.hello,
    call_over_floor: m.call / m.floor,
    call_unconfined_over_floor: m.call_unconfined / m.floor_unconfined,
    call_source_over_hello: m.call_source / m.hello,
    call_unconfined_over_hello: m.call_unconfined / m.hello,
    agent_one_call_over_hello: m.agent_one / m.hello,
    agent_one_call_source_over_hello: m.agent_one_source / m.hello,
    agent_eight_parallel_over_one: m.agent_nap_eight / m.agent_nap_one,
    warm_call_over_hello: m.warm_call / m.hello,
    cold_call_over_hello: m.cold_call / m.hello,
    floor_warm_over_hello: m.floor_warm / m.hello,
    warm_call_over_floor_warm: m.warm_call / m.floor_warm,
    warm_get_time_over_hello: m.warm_get_time / m.hello,
    get_time_alone_over_hello: m.get_time_alone / m.hello,
    // get_time's floor: the warm floor and get_time's own runtime (the trivial tool's shell, a millisecond or
    // two, left in).
    floor_warm_get_time_over_hello: (m.floor_warm + m.get_time_alone) / m.hello,
    cold_get_time_over_hello: m.cold_get_time / m.hello,
    warm_agent_one_call_over_hello: m.warm_agent_one / m.hello,
    cold_agent_one_call_over_hello: m.cold_agent_one / m.hello,
    validate_unchanged_over_hello: m.validate_unchanged / m.hello,
    validate_changed_over_hello: m.validate_changed / m.hello,
  };
  for (const [key, value] of Object.entries(figures)) {
    if (key.endsWith("_ms")) continue;
    const target = TARGETS[key.replace("_source", "").replace("_unconfined", "") as keyof typeof TARGETS];
    console.log(
      `startup: ${key} ${value.toFixed(2)} (target ${target ?? "-"}; floor hello-world ${
        m.hello.toFixed(1)
      } ms)`,
    );
  }
  if (CPU) {
    // The cold runs are left out: their repetition under perf finds the record the first run made.
    const c = Object.fromEntries(Object.entries(cpus).map(([k, v]) => [k, median(v)]));
    for (const key of ["floor_warm", "warm_call", "get_time_alone", "warm_get_time", "warm_agent_one"]) {
      console.log(
        `startup: cpu ${key}_over_hello ${(c[key] / c.hello).toFixed(2)} (hello-world ${
          c.hello.toFixed(1)
        } ms of CPU)`,
      );
    }
  }
  return figures;
}

if (import.meta.main) await benchStartup();
