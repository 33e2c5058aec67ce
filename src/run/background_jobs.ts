/**
 * The executor's background jobs: the job table (made at the first job, its logs in toolgate's own state folder,
 * per workspace), a background `exec` launched the way any call is (the exec tool's profile: bwrap, cgroups,
 * limits) and handed to the table, a `job` call answered from it in this process, and the audit lines of a job's
 * start, its end and each answer. Not here: the table and the job tool's arguments and answers (src/run/jobs.ts).
 *
 * @module
 */
import { dirname, join } from "../base/paths.ts";
import { findProgram } from "../base/find_program.ts";
import { type Envelope, failure, type FailureEnvelope, success } from "../contract.ts";
import { ToolFailure } from "../contract/tool_output.ts";
import type { PreparedCall } from "../policy/prepared_call.ts";
import { EXECUTOR_DEFAULTS } from "../process/executor_defaults.ts";
import { envelopeFromRun } from "../process/run_envelope.ts";
import type { RunResult } from "../process/run_terms.ts";
import { stoppedByUser, userStopped } from "../process/stop.ts";
import { type Launch, PROXY_ENV } from "../sandbox/tool_launch.ts";
import { ensurePrivateDir } from "../state/private_dir.ts";
import { stateRoot, workspaceStateDir } from "../state/state.ts";
import { jobAnswerRecord, jobEndRecord, jobStartRecord } from "./audit.ts";
import type { CallContext } from "./call_context.ts";
import type { CallOptions } from "./call_options.ts";
import { CHILD_SPANS } from "./tracing.ts";
import type { Job } from "./job.ts";
import { jobLauncher, readJobArgs } from "./job_args.ts";
import { answerJobCall } from "./job_tool.ts";
import { JobManager, type JobView } from "./jobs.ts";

const encoder = new TextEncoder();

/**
 * The background jobs of one executor.
 *
 * @example
 * ```ts ignore
 * // Ignored: a context is the executor's own (src/run/call_context.ts).
 * const jobs = new BackgroundJobs(context);
 * const envelope = await jobs.start(call, options); // { ok: true, result: { job_id, pid, log_file, ... } }
 * ```
 */
export class BackgroundJobs {
  readonly #context: CallContext;
  #jobs?: JobManager;

  /** No table yet: it is made at the first job. */
  constructor(context: CallContext) {
    this.#context = context;
  }

  /** How many background jobs run now. */
  get running(): number {
    return this.#jobs?.running ?? 0;
  }

