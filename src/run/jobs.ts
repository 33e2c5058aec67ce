/**
 * Background jobs: the programs `exec` starts with `background: true`, which outlive the call that started them
 * but not toolgate. A confined `exec` runs in a pid namespace that dies with it, so a job cannot be its child:
 * toolgate owns each job, started as a process of its own through the executor's launch path (bwrap, the call's
 * cgroups and limits, exec's profile), in a session of its own (a Ctrl-C on the terminal does not reach it), and
 * tracked by the process registry, so that toolgate's exit ends its tree. Its stdout and stderr go, in the order
 * they arrive, to a log capped per file and rotated once (at most twice the cap on disk), in the workspace's state
 * folder, never in the workspace a tool may write. The `job` tool reads this table in toolgate's own process:
 * `poll`, `wait`, `kill`. Each job has an owner (an MCP session, or the agent loop's run; `job_owners.ts`): only
 * its owner sees it, and it ends when its owner does.
 *
 * @module
 */
import { isAbsolute, isWithin, join, resolve } from "../base/paths.ts";
import {
  type Envelope,
  failure,
  type FailureEnvelope,
  success,
  truncateForModel,
  withTool,
} from "../contract.ts";
import { runProcess, type RunRequest, type RunResult } from "../process/runner.ts";
import type { ProcessRegistry } from "../process/process_tree.ts";
import { findProgram } from "../base/find_program.ts";
import { stoppedByUser, userStopped } from "../process/stop.ts";
import { invalidArgs, ToolFailure } from "../contract/tool_output.ts";
import {
  type ExecCommand,
  FALLBACK_SHELL,
  finishedCommand,
  NO_PIPEFAIL_WARNING,
  PIPEFAIL_SHELLS,
  readCommand,
  readEnv,
  shellArgv,
} from "../contract/exec_args.ts";
import { parseRelative } from "../contract/relative_path.ts";
import { Args, type ArgValues, readArgs } from "../contract/args.ts";
import { JOB_ARGS } from "../contract/job_args.ts";
import { JOB_CAPS, type JobCaps, JobOwners } from "./job_owners.ts";

/**
 * The job table's limits.
 *
 * @example
 * ```ts
 * import { JOB_DEFAULTS } from "./jobs.ts";
 * JOB_DEFAULTS.maxLogBytes; // 1048576: per log file; one rotated file is kept beside it
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
 * import type { JobState } from "./jobs.ts";
 * const state: JobState = "running";
 * ```
 */
export type JobState = "running" | "exited" | "killed";

/**
 * Who ended a killed job: a person (`user`: they asked for the kill, or approved it), the model (a kill that ran
 * on standing approval: `--yes`, `--allow-tools`, an earlier "always"), its own limit (`timeout`), or the end of
 * the MCP session that owned it (`session`: closed, deleted, expired or disconnected).
 *
 * @example
 * ```ts
 * import type { KilledBy } from "./jobs.ts";
 * const by: KilledBy = "user";
 * ```
 */
export type KilledBy = "user" | "model" | "timeout" | "session";

/** The bytes of a log file, rotated once past its cap, and its last bytes kept in memory. */
class JobLog {
  readonly path: string;
  readonly #max: number;
  readonly #tailMax: number;
  #file: Deno.FsFile | undefined;
  #size = 0;
  #total = 0;
  #tail: Uint8Array[] = [];
  #tailSize = 0;
  #tailCut = false;
  #failed = false;

  constructor(path: string, maxBytes: number, tailBytes: number) {
    this.path = path;
    this.#max = Math.max(1, maxBytes);
    this.#tailMax = tailBytes;
    this.#file = JobLog.#create(path);
  }

