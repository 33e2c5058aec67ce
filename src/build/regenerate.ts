/**
 * Regenerates the kept permission set after tools.json changed: writes `permissions/toolgate.json` and the flags
 * of the `agent` task in `deno.json`. A test fails while they are stale, like a lockfile.
 *
 * @module
 */
import { join } from "node:path";
import { toFlags } from "../permissions.ts";
import { ROOT, rootPermissions } from "./flags.ts";

/** The `agent` task's command for a set of flags. */
export function agentTask(flags: readonly string[]): string {
  return `deno run ${flags.join(" ")} src/main.ts`;
}

if (import.meta.main) {
  const set = await rootPermissions();
  await Deno.writeTextFile(join(ROOT, "permissions", "toolgate.json"), JSON.stringify(set, null, 2) + "\n");
  const configPath = join(ROOT, "deno.json");
  const config = JSON.parse(await Deno.readTextFile(configPath));
  config.tasks.agent = agentTask(toFlags(set));
  await Deno.writeTextFile(configPath, JSON.stringify(config, null, 2) + "\n");
  console.log("wrote permissions/toolgate.json and the agent task of deno.json");
}
