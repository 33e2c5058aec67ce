// A trivial tool's call confined by bubblewrap versus unconfined, interleaved in one run.
import { join } from "node:path";
import { Executor } from "../../src/executor.ts";
import { validateManifest } from "../../src/manifest.ts";
import { probeSandbox } from "../../src/sandbox.ts";

const ROUNDS = 40;
const ROOT = new URL("../../", import.meta.url).pathname;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Median per-call time of each mode and their ratio; empty when bubblewrap does not work here. */
export async function benchSandbox(): Promise<Record<string, number>> {
  const support = await probeSandbox("bwrap");
  if (!support.ok) {
    console.log(`sandbox bench skipped: ${support.reason}`);
    return {};
  }
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
  await Deno.writeTextFile(join(dir, "tools", "bin", "trivial"), "#!/bin/sh\necho '{\"ok\":1}'\n", {
    mode: 0o755,
  });
  const loaded = validateManifest(
    {
      tools: [
        { name: "trivial", command: ["./tools/bin/trivial"] },
        { name: "get_time", command: [join(ROOT, "tools", "bin", "get_time")] },
      ],
    },
    join(dir, "tools.json"),
    { allowAbsoluteCommands: true },
  );
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const make = (sandbox: "require" | "off") =>
    new Executor({
      manifest: loaded.manifest,
      env: { PATH: "/usr/bin:/bin" },
      cwd: dir,
      auditDir: null,
      sandbox,
    });
  const confined = make("require");
  const unconfined = make("off");
  const result: Record<string, number> = {};
  for (const [tool, args] of [["trivial", "{}"], ["get_time", '{"timezone":"UTC"}']] as const) {
    await confined.call(tool, args);
    await unconfined.call(tool, args);
    const times = { confined: [] as number[], unconfined: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      for (const [name, executor] of [["confined", confined], ["unconfined", unconfined]] as const) {
        const start = performance.now();
        const envelope = await executor.call(tool, args);
        times[name].push(performance.now() - start);
        if (!envelope.ok) throw new Error(JSON.stringify(envelope));
      }
    }
    const ratio = median(times.confined) / median(times.unconfined);
    result[`${tool}_confined_over_unconfined`] = ratio;
    console.log(
      `sandbox, ${tool}: a confined call takes ${ratio.toFixed(2)}x an unconfined one ` +
        `(medians of ${ROUNDS}, interleaved; ${median(times.confined).toFixed(1)} vs ${
          median(times.unconfined).toFixed(1)
        } ms)`,
    );
  }
  return result;
}

if (import.meta.main) await benchSandbox();
