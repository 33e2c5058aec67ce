/**
 * The arithmetic of a call's limits: the tool's own (`timeoutSec`, `idleTimeoutSec`) or the executor's default,
 * the defaults a call brings (a pool caller's), and the limits a caller shows (the heartbeat's `elapsed=Ys/Zs`).
 * Pure functions. Not here: enforcing them (src/process/runner.ts).
 *
 * @module
 */
import type { ToolSpec } from "../manifest/manifest_types.ts";
import type { PreparedCall } from "../policy/prepared_call.ts";
import { EXECUTOR_DEFAULTS } from "../process/executor_defaults.ts";
import { EXEC_TOOL, JOB_TOOL } from "./builtins.ts";
import type { CallLimits, CallOptions, ExecutorOptions } from "./call_options.ts";
import type { CallDefaults } from "./tool_pool.ts";

/**
 * The tool's limits in milliseconds: its `timeoutSec` (0: none) or `defaultSec`, and its `idleTimeoutSec`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { processLimits } from "./call_limits.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const tool = loaded.manifest.byName.get("get_time")!;
 * assert.equal(processLimits(tool, 30).timeoutMs, (tool.timeoutSec ?? 30) * 1000); // its timeoutSec, or 30 s
 * ```
 */
export function processLimits(
  tool: ToolSpec,
  defaultSec: number,
): { timeoutMs: number; idleTimeoutMs?: number } {
  const timeoutSec = tool.timeoutSec ?? defaultSec;
  return {
    timeoutMs: timeoutSec === 0 ? Infinity : timeoutSec * 1000,
    idleTimeoutMs: tool.idleTimeoutSec === undefined ? undefined : tool.idleTimeoutSec * 1000,
  };
}

/**
 * The limits of a call: the ones it brings (a pool caller's), else the executor's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { callDefaults } from "./call_limits.ts";
 * assert.equal(callDefaults({}, { defaultTimeoutSec: 10 }).timeoutSec, 10);
 * ```
 */
export function callDefaults(
  options: CallOptions,
  executor: Pick<ExecutorOptions, "defaultTimeoutSec" | "graceMs" | "maxOutputBytes">,
): CallDefaults {
  return options.defaults ?? {
    timeoutSec: executor.defaultTimeoutSec ?? EXECUTOR_DEFAULTS.timeoutSec,
    graceMs: executor.graceMs ?? EXECUTOR_DEFAULTS.graceMs,
    maxOutputBytes: executor.maxOutputBytes ?? EXECUTOR_DEFAULTS.maxOutputBytes,
  };
}

/**
 * The limits of a prepared call as a caller shows them, in seconds: the tool's (for `exec`, the smaller of the
 * tool's and the call's own `timeout_ms`); a background `exec` answers at once, and a `job` wait lasts its
 * `timeout_ms`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shownLimits } from "./call_limits.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const exec = loaded.manifest.byName.get("exec")!;
 * assert.equal(shownLimits({ tool: exec, args: { argv: ["make"], timeout_ms: 600000 }, argsText: "" }, 30).timeoutSec, 600);
 * ```
 */
export function shownLimits(call: PreparedCall, defaultSec: number): CallLimits {
  const { tool, args } = call;
  const seconds = (value: unknown, fallback: number) => (typeof value === "number" ? value : fallback) / 1000;
  if (tool.builtin === JOB_TOOL) {
    return { timeoutSec: args.action === "wait" ? seconds(args.timeout_ms, 30_000) : undefined };
  }
  if (tool.builtin === EXEC_TOOL && args.background === true) return {};
  const { timeoutMs, idleTimeoutMs } = processLimits(tool, defaultSec);
  let timeoutSec = Number.isFinite(timeoutMs) ? timeoutMs / 1000 : undefined;
  let idleTimeoutSec = idleTimeoutMs === undefined ? undefined : idleTimeoutMs / 1000;
  if (tool.builtin === EXEC_TOOL) {
    timeoutSec = Math.min(timeoutSec ?? Infinity, seconds(args.timeout_ms, 30_000));
    const idle = seconds(args.idle_timeout_ms, 0);
    if (idle > 0) idleTimeoutSec = Math.min(idleTimeoutSec ?? Infinity, idle);
  }
  return { timeoutSec, idleTimeoutSec };
}
