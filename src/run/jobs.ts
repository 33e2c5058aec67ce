/**
 * Background jobs: the programs `exec` starts with `background: true`, which outlive the call that started them
 * but not toolgate. A confined `exec` runs in a pid namespace that dies with it, so a job cannot be its child:
 * toolgate owns each job, started as a process of its own through the executor's launch path (bwrap, the call's
 * cgroups and limits, exec's profile), in a session of its own (a Ctrl-C on the terminal does not reach it), and
 * tracked by the process registry, so that toolgate's exit ends its tree (the whole of it, through what its launch
 * says holds it: its cgroup or its pid namespace; a job has ended once nothing of it is left). Its stdout and
 * stderr go, in the order they arrive, to a log capped per file and rotated once (at most twice the cap on disk),
 * in the workspace's state folder, never in the workspace a tool may write. The `job` tool reads this table in
 * toolgate's own process: `poll`, `wait`, `kill`. Each job has an owner (an MCP session, or the agent loop's run;
 * `job_owners.ts`): only its owner sees it, and it ends when its owner does. This module is the table (start,
 * lookup, ends, the sweep of old logs). Not here: a job (job.ts), its log (job_log.ts), its arguments
 * (job_args.ts), the `job` tool (job_tool.ts), launching it (background_jobs.ts).
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { type Denial, failure, type FailureEnvelope } from "../contract.ts";
import { runProcess } from "../process/runner.ts";
import type { RunRequest, RunResult } from "../process/run_terms.ts";
import type { ProcessRegistry } from "../process/process_tree.ts";
import type { ExecCommand } from "../contract/exec_args.ts";
import { type JobCaps, JobOwners } from "./job_owners.ts";
import { Job, JOB_DEFAULTS } from "./job.ts";
import { JobLog } from "./job_log.ts";

/** What a job runs, as the executor prepared it. */
export interface JobStart {
  /** Whose job it is (an MCP session's id; `""` for the agent loop): another scope cannot see it. */
  readonly scope: string;
  /** What the model asked to run, for the answers and the exit-status rules of `exec`. */
  readonly command: ExecCommand;
  /** The working directory as the model named it (relative to the workspace). */
  readonly cwd: string;
  /** The process: program, arguments, environment, limits, as the executor launches any call. */
  readonly request: Omit<
    RunRequest,
    "sink" | "onSpawn" | "signal" | "detach" | "registry" | "maxOutputBytes"
  >;
  /** Told once when the job has ended (the executor gives back its cgroup slot and writes the audit line). */
  readonly onEnd?: (job: Job, result: RunResult) => void;
  /** What toolgate refused the job, read once it ended: the launch's (given a failed job's log tail). */
  readonly denials?: (failure: string | undefined) => Denial[];
}

/** How a {@linkcode JobManager} keeps its jobs. */
export interface JobManagerOptions {
  /** The folder of the job logs (toolgate's own, 0700; the manager makes it with `prepareDir`). */
  readonly dir: string;
  /** Makes and checks the log folder before the first job; throws to refuse (a `StateDirError`). */
  readonly prepareDir?: (dir: string) => void;
  /** The trees toolgate ends when it is stopped: every job's is tracked there. */
  readonly registry?: ProcessRegistry;
  /** Per log file (default {@linkcode JOB_DEFAULTS}). */
  readonly maxLogBytes?: number;
  /** Jobs one owner runs at once (default {@linkcode JOB_DEFAULTS}). */
  readonly maxRunning?: number;
  /** Jobs all owners together run at once (default {@linkcode JOB_DEFAULTS}). */
  readonly maxRunningTotal?: number;
  /** Told when a job starts and when it ends (`serve` prints a line for its operator). */
  readonly onEvent?: (event: JobEvent) => void;
  /** Milliseconds, monotonic (tests hold it). */
  readonly now?: () => number;
  /** The wall clock of `started_at`. */
  readonly clock?: () => Date;
}