  /** A new file of this user's, never opened through anything already there (a name nobody could guess). */
  static #create(path: string): Deno.FsFile {
    return Deno.openSync(path, { write: true, createNew: true, mode: 0o600 });
  }

  /** Every byte the job printed, kept or not. */
  get bytes(): number {
    return this.#total;
  }

  /** Appends a chunk: to the file (rotating it at the cap) and to the tail in memory. */
  write(chunk: Uint8Array): void {
    this.#total += chunk.length;
    this.#remember(chunk);
    let rest = chunk;
    while (rest.length > 0 && this.#file !== undefined && !this.#failed) {
      if (this.#size >= this.#max) this.#rotate();
      if (this.#file === undefined) break;
      const piece = rest.subarray(0, this.#max - this.#size);
      try {
        let written = 0;
        while (written < piece.length) written += this.#file.writeSync(piece.subarray(written));
      } catch {
        // A full disk: the job goes on, its tail in memory still answers polls.
        this.#failed = true;
        break;
      }
      this.#size += piece.length;
      rest = rest.subarray(piece.length);
    }
  }

  #rotate(): void {
    this.#file?.close();
    this.#file = undefined;
    try {
      // The older file is replaced whole: a rename never follows a link at the destination.
      Deno.renameSync(this.path, `${this.path}.1`);
      this.#file = JobLog.#create(this.path);
      this.#size = 0;
    } catch {
      this.#failed = true;
    }
  }

  #remember(chunk: Uint8Array): void {
    this.#tail.push(chunk);
    this.#tailSize += chunk.length;
    while (this.#tail.length > 1 && this.#tailSize - this.#tail[0].length >= this.#tailMax) {
      this.#tailSize -= this.#tail.shift()!.length;
      this.#tailCut = true;
    }
  }

  /** The last `lines` lines the job printed (from memory), cut to `maxChars` head-and-tail. */
  tail(lines: number, maxChars: number): string {
    if (lines <= 0 || this.#tailSize === 0) return "";
    const bytes = new Uint8Array(this.#tailSize);
    let offset = 0;
    for (const chunk of this.#tail) {
      bytes.set(chunk, offset);
      offset += chunk.length;
    }
    let text = new TextDecoder().decode(bytes);
    // Memory kept a window of the output: its first line may have lost its start.
    if (this.#tailCut) text = text.slice(text.indexOf("\n") + 1);
    const all = text.split("\n");
    if (all.at(-1) === "") all.pop();
    return truncateForModel(all.slice(-lines).join("\n"), maxChars);
  }

  close(): void {
    this.#file?.close();
    this.#file = undefined;
  }
}

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
}

/**
 * One background job: its identity, how it is doing, and its log.
 *
 * @example
 * ```ts
 * import type { Job } from "./jobs.ts";
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

  /** Ends every running job and waits for them (toolgate's own end). */
  async endAll(): Promise<void> {
    const running = this.#owners.all().filter((job) => job.state === "running");
    for (const job of running) job.kill();
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

/** A background `exec` call's arguments, checked and resolved against the workspace. */
export interface JobArgs {
  readonly command: ExecCommand;
  /** The working directory as the model named it, normalized. */
  readonly cwd: string;
  /** Its real path, inside the workspace. */
  readonly cwdPath: string;
  /** The program and arguments to run there (a command line already wrapped in its shell). */
  readonly argv: readonly string[];
  /** Variables added to PATH and HOME. */
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: string;
  /** The wall-clock limit the model asked for; `Infinity` (a job's default) for none. */
  readonly timeoutMs: number;
  /** The idle limit the model asked for, if any. */
  readonly idleTimeoutMs?: number;
  /** For the answer: a command line that runs without pipefail. */
  readonly warnings: readonly string[];
}

/** The places a job's arguments are checked against. */
export interface JobPlaces {
  /** The workspace, as a real path. */
  readonly workspace: string;
  /** Paths no tool may see (toolgate's state): not a working directory either. */
  readonly hidden: readonly string[];
  /** The PATH the job runs with, to find its program before it starts. */
  readonly path: string;
}

/** Does this file exist here (toolgate may read the system folders)? */
function present(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** Does this host's sh know `pipefail`? Asked once per process: the answer does not change while it runs. */
let shPipefail: boolean | undefined;
function shHasPipefail(): boolean {
  if (shPipefail !== undefined) return shPipefail;
  try {
    const probe = new Deno.Command(FALLBACK_SHELL, {
      args: ["-o", "pipefail", "-c", ":"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      clearEnv: true,
    });
    return shPipefail = probe.outputSync().success;
  } catch {
    return shPipefail = false;
  }
}

/**
 * Checks a background `exec` call's arguments as the exec tool checks its own (the same code reads argv, shell
 * and env): exactly one of argv and shell, a cwd inside the workspace, a program that exists. Throws a
 * `ToolFailure` (see `tools/lib/envelope.ts`) for the model.
 *
 * @example
 * ```ts
 * import { readJobArgs } from "./jobs.ts";
 * const workspace = await Deno.realPath(await Deno.makeTempDir());
 * const args = readJobArgs({ shell: "make 2>&1 | tail -n 20" }, { workspace, hidden: [], path: "/usr/bin:/bin" });
 * args.argv; // ["/bin/bash", "-o", "pipefail", "-c", "make 2>&1 | tail -n 20"] where bash is installed
 * ```
 */
export function readJobArgs(args: Readonly<Record<string, unknown>>, places: JobPlaces): JobArgs {
  const command = readCommand(args.argv, args.shell);
  const relative = parseRelative(typeof args.cwd === "string" && args.cwd !== "" ? args.cwd : ".", "cwd");
  let cwdPath: string;
  try {
    cwdPath = Deno.realPathSync(join(places.workspace, relative.rel));
  } catch {
    throw new ToolFailure("not_found", `no such directory: ${JSON.stringify(relative.rel)}`, {
      field: "cwd",
    });
  }
  if (!isWithin(cwdPath, places.workspace) || places.hidden.some((path) => isWithin(cwdPath, path))) {
    throw invalidArgs(
      "cwd",
      `${JSON.stringify(relative.rel)} leads outside the workspace`,
      "a directory inside the workspace",
    );
  }
  if (!Deno.statSync(cwdPath).isDirectory) {
    throw invalidArgs(
      "cwd",
      `not a directory: ${JSON.stringify(relative.rel)}`,
      "a directory inside the workspace",
    );
  }
  const warnings: string[] = [];
  let argv: string[];
  if (command.argv !== undefined) {
    const program = command.argv[0];
    const found = program.includes("/")
      ? present(isAbsolute(program) ? program : resolve(cwdPath, program))
      : findProgram(program, places.path) !== undefined;
    if (!found) {
      throw new ToolFailure("not_found", `program not found: ${JSON.stringify(program)}`, { field: "argv" });
    }
    argv = [...command.argv];
  } else {
    const bash = PIPEFAIL_SHELLS.find(present);
    const pipefail = bash !== undefined || shHasPipefail();
    if (!pipefail) warnings.push(NO_PIPEFAIL_WARNING);
    argv = shellArgv(bash ?? FALLBACK_SHELL, command.shell, pipefail);
  }
  const timeout = args.timeout_ms;
  const idle = args.idle_timeout_ms;
  return {
    command,
    cwd: relative.rel,
    cwdPath,
    argv,
    env: readEnv(args.env),
    stdin: typeof args.stdin === "string" ? args.stdin : "",
    timeoutMs: typeof timeout === "number" && timeout > 0 ? timeout : Infinity,
    idleTimeoutMs: typeof idle === "number" && idle > 0 ? idle : undefined,
    warnings,
  };
}

/**
 * The argv prefix that enters a job's working directory and becomes its program (`sh -c SCRIPT sh CWD ARGV...`):
 * inside the sandbox the call starts in the workspace, and the job may have asked for a folder below it.
 *
 * @example
 * ```ts
 * import { jobLauncher } from "./jobs.ts";
 * jobLauncher("/bin/sh", "/srv/ws/sub", ["make"]).slice(-2); // ["/srv/ws/sub", "make"]
 * ```
 */
export function jobLauncher(sh: string, cwd: string, argv: readonly string[]): string[] {
  return [sh, "-c", 'cd -- "$1" || exit 126; shift; exec "$@"', "sh", cwd, ...argv];
}

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
 * import { answerJobCall, JobManager } from "./jobs.ts";
 * const jobs = new JobManager({ dir: "/tmp" });
 * const envelope = await answerJobCall(jobs, { action: "poll", job_id: "job-7" }, {
 *   scope: "", byPerson: false, graceMs: 2000,
 * });
 * envelope.ok; // false: not_found, there is no job-7
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
  const answer = (warnings: string[] = []) =>
    success(job.snapshot(tailLines), { tool, warnings: [...job.warnings(), ...warnings] });
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
