/**
 * The built-in tools the executor treats apart, by name, in one place: `exec` with `background: true` becomes a
 * job, and `job` is answered from the job table in toolgate's own process. Not here: the jobs themselves
 * (src/run/background_jobs.ts, src/run/jobs.ts).
 *
 * @module
 */
import type { ToolSpec } from "../manifest/manifest_types.ts";
import type { PreparedCall } from "../policy/prepared_call.ts";

/** The built-in `exec`: with `background: true`, its command becomes a background job. */
export const EXEC_TOOL = "exec";
/** The built-in `job`: reads and stops the background jobs. */
export const JOB_TOOL = "job";

/**
 * A built-in tool that is answered in toolgate's own process: it starts no program.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { inProcess } from "./builtins.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * assert.ok(loaded.ok);
 * assert.deepEqual(loaded.manifest.tools.filter(inProcess).map((tool) => tool.name), ["job"]);
 * ```
 */
export function inProcess(tool: ToolSpec): boolean {
  return tool.builtin === JOB_TOOL;
}

/**
 * A call of `exec` that starts a background job rather than waiting for its command.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isBackgroundExec } from "./builtins.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * const exec = loaded.ok ? loaded.manifest.byName.get("exec") : undefined;
 * assert.ok(exec);
 * assert.ok(isBackgroundExec({ tool: exec, args: { argv: ["make"], background: true }, argsText: "" }));
 * ```
 */
export function isBackgroundExec(call: PreparedCall): boolean {
  return call.tool.builtin === EXEC_TOOL && call.args.background === true;
}
