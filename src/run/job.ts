/**
 * One background job: its identity (id, owner, pid, command), how it is doing (running, exited, killed and by
 * whom), and what `poll` answers of it; and the job table's limits. Not here: the table that starts and keeps
 * jobs (src/run/jobs.ts), the log (src/run/job_log.ts).
 *
 * @module
 */
import type { Denial } from "../contract.ts";
import type { RunResult } from "../process/run_terms.ts";
import { type ExecCommand, finishedCommand } from "../contract/exec_args.ts";
import { JOB_CAPS } from "./job_owners.ts";
import type { JobLog } from "./job_log.ts";

/**
 * The job table's limits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JOB_DEFAULTS } from "./job.ts";
 * assert.equal(JOB_DEFAULTS.maxLogBytes, 1048576); // per log file; one rotated file is kept beside it
 * ```
 */
export const JOB_DEFAULTS = {
  /** The most bytes of one log file; past it the file is rotated (one older file is kept). */
  maxLogBytes: 1024 * 1024,
  /** Jobs one owner (an MCP session, the agent loop's run) runs at once; one more is refused until one ends. */
  maxRunning: JOB_CAPS.perOwner,
  /** Jobs all owners together run at once. */
  maxRunningTotal: JOB_CAPS.total,
  /** Ended jobs remembered for `poll`, per owner (the oldest is forgotten first). */
  maxEnded: 64,
  /** The log's last bytes kept in memory, so that a poll never reads the disk. */
  tailBytes: 64 * 1024,
  /** The most characters of log text in one answer (cut head-and-tail by the contract's truncation). */
  tailChars: 20_000,
  /** The longest `wait`. */
  maxWaitMs: 600_000,
  /** Log files older than this are removed when the next job starts. */
  logDays: 7,
} as const;

/**
 * A job's state: still `running`, `exited` on its own (with its exit code or signal), or `killed` by toolgate (a
 * `kill`, a timeout, toolgate's own end).
 *
 * @example
 * ```ts
 * import type { JobState } from "./job.ts";
 * const state: JobState = "running";
 * ```
 */
export type JobState = "running" | "exited" | "killed";

/**
 * Who ended a killed job: a person (`user`: they asked for the kill, or approved it), the model (a kill that ran
 * on standing approval: `--yes`, `--allow-tools`, an earlier "always"), its own limit (`timeout`), or the end of
 * the MCP session that owned it (`session`: closed, deleted, expired or disconnected), or the end of toolgate's run
 * (`shutdown`: the agent loop ended, `serve` stopped, a stop signal).
 *
 * @example
 * ```ts
 * import type { KilledBy } from "./job.ts";
 * const by: KilledBy = "user";
 * ```
 */
export type KilledBy = "user" | "model" | "timeout" | "session" | "shutdown";

/**
 * One background job: its identity, how it is doing, and its log.
 *
 * @example
 * ```ts
 * import type { Job } from "./job.ts";
 * function describe(job: Job): string {
 *   return `${job.id} ${job.state} (pid ${job.pid}), log ${job.logFile}`;
 * }
 * ```
 */
export class Job {
  /** `job-N`, unique among its owner's jobs (each owner numbers its own). */
  readonly id: string;
  /** Whose job it is. */
  readonly scope: string;
  /** The pid of the job's first process on this host (bwrap's, when it is confined). */
  readonly pid: number;
  /** What it runs. */
  readonly command: ExecCommand;
  /** Its working directory, relative to the workspace. */
  readonly cwd: string;
  /** When it started (wall clock). */
  readonly startedAt: Date;
  /** Resolves when the job has ended. */
  readonly done: Promise<void>;
  readonly #log: JobLog;
  readonly #controller: AbortController;
  readonly #started: number;
  readonly #now: () => number;
  #result?: RunResult;
  #ended?: number;
  #killedBy?: KilledBy;
  #denials: readonly Denial[] = [];

