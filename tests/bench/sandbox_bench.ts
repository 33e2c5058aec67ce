/**
 * Per call through the library, under the least permission flags the launcher derives for a `call` of the tool
 * (measured in a child process run under exactly them), interleaved in one run:
 * - a trivial tool's confined call against a bare spawn of the very same confined command line (the cgroup
 *   wrapper where cgroups are used, bwrap with the same arguments): target at most 1.1x; and against a bare bwrap
 *   without the cgroup wrapper, for scale;
 * - the same bare command with and without the seccomp filter (the shell that opens it for bwrap, and
 *   `--seccomp 3`): target at most 1 ms added at the median;
 * - its unconfined call (through the session starter, built for the bench's user as `deno task install` builds
 *   it) against a bare spawn of the tool (target at most 1.3x), and against a bare spawn through setsid(1), the
 *   least a runner that can end the tool's whole tree pays.
 *
 * @module
 */
import { buildSessionStart } from "../../src/build/native.ts";
import { dirname, join } from "node:path";
import { planLaunch } from "../../src/launcher/launch_plan.ts";
import { fromFileUrl } from "../../src/base/paths.ts";
import { toFlags } from "../../src/launcher/own_grants.ts";
import { cgroupWrapper } from "../../src/sandbox/cgroups.ts";
import { controlPlane } from "../../src/sandbox/control_plane.ts";
import { Executor } from "../../src/run/executor.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";
import { type Manifest, type ToolSpec } from "../../src/manifest/manifest_types.ts";
import { probeSandbox, type SandboxSupport } from "../../src/sandbox/sandbox.ts";
import { bwrapArgs } from "../../src/sandbox/bwrap_args.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";
import { launcherArgs } from "../../src/build/install.ts";
import { machineArch, seccompFilter } from "../../src/sandbox/seccomp_filter.ts";
import { SECCOMP_FD, seccompWrapper, writeSeccompFile } from "../../src/sandbox/seccomp_file.ts";
import { confinedStartLine, findSessionStart } from "../../src/sandbox/session_start.ts";
import { stateRoot } from "../../src/state/state.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

/** The targets: a confined call over a bare spawn of its command line, an unconfined one over a bare spawn. */
export const TARGET_RATIO = 1.1;
export const UNCONFINED_TARGET_RATIO = 1.3;
/** The target for the seccomp filter: at most this many milliseconds added at the median. */
export const FILTER_TARGET_MS = 1;
const SETSID = "/usr/bin/setsid";
/** toolgate's checkout (not through tests/support.ts, which reads variables the least set does not grant). */
const REPO = fromFileUrl(new URL("../../", import.meta.url));
const ROUNDS = 60;
const encoder = new TextEncoder();

/** `items` in a random order (Fisher-Yates). */
export function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

type Support = Extract<SandboxSupport, { ok: true }>;

/** The bwrap arguments the executor gives `tool` (its profile, its files, the control plane). */
function bareBwrapArgs(
  support: Support,
  manifest: Manifest,
  tool: ToolSpec,
  env: Record<string, string>,
  cwd: string,
): string[] {
  return bwrapArgs(support, {
    program: tool.program,
    args: [],
    cwd,
    profile: tool.profile,
    files: [dirname(dirname(tool.program))],
    controlPlane: controlPlane(manifest, env),
    cgroupLimits: support.cgroups && {
      processes: support.cgroups.pids !== undefined,
      memory: support.cgroups.memory !== undefined,
    },
  });
}

/**
 * The very command line a confined call of `tool` starts: where cgroups are used, the session starter given
 * (`starter`, as the launcher uses the one built) or else the cgroup wrapper of `slot` and (given the seccomp
 * program's file, as every confined call has) the shell that opens it; then bwrap with the executor's arguments.
 */
export function confinedCommandLine(
  support: Support,
  manifest: Manifest,
  tool: ToolSpec,
  env: Record<string, string>,
  cwd: string,
  slot: string,
  filter?: string,
  starter?: string,
): string[] {
  const args = bareBwrapArgs(support, manifest, tool, env, cwd);
  if (support.cgroups && starter !== undefined) {
    const seccomp = filter === undefined ? undefined : { fd: SECCOMP_FD, file: filter };
    const cgroups = { support: support.cgroups, limits: tool.profile.limits, slot };
    const front = confinedStartLine(starter, cgroups, seccomp === undefined ? [] : [seccomp]);
    return [...front, support.bwrap, ...seccomp ? ["--seccomp", String(SECCOMP_FD)] : [], ...args];
  }
  const prefix = support.cgroups ? cgroupWrapper(support.cgroups, tool.profile.limits, slot) : [];
  if (filter === undefined) return [...prefix, support.bwrap, ...args];
  return [...prefix, ...seccompWrapper(filter), support.bwrap, "--seccomp", "3", ...args];
}

