/**
 * Background jobs as tasks of the tasks extension (`io.modelcontextprotocol/tasks`), for stateless callers that
 * declare it: a background `exec` is answered as a task as soon as its job runs (not after a moment, as a long
 * call is), and the task follows that very job. `tasks/get` reads the job itself, so that the task and the `job`
 * tool never disagree: `working` while it runs; `completed` once it exited or hit its own limit, its result the
 * `job` tool's answer (`run/job_tool.ts`'s `jobAnswer`: state, exit status, the log's last lines);
 * `cancelled` once something ended it (a `tasks/cancel`, the `job` tool's `kill`, its caller's or the server's
 * end), `statusMessage` saying who. `tasks/cancel` ends the job's whole tree as its user's stop
 * (`killed_by: "user"`, in the job's audit line too). The task's id is its own (random); the job's id, pid and log
 * file are in its `_meta["toolgate/job"]`, for the `job` tool. A task is its caller's (the caller key of
 * `stateless_wire.ts`, the job's scope too): another caller is told it does not exist. An ended task is kept
 * {@linkcode TASK_LIMITS}' `ttlMs`, then forgotten; a caller keeps at most `maxPerCaller`, and all callers together
 * 64 times that (the oldest ended one goes first).
 *
 * Not here: a long call as a task (`tasks.ts`); the jobs (`run/background_jobs.ts`); the `job` tool
 * (`run/job_tool.ts`).
 *
 * @module
 */
import { after } from "../base/timer.ts";
import type { Job } from "../run/job.ts";
import { jobAnswer } from "../run/job_tool.ts";
import { JOB_ARGS } from "../contract/job_args.ts";
import { toCallResult } from "./results.ts";
import { TASK_LIMITS, type TaskStatus } from "./tasks.ts";

/** The `_meta` key of a job task's job: what the background `exec` answered (`job_id`, `pid`, `log_file`, ...). */
export const JOB_META = "toolgate/job";

/**
 * The most job tasks kept at once, every caller's: a caller's name is its own claim, so callers are many at will;
 * past it, the oldest ended task goes first.
 */
const MAX_TASKS = TASK_LIMITS.maxPerCaller * 64;

/** The log lines a job task's result carries: the `job` tool's default. */
const TAIL_LINES = JOB_ARGS.properties.tail_lines.default;

interface JobTask {
  readonly id: string;
  readonly caller: string;
  readonly job: Job;
  /** What the background `exec` answered when the job started. */
  readonly started: Record<string, unknown>;
  readonly createdAt: string;
  lastUpdatedAt: string;
}

/**
 * A job's state as a task's status and the words beside it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jobStatus } from "./job_tasks.ts";
 * const job = { id: "job-1", pid: 42, state: "killed", killedBy: "user", result: undefined } as const;
 * assert.deepEqual(jobStatus(job), { status: "cancelled", message: "job-1 (pid 42) was killed by user" });
 * ```
 */
export function jobStatus(
  job: Pick<Job, "id" | "pid" | "state" | "killedBy" | "result">,
): { readonly status: TaskStatus; readonly message: string } {
  const name = `${job.id} (pid ${job.pid})`;
  if (job.state === "running") return { status: "working", message: `${name} is running` };
  if (job.state === "killed" && job.killedBy !== "timeout") {
    return { status: "cancelled", message: `${name} was killed by ${job.killedBy ?? "toolgate"}` };
  }
  const result = job.result;
  const how = job.state === "killed"
    ? "was killed at its time limit"
    : result?.signal
    ? `exited on ${result.signal}`
    : `exited with ${result?.code ?? "?"}`;
  return { status: "completed", message: `${name} ${how}` };
}

/**
 * The job tasks of one connection's stateless callers.
 *
 * @example Not run as a doc test: a task follows a running job (tests/mcp/stateless_job_tasks_test.ts runs some).
 * ```ts ignore
 * import { JobTasks } from "./job_tasks.ts";
 * const tasks = new JobTasks();
 * const created = tasks.start("http|client", job, { job_id: "job-1", pid: 42 }); // the CreateTaskResult's fields
 * tasks.get("http|client", created.taskId);
 * ```
 */
export class JobTasks {
  readonly #tasks = new Map<string, JobTask>();

  /** `job` of `caller`, running, as a task: the fields of its `CreateTaskResult`. */
  start(caller: string, job: Job, started: Record<string, unknown>): Record<string, unknown> {
    this.#room(caller);
    const now = new Date().toISOString();
    const task: JobTask = {
      id: crypto.randomUUID(),
      caller,
      job,
      started,
      createdAt: now,
      lastUpdatedAt: now,
    };
    this.#tasks.set(task.id, task);
    void job.done.then(() => {
      task.lastUpdatedAt = new Date().toISOString();
      after(TASK_LIMITS.ttlMs, () => this.#tasks.delete(task.id), { keepAlive: false });
    });
    return { resultType: "task", ...this.#fields(task) };
  }

  /**
   * Past the caps (per caller, and in all), the oldest ended task goes: `caller`'s own, then anyone's (a running
   * job's task is never dropped: the job caps bound those).
   */
  #room(caller: string): void {
    const tasks = [...this.#tasks.values()];
    const own = tasks.filter((task) => task.caller === caller);
    const drop = own.length >= TASK_LIMITS.maxPerCaller ? own : this.#tasks.size >= MAX_TASKS ? tasks : [];
    const ended = drop.find((task) => task.job.state !== "running");
    if (ended !== undefined) this.#tasks.delete(ended.id);
  }

  #fields(task: JobTask): Record<string, unknown> {
    const { status, message } = jobStatus(task.job);
    return {
      taskId: task.id,
      status,
      statusMessage: message,
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      ttlMs: TASK_LIMITS.ttlMs,
      pollIntervalMs: TASK_LIMITS.pollIntervalMs,
      _meta: { [JOB_META]: task.started },
    };
  }

  /** `tasks/get`: the task's fields, with the job's answer once it completed; undefined for no task of `caller`. */
  get(caller: string, id: unknown): Record<string, unknown> | undefined {
    const task = this.#own(caller, id);
    if (task === undefined) return undefined;
    const fields = this.#fields(task);
    if (fields.status !== "completed") return fields;
    return {
      ...fields,
      result: { ...toCallResult(jobAnswer(task.job, TAIL_LINES)), resultType: "complete" },
    };
  }

  /** `tasks/update`: a job asks nothing, so there is nothing to answer; false for no task of `caller`. */
  update(caller: string, id: unknown): boolean {
    return this.#own(caller, id) !== undefined;
  }

  /** `tasks/cancel`: ends a running job's whole tree as its user's stop; false for no task of `caller`. */
  cancel(caller: string, id: unknown): boolean {
    const task = this.#own(caller, id);
    if (task === undefined) return false;
    task.job.kill("user");
    return true;
  }

  /** Forgets every task (the connection closed: its callers' jobs end with it). */
  clear(): void {
    this.#tasks.clear();
  }

  #own(caller: string, id: unknown): JobTask | undefined {
    const task = typeof id === "string" ? this.#tasks.get(id) : undefined;
    return task?.caller === caller ? task : undefined;
  }
}