  /** A job whose process is running (the manager makes them). */
  constructor(
    init: {
      id: string;
      scope: string;
      pid: number;
      command: ExecCommand;
      cwd: string;
      log: JobLog;
      controller: AbortController;
      result: Promise<RunResult>;
      now: () => number;
      clock: () => Date;
      /** What toolgate refused the job, told once it ended (a failed job's log tail; `undefined` otherwise). */
      denials?: (failure: string | undefined) => Denial[];
    },
  ) {
    this.id = init.id;
    this.scope = init.scope;
    this.pid = init.pid;
    this.command = init.command;
    this.cwd = init.cwd;
    this.#log = init.log;
    this.#controller = init.controller;
    this.#now = init.now;
    this.#started = init.now();
    this.startedAt = init.clock();
    this.done = init.result.then((result) => {
      this.#result = result;
      this.#ended = this.#now();
      if (result.timedOut || result.idleTimedOut) this.#killedBy ??= "timeout";
      // A job that failed may have been refused something: its log's tail is what it said.
      const failed = result.aborted || result.timedOut || result.idleTimedOut || result.code !== 0;
      const tail = failed ? this.#log.tail(Number.MAX_SAFE_INTEGER, JOB_DEFAULTS.tailChars) : undefined;
      this.#denials = init.denials?.(tail) ?? [];
      this.#log.close();
    });
  }

  /** The log file (the one being written; the older one is `<log_file>.1`). */
  get logFile(): string {
    return this.#log.path;
  }

  /** How the job is doing. */
  get state(): JobState {
    const result = this.#result;
    if (result === undefined) return "running";
    return result.aborted || result.timedOut || result.idleTimedOut ? "killed" : "exited";
  }

  /** What toolgate refused the job (typed denials), known once it has ended; empty while it runs. */
  get denials(): readonly Denial[] {
    return this.#denials;
  }

  /** The run's outcome once it has ended. */
  get result(): RunResult | undefined {
    return this.#result;
  }

  /** Who ended a killed job (`undefined` while it runs, after it exited on its own, or at toolgate's own end). */
  get killedBy(): KilledBy | undefined {
    return this.state === "killed" ? this.#killedBy : undefined;
  }

  /** Ends the job's whole tree (SIGTERM, the grace period, SIGKILL); `by` says who asked. */
  kill(by?: KilledBy): void {
    if (this.#result !== undefined || this.#controller.signal.aborted) return;
    this.#killedBy = by;
    this.#controller.abort();
  }

  /** What `poll` answers: the state, the exit status once it ended, the times, the log's last `tailLines` lines. */
  snapshot(tailLines: number, tailChars: number = JOB_DEFAULTS.tailChars): Record<string, unknown> {
    const result = this.#result;
    const state = this.state;
    const finished = result !== undefined && state === "exited"
      ? finishedCommand(this.command, result.code, this.#log.bytes > 0 ? "." : "", "")
      : undefined;
    return {
      job_id: this.id,
      state,
      pid: this.pid,
      ...(this.command.shell !== undefined ? { shell: this.command.shell } : { argv: this.command.argv }),
      cwd: this.cwd,
      started_at: this.startedAt.toISOString(),
      elapsed_ms: Math.round((this.#ended ?? this.#now()) - this.#started),
      ...(result === undefined ? {} : {
        exit_code: finished?.exitCode ?? result.code,
        signal: result.signal ?? undefined,
        sigpipe: finished?.sigpipe ? true : undefined,
        killed_by: this.killedBy,
        idle: result.idleTimedOut ? true : undefined,
      }),
      log_file: this.logFile,
      log_bytes: this.#log.bytes,
      tail: this.#log.tail(tailLines, tailChars),
    };
  }

  /** The warnings an ended job's answers carry (a pipeline's SIGPIPE, a pipeline that printed nothing). */
  warnings(): string[] {
    const result = this.#result;
    if (result === undefined || this.state !== "exited") return [];
    return finishedCommand(this.command, result.code, this.#log.bytes > 0 ? "." : "", "").warnings;
  }
}
