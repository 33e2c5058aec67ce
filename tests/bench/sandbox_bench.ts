/**
 * A trivial tool's confined call through the executor against a bare spawn of the very same confined command line
 * (the cgroup wrapper where cgroups are used, bwrap with the same arguments), interleaved in one run: the
 * hardening must not cost more than 1.1x. Also the confined call against a bare bwrap without the cgroup wrapper,
 * and against an unconfined call, for scale.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { cgroupWrapper } from "../../src/cgroups.ts";
import { controlPlane } from "../../src/control_plane.ts";
import { Executor } from "../../src/executor.ts";
import { type Manifest, type ToolSpec, validateManifest } from "../../src/manifest.ts";
import { bwrapArgs, probeSandbox, type SandboxSupport } from "../../src/sandbox.ts";
import { loadSchemaEngine } from "../../src/schema.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

/** The target: a confined call over a bare bwrap spawn with the same arguments. */
export const TARGET_RATIO = 1.1;
const ROUNDS = 60;
const encoder = new TextEncoder();

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
 * The very command line a confined call of `tool` starts: the cgroup wrapper of `slot` where cgroups are used,
 * then bwrap with the executor's arguments.
 */
export function confinedCommandLine(
  support: Support,
  manifest: Manifest,
  tool: ToolSpec,
  env: Record<string, string>,
  cwd: string,
  slot: string,
): string[] {
  const args = bareBwrapArgs(support, manifest, tool, env, cwd);
  const prefix = support.cgroups ? cgroupWrapper(support.cgroups, tool.profile.limits, slot) : [];
  return [...prefix, support.bwrap, ...args];
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
  await writer.write(encoder.encode("{}"));
  await writer.close();
  const [out] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  if (!(await child.status).success || !out.includes("{")) throw new Error(`the bare run failed: ${out}`);
}

/** Median per-call times and their ratios; empty when bubblewrap does not work here. */
export async function benchSandbox(): Promise<Record<string, number>> {
  const env = { PATH: "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" };
  const support = await probeSandbox(env.PATH, "bwrap", Deno.env.toObject());
  if (!support.ok) {
    console.log(`sandbox bench skipped: ${support.reason}`);
    return {};
  }
  const dir = await Deno.realPath(await Deno.makeTempDir());
  await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
  await Deno.writeTextFile(join(dir, "tools", "bin", "trivial"), "#!/bin/sh\necho '{\"ok\":1}'\n", {
    mode: 0o755,
  });
  const loaded = validateManifest(
    { tools: [{ name: "trivial", command: ["./tools/bin/trivial"], permissions: "none" }] },
    join(dir, "tools.json"),
  );
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const tool = loaded.manifest.tools[0];
  const make = (sandbox: "require" | "off") =>
    new Executor({ manifest: loaded.manifest, env, cwd: dir, auditDir: null, sandbox });
  const confined = make("require");
  const unconfined = make("off");
  const args = bareBwrapArgs(support, loaded.manifest, tool, env, dir);
  const same = () => {
    const [program, ...rest] = confinedCommandLine(support, loaded.manifest, tool, env, dir, "call-bench-1");
    return spawn(program, rest, dir);
  };
  const runs: Record<string, () => Promise<unknown>> = {
    executor: async () => {
      const envelope = await confined.call("trivial", "{}");
      if (!envelope.ok) throw new Error(JSON.stringify(envelope));
    },
    bare_same_command: same,
    bare_bwrap_only: () => spawn(support.bwrap, args, dir),
    unconfined: () => unconfined.call("trivial", "{}"),
  };
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
  for (const run of Object.values(runs)) await run();
  // Each round starts at another run, so that every run follows every other equally often: a sandbox's teardown
  // (its namespaces go after it exits) is paid by whatever starts next, and a fixed order would bill one run for it.
  const entries = Object.entries(runs);
  for (let i = 0; i < ROUNDS; i++) {
    for (let j = 0; j < entries.length; j++) {
      const [name, run] = entries[(i + j) % entries.length];
      const start = performance.now();
      await run();
      times[name].push(performance.now() - start);
    }
  }
  const m = (name: string) => median(times[name]);
  const result = {
    confined_over_bare_same_command: m("executor") / m("bare_same_command"),
    confined_over_bare_bwrap: m("executor") / m("bare_bwrap_only"),
    confined_over_unconfined: m("executor") / m("unconfined"),
  };
  console.log(
    `sandbox: a confined call takes ${
      result.confined_over_bare_same_command.toFixed(2)
    }x a bare spawn of the same ` +
      `confined command (target ${TARGET_RATIO}x; ${m("executor").toFixed(1)} vs ${
        m("bare_same_command").toFixed(1)
      } ms), ` +
      `${result.confined_over_bare_bwrap.toFixed(2)}x bwrap alone (${m("bare_bwrap_only").toFixed(1)} ms), ` +
      `${result.confined_over_unconfined.toFixed(2)}x an unconfined call (${
        m("unconfined").toFixed(1)
      } ms); ` +
      `medians of ${ROUNDS}, interleaved`,
  );
  return result;
}

if (import.meta.main) await benchSandbox();
