// `deno task bench`: every benchmark, one after the other, each comparing within its own run (the machines are
// shared and noisy: read the ratios, not the milliseconds).
import { benchAgent } from "./agent_bench.ts";
import { benchBroker } from "./broker_bench.ts";
import { benchExecutor } from "./executor_bench.ts";
import { benchGateway } from "./gateway_bench.ts";
import { benchJobs } from "./jobs_bench.ts";
import { benchLazyTools } from "./lazy_tools_bench.ts";
import { benchManifest } from "./manifest_bench.ts";
import { benchPackages } from "./package_bench.ts";
import { benchPool } from "./pool_bench.ts";
import { benchSandbox } from "./sandbox_bench.ts";
import { benchStartup } from "./startup_bench.ts";
import { benchStateless } from "./stateless_bench.ts";

const results: Record<string, Record<string, number>> = {};
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
    ["stateless", benchStateless],
  ] as const
) {
  console.log(`\n## ${name}`);
  results[name] = await bench();
  for (const [key, value] of Object.entries(results[name])) {
    console.log(`  ${key}: ${Number(value.toFixed(3))}`);
  }
}
if (Deno.args.includes("--json")) console.log(JSON.stringify(results, null, 2));
