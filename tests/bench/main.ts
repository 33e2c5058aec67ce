// `deno task bench`: every benchmark, one after the other, each comparing within its own run (the machines are
// shared and noisy: read the ratios, not the milliseconds). `--sections a,b` runs those only; `--json` prints
// every figure as JSON at the end.
import { benchAgent } from "./agent_bench.ts";
import { benchBroker } from "./broker_bench.ts";
import { benchExecutor } from "./executor_bench.ts";
import { benchGateway } from "./gateway_bench.ts";
import { benchJobs } from "./jobs_bench.ts";
import { benchLazyTools } from "./lazy_tools_bench.ts";
import { benchLoad } from "./load_bench.ts";
import { benchManifest } from "./manifest_bench.ts";
import { benchPackages } from "./package_bench.ts";
import { benchPool } from "./pool_bench.ts";
import { benchSandbox } from "./sandbox_bench.ts";
import { benchStartup } from "./startup_bench.ts";
import process from "node:process";
import { benchStateless } from "./stateless_bench.ts";

const results: Record<string, Record<string, number>> = {};
const only = Deno.args.includes("--sections")
  ? Deno.args[Deno.args.indexOf("--sections") + 1].split(",")
  : undefined;
for (
  const [name, bench] of [
    ["manifest", benchManifest],
    ["executor", benchExecutor],
    ["agent", benchAgent],
    ["sandbox", benchSandbox],
    ["startup", benchStartup],
    ["jobs", benchJobs],
    ["lazy_tools", benchLazyTools],
    ["pool", benchPool],
    ["broker", benchBroker],
    ["gateway", benchGateway],
    ["packages", benchPackages],
    ["load", benchLoad],
    ["stateless", benchStateless],
  ] as const
) {
  if (only !== undefined && !only.includes(name)) continue;
  console.log(`\n## ${name}`);
  try {
    results[name] = await bench();
  } catch (error) {
    // One bench that fails (a shared machine's hiccup) is said, and the others still run.
    console.log(`  failed: ${(error as Error).message.split("\n")[0]}`);
    process.exitCode = 1;
    continue;
  }
  for (const [key, value] of Object.entries(results[name])) {
    console.log(`  ${key}: ${Number(value.toFixed(3))}`);
  }
}
if (Deno.args.includes("--json")) console.log(JSON.stringify(results, null, 2));