  /** Every background job still remembered, of every scope: for the operator (the console), never a model. */
  list(): JobView[] {
    return (this.#jobs?.list() ?? []).map((job) => ({
      id: job.id,
      scope: job.scope,
      snapshot: (tailLines: number) => job.snapshot(tailLines),
    }));
  }

  /** The job `id` of `scope`, running or ended, while the table remembers it; `undefined` for another scope's. */
  lookup(id: string, scope: string): Job | undefined {
    return this.#jobs?.lookup(id, scope);
  }

  /** Stops the job `id` of `scope` as its user (`killed_by: "user"`); false when there is no such running job. */
  stop(id: string, scope: string): boolean {
    const job = this.#jobs?.lookup(id, scope);
    if (job === undefined || job.state !== "running") return false;
    job.kill("user");
    return true;
  }

  /** Ends a scope's background jobs; no job starts for that scope any more. Resolves once they are gone. */
  async endScope(scope: string): Promise<void> {
    // Made if need be (nothing on disk): a start under way for this scope then finds it ended.
    await this.#table()?.endScope(scope);
  }

  /** Ends every background job's tree and waits for them. */
  async endAll(): Promise<void> {
    await this.#jobs?.endAll();
  }

  /** The job table of this executor, made at the first job (its log folder is toolgate's own, per workspace). */
  #table(): JobManager | undefined {
    if (this.#context.options.jobs === false) return undefined;
    if (this.#jobs !== undefined) return this.#jobs;
    let root: string;
    try {
      root = stateRoot(this.#context.options.env);
    } catch {
      return undefined;
    }
    return this.#jobs = new JobManager({
      dir: join(workspaceStateDir(root, this.#context.workspace), "jobs"),
      prepareDir: (dir) => ensurePrivateDir(dir, dirname(root)),
      registry: this.#context.options.registry,
      maxLogBytes: this.#context.options.jobLogBytes,
      maxRunning: this.#context.options.jobCaps?.perOwner,
      maxRunningTotal: this.#context.options.jobCaps?.total,
      onEvent: this.#context.options.onJob,
    });
  }

  /** Refuses a background `exec` or a `job` call where this executor keeps no jobs, saying why. */
  #noJobs(call: PreparedCall): Promise<FailureEnvelope> {
    const why = this.#context.options.jobs === false
      ? "this toolgate runs one call and exits (`toolgate call`), so a background job would end with it; run " +
        "the command in the foreground (timeout_ms up to an hour), or from the agent loop or `toolgate serve`, " +
        "which keep their jobs while they run"
      : "toolgate has no state folder for job logs here (neither XDG_STATE_HOME nor HOME is set)";
    return this.#context.refuse(
      call,
      failure("unavailable", `Background jobs are not available: ${why}.`, {
        tool: call.tool.name,
        retryable: false,
      }),
    );
  }

  /** A `job` call, answered from the job table in this process (no program runs), and audited. */
  async answer(call: PreparedCall, options: CallOptions): Promise<Envelope> {
    const jobs = this.#table();
    if (jobs === undefined) return await this.#noJobs(call);
    const started = this.#context.trail.now();
    const clock = performance.now();
    const envelope = await answerJobCall(jobs, call.args, {
      scope: options.jobScope ?? "",
      signal: options.signal,
      byPerson: options.approvedBy === "person" || options.approvedBy === "own-command" ||
        options.approvedBy === "console",
      graceMs: this.#context.options.graceMs ?? EXECUTOR_DEFAULTS.graceMs,
    });
    await this.#context.trail.write(
      jobAnswerRecord(await this.#context.trail.facts(started, call.tool.name, call.argsText), {
        ms: performance.now() - clock,
        envelope,
        job: typeof call.args.job_id === "string" ? call.args.job_id : undefined,
      }),
    );
    return envelope;
  }

  /**
   * A background `exec`: its arguments checked as exec checks them, then its program launched the way any call is
   * (the exec tool's profile: bwrap, cgroups, limits) and handed to the job table, which answers as soon as it
   * runs. The start and the end are audited.
   */
  async start(call: PreparedCall, options: CallOptions): Promise<Envelope> {
    const { tool } = call;
    const jobs = this.#table();
    if (jobs === undefined) return await this.#noJobs(call);
    if (options.signal?.aborted) {
      // Stopped before its turn came: no job starts behind a stop.
      const message = "The call was stopped before the job started; nothing ran.";
      return await this.#context.refuse(
        call,
        stoppedByUser(options.signal)
          ? userStopped(tool.name, {}, message)
          : failure("execution_error", message, { tool: tool.name, metadata: { cancelled: true } }),
      );
    }
    const env = this.#context.secrets.toolEnv(tool, this.#context.controlPlane, options.secrets);
    delete env.TOOLGATE_PROTECTED;
    let args;
    try {
      args = readJobArgs(call.args, {
        workspace: this.#context.workspace,
        hidden: this.#context.controlPlane.hidden,
        path: env.PATH,
      });
    } catch (error) {
      if (!(error instanceof ToolFailure)) throw error;
      return await this.#context.refuse(call, { ...error.toEnvelope(), tool: tool.name });
    }
    const sh = findProgram("sh", "/bin:/usr/bin") ?? "/bin/sh";
    const [program, ...programArgs] = jobLauncher(sh, args.cwdPath, args.argv);
    const started = this.#context.trail.now();
    // A job carries the tool's bound credentials as a foreground call does: placeholders, the CA bundle.
    const start = () =>
      this.#context.launcher.launch(
        tool,
        { program, args: programArgs, files: [] },
        this.#context.secrets.credentials(tool, options.secrets),
      );
    const launch = await (options.trace?.child(CHILD_SPANS.confinement, start) ?? start());
    let envelope: Envelope;
    let job: Job | undefined;
    let result: RunResult | undefined;
    if (!launch.ok) {
      envelope = launch.envelope;
    } else {
      const release = () => this.#context.launcher.release(launch);
      const outcome = await jobs.start({
        scope: options.jobScope ?? "",
        command: args.command,
        cwd: args.cwd,
        request: {
          program: launch.program,
          args: launch.args,
          env: { ...env, ...args.env, ...(launch.unregister ? { ...PROXY_ENV, ...launch.env } : {}) },
          cwd: args.cwdPath,
          stdin: encoder.encode(args.stdin),
          timeoutMs: args.timeoutMs,
          idleTimeoutMs: args.idleTimeoutMs,
          graceMs: this.#context.options.graceMs ?? EXECUTOR_DEFAULTS.graceMs,
          endsItsTree: launch.confined,
          tree: launch.tree,
          launcher: this.#context.launcher.groupLauncher(launch),
        },
        denials: launch.denials,
        onEnd: (ended, run) => {
          release();
          void this.#auditEnd(call, ended, run, launch);
        },
      });
      if (outcome.ok) {
        job = outcome.job;
        envelope = success(
          { job_id: job.id, pid: job.pid, log_file: job.logFile, cwd: args.cwd, background: true },
          { tool: tool.name, warnings: [...launch.envelopeWarnings, ...args.warnings] },
        );
      } else {
        release();
        result = outcome.result;
        envelope = outcome.envelope !== undefined
          ? { ...outcome.envelope, tool: tool.name }
          : envelopeFromRun(outcome.result!, {
            tool: tool.name,
            program: args.argv[0],
            timeoutMs: args.timeoutMs,
            maxOutputBytes: 0,
          });
      }
    }
    await this.#context.trail.write({
      ...jobStartRecord(await this.#context.trail.facts(started, tool.name, call.argsText), {
        argv: [tool.program, ...tool.args],
        result,
        envKeys: Object.keys(env),
        envelope,
        job,
        launch: launch.ok ? launch : undefined,
        profile: tool.profile.name,
      }),
      approved_by: options.approvedBy,
    });
    return envelope;
  }

  /** The audit line of a job's end: how it ended and how much it printed. */
  async #auditEnd(call: PreparedCall, job: Job, run: RunResult, launch: Launch): Promise<void> {
    await this.#context.trail.write(
      jobEndRecord(
        await this.#context.trail.facts(this.#context.trail.now(), call.tool.name, call.argsText),
        {
          argv: [call.tool.program, ...call.tool.args],
          run,
          job,
          launch,
        },
      ),
    );
  }
}