/** Spawns `program` as the executor would (stdin `{}`, every stream piped) and waits for it to succeed. */
export async function spawn(program: string, args: string[], cwd: string): Promise<void> {
  const child = new Deno.Command(program, {
    args,
    cwd,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
  }).spawn();
  const writer = child.stdin.getWriter();
  // A tool that never reads its arguments may be gone before they are written, as the executor allows.
  await writer.write(encoder.encode("{}")).then(() => writer.close()).catch((error) => {
    if (!(error instanceof Deno.errors.BrokenPipe)) throw error;
  });
  const [out] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  if (!(await child.status).success || !out.includes("{")) throw new Error(`the bare run failed: ${out}`);
}

/**
 * The measurement itself, in the child that runs under the least set: the project in `dir` (a trivial tool), the
 * variables the launcher hands the main entry in `launched`. Median per-call times, by run.
 */
async function measure(dir: string, launched: Record<string, string>): Promise<Record<string, number>> {
  const state = Deno.env.get("XDG_STATE_HOME");
  const env = {
    PATH: "/usr/bin:/bin",
    HOME: Deno.env.get("HOME") ?? "/root",
    ...(state === undefined ? {} : { XDG_STATE_HOME: state }),
  };
  const support = await probeSandbox(env.PATH, launched.TOOLGATE_BWRAP ?? "bwrap", launched);
  if (!support.ok) throw new Error(`bubblewrap does not work here: ${support.reason}`);
  await loadSchemaEngine();
  const loaded = validateManifest(
    { tools: [{ name: "trivial", command: ["./tools/bin/trivial"], permissions: "none" }] },
    join(dir, "tools.json"),
  );
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const tool = loaded.manifest.tools[0];
  // As every command makes its executor: one resident helper shell tells whether a call's cgroup is empty.
  const make = (sandbox: "require" | "off") =>
    new Executor({
      manifest: loaded.manifest,
      env,
      cwd: dir,
      auditDir: null,
      sandbox,
      bwrap: support.bwrap,
      residentHelpers: true,
    });
  const confined = make("require");
  const unconfined = make("off");
  const args = bareBwrapArgs(support, loaded.manifest, tool, env, dir);
  // The very program a confined call of a profile without network loads, where toolgate writes it.
  const filter = await writeSeccompFile(
    join(stateRoot(env), "seccomp"),
    seccompFilter(machineArch()!, { network: false }),
  );
  // The session starter a confined call starts through, where it is built and granted (as the launcher finds it).
  const starter = findSessionStart(env);
  const bare = (withFilter: boolean) => () => {
    const [program, ...rest] = confinedCommandLine(
      support,
      loaded.manifest,
      tool,
      env,
      dir,
      `call-${Deno.pid}-bench-1`,
      withFilter ? filter : undefined,
      starter,
    );
    return spawn(program, rest, dir);
  };
  const call = (executor: Executor) => async () => {
    const envelope = await executor.call("trivial", "{}");
    if (!envelope.ok) throw new Error(JSON.stringify(envelope));
  };
  const runs: Record<string, () => Promise<unknown>> = {
    executor: call(confined),
    bare_same_command: bare(true),
    bare_no_filter: bare(false),
    bare_bwrap_only: () => spawn(support.bwrap, args, dir),
    unconfined: call(unconfined),
    bare_unconfined: () => spawn(tool.program, [], dir),
    bare_setsid: () => spawn(SETSID, [tool.program], dir),
  };
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
  for (const run of Object.values(runs)) await run();
  // Each round runs them in a new random order, so that every run follows every other about equally often: a
  // sandbox's teardown (its namespaces go after it exits) is paid by whatever starts next, and a fixed cycle (even
  // one that starts each round elsewhere) would bill the same run for it every time.
  const entries = Object.entries(runs);
  for (let i = 0; i < ROUNDS; i++) {
    for (const [name, run] of shuffled(entries)) {
      const start = performance.now();
      await run();
      times[name].push(performance.now() - start);
    }
  }
  await confined.close();
  await unconfined.close();
  return Object.fromEntries(Object.entries(times).map(([name, values]) => [name, median(values)]));
}