/** A background job as an operator's view sees it (the console): who owns it and what `poll` would answer. */
export interface JobView {
  /** The job's id, as its owner knows it (`job-1`). */
  readonly id: string;
  /** Its owner: an MCP session's id, `""` for the one owner of an agent run. */
  readonly scope: string;
  /** `poll`'s answer for the job: state, command, `killed_by`, the tail of its output. */
  readonly snapshot: (tailLines: number) => Record<string, unknown>;
}

/**
 * A job's start or end, as {@linkcode JobManagerOptions.onEvent} hears of it: plain facts for an operator's log
 * (the command is not yet redacted: the listener redacts it).
 *
 * @example
 * ```ts
 * import type { JobEvent } from "./jobs.ts";
 * const line = (event: JobEvent) => `${event.id} ${event.kind} (pid ${event.pid})`;
 * ```
 */
export interface JobEvent {
  /** Whether the job started or ended. */
  readonly kind: "started" | "ended";
  /** The job's id, as its owner knows it (`job-1`). */
  readonly id: string;
  /** Its owner: an MCP session's id, `""` for the one owner of an agent run. */
  readonly scope: string;
  /** The process id of the job's tree (its group leader). */
  readonly pid: number;
  /** What it runs: the shell line, or the argv as JSON. */
  readonly command: string;
  /** How it ended (`killed by session`, `exited with 0`, `exited on SIGTERM`), on `ended`. */
  readonly ending?: string;
}

/** The facts of `job` for its listener. */
function jobEvent(kind: JobEvent["kind"], job: Job): JobEvent {
  const facts = {
    kind,
    id: job.id,
    scope: job.scope,
    pid: job.pid,
    command: job.command.shell ?? JSON.stringify(job.command.argv),
  };
  if (kind === "started") return facts;
  const result = job.result;
  const ending = job.state === "killed"
    ? `killed${job.killedBy === undefined ? "" : ` by ${job.killedBy}`}`
    : result?.signal
    ? `exited on ${result.signal}`
    : `exited with ${result?.code ?? "?"}`;
  return { ...facts, ending };
}

/** The outcome of {@linkcode JobManager.start}. */
export type Started =
  | { readonly ok: true; readonly job: Job }
  | { readonly ok: false; readonly envelope?: FailureEnvelope; readonly result?: RunResult };

