/**
 * The `job` tool, answered from the job table in toolgate's own process: `poll`, `wait` and `kill`, its arguments
 * read by the schema tools.json declares. Not here: the table (src/run/jobs.ts), a job's own answer
 * (`Job.snapshot`, src/run/job.ts).
 *
 * @module
 */
import { type Envelope, failure, success, withDenials, withTool } from "../contract.ts";
import { stoppedByUser, userStopped } from "../process/stop.ts";
import { ToolFailure } from "../contract/tool_output.ts";
import { Args, type ArgValues, readArgs } from "../contract/args.ts";
import { JOB_ARGS } from "../contract/job_args.ts";
import { type Job, JOB_DEFAULTS } from "./job.ts";
import type { JobManager } from "./jobs.ts";

/** What the `job` tool's call carries besides its arguments. */
export interface JobCallContext {
  /** Whose jobs it sees. */
  readonly scope: string;
  /** Cancels a `wait` (a person's stop answers `killed_by: "user"`). */
  readonly signal?: AbortSignal;
  /** Did a person ask for (or approve) this very call? Then a `kill` says `killed_by: "user"`. */
  readonly byPerson: boolean;
  /** The grace period of a kill, to bound how long the answer waits for the tree to go. */
  readonly graceMs: number;
}

const JOB_ID_EXPECTED = "the job_id a background exec returned, e.g. job-1";

/**
 * Resolves when `done` settles, after `ms`, or when `signal` aborts, whichever comes first; its timer never
 * outlives it (a pending timer would hold toolgate open after its work is done).
 */
async function within(done: Promise<unknown>, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const stop = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    onAbort = () => resolve();
    signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([done, stop]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Answers one call of the `job` tool from the table, in toolgate's own process: `poll` (the state and the log's
 * last lines now), `wait` (the same once the job ends or `timeout_ms` passes), `kill` (its whole tree ends; the
 * answer comes once it is gone).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answerJobCall } from "./job_tool.ts";
 * import { JobManager } from "./jobs.ts";
 * const jobs = new JobManager({ dir: "/tmp" });
 * const envelope = await answerJobCall(jobs, { action: "poll", job_id: "job-7" }, {
 *   scope: "", byPerson: false, graceMs: 2000,
 * });
 * assert.equal(envelope.ok, false); // not_found, there is no job-7
 * ```
 */
export async function answerJobCall(
  jobs: JobManager,
  args: Readonly<Record<string, unknown>>,
  context: JobCallContext,
): Promise<Envelope> {
  const tool = "job";
  // Read by the schema tools.json declares (the preflight has checked them already, so this only fills defaults).
  let read: ArgValues<typeof JOB_ARGS>;
  try {
    read = readArgs(JOB_ARGS, Args.of(args));
  } catch (error) {
    if (error instanceof ToolFailure) return withTool(error.toEnvelope(), tool);
    throw error;
  }
  const { job_id: id, action } = read;
  const job = jobs.lookup(id, context.scope);
  if (job === undefined) {
    return failure("not_found", `There is no background job ${JSON.stringify(id)} here.`, {
      tool,
      field: "job_id",
      expected: JOB_ID_EXPECTED,
    });
  }
  const tailLines = read.tail_lines;
  const answer = (warnings: string[] = []) => jobAnswer(job, tailLines, warnings);
  switch (action) {
    case "poll":
      return answer();
    case "wait": {
      const timeoutMs = Math.min(read.timeout_ms, JOB_DEFAULTS.maxWaitMs);
      if (job.state === "running") await within(job.done, timeoutMs, context.signal);
      if (job.state === "running" && stoppedByUser(context.signal)) {
        // The wait was the call; the job itself goes on.
        return userStopped(
          tool,
          { job_id: job.id, job_state: "running" },
          "The user stopped the wait; the job itself is still running (poll or kill it by its job_id).",
        );
      }
      return answer(job.state === "running" ? [`the job is still running after ${timeoutMs} ms`] : []);
    }
    case "kill": {
      if (job.state !== "running") return answer([`the job had already ended (${job.state})`]);
      job.kill(context.byPerson ? "user" : "model");
      // SIGTERM, the grace period, SIGKILL: the tree is gone well within a second past the grace.
      await within(job.done, context.graceMs + 5000);
      return answer(job.state === "running" ? ["the job was told to stop but has not ended yet"] : []);
    }
  }
}

/**
 * What the `job` tool answers of `job` (`poll`, and `wait` or `kill` once they are done): its snapshot with the log's
 * last `tailLines` lines, its warnings and `warnings` beside them, and what toolgate refused it. An MCP task that
 * follows a background job (`mcp/job_tasks.ts`) inlines the same answer, so that the two never disagree.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jobAnswer } from "./job_tool.ts";
 * import { JobManager } from "./jobs.ts";
 * const dir = await Deno.makeTempDir();
 * const jobs = new JobManager({ dir });
 * const started = await jobs.start({
 *   scope: "",
 *   command: { argv: ["true"] },
 *   cwd: ".",
 *   request: {
 *     program: "/bin/true", args: [], env: {}, cwd: dir, stdin: new Uint8Array(), timeoutMs: 10_000, graceMs: 500,
 *   },
 * });
 * assert.ok(started.ok);
 * await started.job.done;
 * const envelope = jobAnswer(started.job, 10);
 * assert.ok(envelope.ok && envelope.tool === "job");
 * assert.equal((envelope.result as { state: string }).state, "exited");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function jobAnswer(job: Job, tailLines: number, warnings: readonly string[] = []): Envelope {
  return withDenials(
    success(job.snapshot(tailLines), { tool: "job", warnings: [...job.warnings(), ...warnings] }),
    job.denials,
  );
}