/** Median per-call times and their ratios, under the least set; empty when bubblewrap does not work here. */
export async function benchSandbox(): Promise<Record<string, number>> {
  const support = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin", "bwrap", Deno.env.toObject());
  if (!support.ok) {
    console.log(`sandbox bench skipped: ${support.reason}`);
    return {};
  }
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const state = await Deno.makeTempDir();
  await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
  await Deno.writeTextFile(join(dir, "tools", "bin", "trivial"), "#!/bin/sh\necho '{\"ok\":1}'\n", {
    mode: 0o755,
  });
  await Deno.writeTextFile(
    join(dir, "tools.json"),
    JSON.stringify({ tools: [{ name: "trivial", command: ["./tools/bin/trivial"], permissions: "none" }] }),
  );
  const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" };
  // A workspace manifest runs, and is granted anything, only once it is trusted: as its user would, first.
  const trusted = await new Deno.Command(Deno.execPath(), {
    args: [...launcherArgs({ source: REPO }), "trust"],
    cwd: dir,
    clearEnv: true,
    env: { ...env, XDG_STATE_HOME: state },
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!trusted.success) throw new Error(`toolgate trust failed: ${new TextDecoder().decode(trusted.stderr)}`);
  // The session starter, as `deno task install` builds it for its user: unconfined calls start through it.
  const starter = await buildSessionStart({ ...env, XDG_STATE_HOME: state });
  if (!starter.ok) console.log(`sandbox bench: no session starter (${starter.reason})`);
  const plan = await planLaunch(["call", "trivial"], { ...env, XDG_STATE_HOME: state }, dir);
  // What the launcher grants a `call` of the tool, and the bench's own code beside toolgate's.
  const flags = toFlags({ ...plan.set, env: [...plan.set.env, "TOOLGATE_BWRAP"] });
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", ...flags, "--config", join(REPO, "deno.json"), import.meta.filename!, dir],
    cwd: dir,
    clearEnv: true,
    env: { ...env, XDG_STATE_HOME: state, ...plan.env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(state, { recursive: true });
  if (!child.success) throw new Error(`the sandbox bench failed: ${new TextDecoder().decode(child.stderr)}`);
  const m = JSON.parse(new TextDecoder().decode(child.stdout)) as Record<string, number>;
  const result = {
    confined_over_bare_same_command: m.executor / m.bare_same_command,
    confined_over_bare_bwrap: m.executor / m.bare_bwrap_only,
    confined_over_unconfined: m.executor / m.unconfined,
    unconfined_over_bare_spawn: m.unconfined / m.bare_unconfined,
    unconfined_over_setsid_spawn: m.unconfined / m.bare_setsid,
    filter_added_ms: m.bare_same_command - m.bare_no_filter,
  };
  const f = (n: number) => n.toFixed(2);
  const ms = (n: number) => n.toFixed(1);
  console.log(
    `sandbox, under the least set: a confined call takes ${
      f(result.confined_over_bare_same_command)
    }x a bare ` +
      `spawn of the same confined command (target ${TARGET_RATIO}x; ${ms(m.executor)} vs ` +
      `${ms(m.bare_same_command)} ms), ${f(result.confined_over_bare_bwrap)}x bwrap alone ` +
      `(${ms(m.bare_bwrap_only)} ms); an unconfined call ${
        f(result.unconfined_over_bare_spawn)
      }x a bare spawn ` +
      `(target ${UNCONFINED_TARGET_RATIO}x; ${ms(m.unconfined)} vs ${ms(m.bare_unconfined)} ms), ` +
      `${f(result.unconfined_over_setsid_spawn)}x a setsid(1) spawn (${ms(m.bare_setsid)} ms); the seccomp ` +
      `filter adds ${
        f(result.filter_added_ms)
      } ms to the bare command (target ${FILTER_TARGET_MS} ms); medians of ` +
      `${ROUNDS}, interleaved`,
  );
  return result;
}

if (import.meta.main) {
  // The child: measures under the least set and prints the medians; run by hand, the whole bench.
  if (Deno.args[0] !== undefined) {
    const launched = Object.fromEntries(
      ["TOOLGATE_BWRAP", "TOOLGATE_CGROUP"].flatMap((name) => {
        const value = Deno.env.get(name);
        return value === undefined ? [] : [[name, value]];
      }),
    );
    console.log(JSON.stringify(await measure(Deno.args[0], launched)));
  } else await benchSandbox();
}