/**
 * The background jobs of one executor.
 *
 * @example
 * ```ts
 * import { JobManager } from "./jobs.ts";
 * const dir = await Deno.makeTempDir();
 * const jobs = new JobManager({ dir });
 * const started = await jobs.start({
 *   scope: "",
 *   command: { argv: ["sleep", "30"] },
 *   cwd: ".",
 *   request: {
 *     program: "/bin/sleep", args: ["30"], env: { PATH: "/usr/bin:/bin" }, cwd: dir,
 *     stdin: new Uint8Array(), timeoutMs: Infinity, graceMs: 500,
 *   },
 * });
 * if (started.ok) console.log(started.job.id, started.job.pid); // job-1 12345
 * await jobs.endAll();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class JobManager {
  readonly #options: JobManagerOptions;
  readonly #owners: JobOwners;
  readonly #now: () => number;
  #prepared = false;

  /** A table with no job yet; nothing is made on disk until the first job starts. */
  constructor(options: JobManagerOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
    const caps: Partial<JobCaps> = {
      perOwner: options.maxRunning ?? JOB_DEFAULTS.maxRunning,
      total: options.maxRunningTotal ?? JOB_DEFAULTS.maxRunningTotal,
    };
    this.#owners = new JobOwners(caps);
  }

  /** Jobs running now, every scope's. */
  get running(): number {
    return this.#owners.running();
  }

  /** Every job still remembered, running or ended, of every scope (for the operator; never for a model). */
  list(): Job[] {
    return this.#owners.all();
  }

  /** The job `id` of `scope`, or `undefined` (another scope's job is not there for it). */
  lookup(id: string, scope: string): Job | undefined {
    return this.#owners.lookup(id, scope);
  }

  /**
   * Starts a job and resolves once its process runs (not when it ends); a refusal (too many jobs, no log folder)
   * comes back as an envelope, a program that could not start as its run result.
   */
  async start(start: JobStart): Promise<Started> {
    const admitted = this.#owners.admit(start.scope);
    if (!admitted.ok) {
      const ended = this.#owners.hasEnded(start.scope);
      return {
        ok: false,
        envelope: failure("unavailable", admitted.reason, ended ? { retryable: false } : {}),
      };
    }
    const { id } = admitted;
    let log: JobLog;
    try {
      this.#prepare();
      // A name nobody can guess, in a folder only this user can write: nothing can be planted in its place.
      const path = join(this.#options.dir, `${Deno.pid}-${id}-${crypto.randomUUID().slice(0, 8)}.log`);
      log = new JobLog(path, this.#options.maxLogBytes ?? JOB_DEFAULTS.maxLogBytes, JOB_DEFAULTS.tailBytes);
    } catch (error) {
      this.#owners.cancel(start.scope);
      return {
        ok: false,
        envelope: failure(
          "unavailable",
          `Background jobs cannot keep a log here: ${(error as Error).message}.`,
          { retryable: false },
        ),
      };
    }
    const controller = new AbortController();
    const { promise: spawned, resolve: onSpawn } = Promise.withResolvers<number>();
    const result = runProcess({
      ...start.request,
      maxOutputBytes: Infinity,
      sink: (chunk) => log.write(chunk),
      onSpawn,
      signal: controller.signal,
      registry: this.#options.registry,
      detach: true,
    });
    const pid = await Promise.race([spawned, result.then(() => undefined)]);
    if (pid === undefined) {
      this.#owners.cancel(start.scope);
      log.close();
      await Deno.remove(log.path).catch(() => {});
      return { ok: false, result: await result };
    }
    const job = new Job({
      id,
      scope: start.scope,
      pid,
      command: start.command,
      cwd: start.cwd,
      log,
      controller,
      result,
      now: this.#now,
      clock: this.#options.clock ?? (() => new Date()),
      denials: start.denials,
    });
    this.#owners.add(job);
    this.#options.onEvent?.(jobEvent("started", job));
    void job.done.then(() => {
      start.onEnd?.(job, job.result!);
      this.#options.onEvent?.(jobEvent("ended", job));
      this.#owners.forget(job.scope, JOB_DEFAULTS.maxEnded);
    });
    // Its owner ended while the process was starting: it ends too, as the owner's other jobs did.
    if (this.#owners.hasEnded(start.scope)) job.kill("session");
    return { ok: true, job };
  }

  /**
   * Ends `scope` (an MCP session that closed, was deleted or expired): its running jobs' trees end
   * (`killed_by: "session"`), no job starts for it any more, and its table is forgotten. Resolves once they are gone.
   */
  async endScope(scope: string): Promise<void> {
    const running = this.#owners.end(scope);
    for (const job of running) job.kill("session");
    await Promise.all(running.map((job) => job.done));
    this.#owners.forget(scope, JOB_DEFAULTS.maxEnded);
  }

  /** Ends every running job and waits for them (toolgate's own end: `killed_by: "shutdown"` in their lines). */
  async endAll(): Promise<void> {
    const running = this.#owners.all().filter((job) => job.state === "running");
    for (const job of running) job.kill("shutdown");
    await Promise.all(running.map((job) => job.done));
  }

  /** Makes the log folder once, and sweeps logs older than {@linkcode JOB_DEFAULTS}' days. */
  #prepare(): void {
    if (this.#prepared) return;
    this.#options.prepareDir?.(this.#options.dir);
    const cutoff = Date.now() - JOB_DEFAULTS.logDays * 24 * 3600 * 1000;
    try {
      for (const entry of Deno.readDirSync(this.#options.dir)) {
        if (!entry.isFile || !/\.log(\.1)?$/.test(entry.name)) continue;
        const path = join(this.#options.dir, entry.name);
        const mtime = Deno.lstatSync(path).mtime?.getTime() ?? Date.now();
        if (mtime < cutoff) Deno.removeSync(path);
      }
    } catch {
      // Old logs that cannot be swept do no harm.
    }
    this.#prepared = true;
  }
}
