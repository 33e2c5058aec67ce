/**
 * A call handed to a pool of workers (`--executor nats://...`): lookup, preflight and approval stayed with the
 * caller; the call goes over with the caller's limits, is waited for, and is audited here too (the worker's own
 * line holds the run; both carry the call's id). Not here: the pool's seam (src/run/tool_pool.ts) and its client
 * (src/pool/client.ts).
 *
 * @module
 */
import { type Envelope, failure } from "../contract.ts";
import type { PreparedCall } from "../policy/prepared_call.ts";
import { EXECUTOR_DEFAULTS } from "../process/executor_defaults.ts";
import { jobAnswerRecord } from "./audit.ts";
import { inProcess, isBackgroundExec } from "./builtins.ts";
import type { CallContext } from "./call_context.ts";
import { callDefaults, shownLimits } from "./call_limits.ts";
import type { CallOptions } from "./call_options.ts";
import type { ToolPool } from "./tool_pool.ts";

/**
 * Runs a prepared call on the pool, waiting for a worker to take it within its timeout. Background jobs stay with
 * the process that starts them, so a pool takes none: a `job` call or a background `exec` is refused.
 *
 * @example
 * ```ts ignore
 * // Ignored: a context is the executor's own (src/run/call_context.ts).
 * const envelope = await runInPool(context, pool, call, options);
 * ```
 */
export async function runInPool(
  context: CallContext,
  pool: ToolPool,
  call: PreparedCall,
  options: CallOptions,
): Promise<Envelope> {
  const { trail, secrets } = context;
  const { tool } = call;
  if (inProcess(tool) || isBackgroundExec(call)) {
    return await context.refuse(
      call,
      failure(
        "unavailable",
        `Background jobs are not available: this toolgate's calls run on the worker pool at ${pool.shown}, ` +
          "and a job belongs to the process that starts it; run the command in the foreground (timeout_ms up " +
          "to an hour).",
        { tool: tool.name, retryable: false },
      ),
    );
  }
  const defaults = callDefaults(options, context.options);
  const started = trail.now();
  const clock = performance.now();
  const shown = shownLimits(call, context.options.defaultTimeoutSec ?? EXECUTOR_DEFAULTS.timeoutSec);
  const answer = await pool.run({
    tool: tool.name,
    readOnly: tool.readOnly,
    argsText: call.argsText,
    defaults,
    startWithinMs: (shown.timeoutSec ?? defaults.timeoutSec) * 1000,
    signal: options.signal,
    trace: options.trace?.carrier,
    // A toolgate/1 tool on a worker asks this caller, and its log and progress come here, as a local one's.
    relay: {
      tool,
      questions: options.questions,
      scrub: secrets.scrub,
      // The toolgate/1 channel's code loads only for a caller that listens to a tool's events.
      onToolEvent: options.onToolEvent &&
        (await import("../manifest/tool_protocol.ts")).scrubbedEvents(options.onToolEvent, secrets.scrub),
    },
  });
  const envelope = answer.envelope;
  await trail.write({
    ...jobAnswerRecord(await trail.facts(started, tool.name, call.argsText), {
      ms: Math.round(performance.now() - clock),
      envelope,
    }),
    cancelled: options.signal?.aborted ? true : undefined,
    pool: pool.shown,
    worker: answer.worker,
    call_id: answer.id,
  });
  return secrets.forCaller(envelope);
}
