/**
 * Runs one tool process from start to end: argv without a shell, the arguments on stdin, a cleared environment,
 * output capped per stream (or handed to a sink as it arrives), a wall-clock and an idle timeout that end the whole
 * tree (SIGTERM, a grace period, SIGKILL), and no descendant left alive when the call returns. Not here: the
 * limits' clocks (run_limits.ts), the pipes (pipes.ts).
 *
 * @module
 */
import { groupLauncher, type ProcessRegistry, signalGroup, type TreeSignal } from "./process_tree.ts";
import { MAX_OUTPUT_BYTES } from "./executor_defaults.ts";
import { after, type CancelTimer } from "../base/timer.ts";
import { drain, feed, joined } from "./pipes.ts";
import { RunLimits } from "./run_limits.ts";
import { spawnError, type StartProblem, startProblem } from "./start_problem.ts";
import type { StartsAhead } from "./starts_ahead.ts";
import { type ChildHandle, SPAWN_HERE, type Spawner } from "./spawn_thread.ts";
import type { TreeEnd } from "./tree_end.ts";

/** What to run. */
export interface RunRequest {
  /** Absolute path of the program. */
  readonly program: string;
  readonly args: readonly string[];
  /** The complete environment of the child (nothing else is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Written to the child's stdin, then closed (unless `replies` keeps it open). */
  readonly stdin: Uint8Array;
  /**
   * Keeps stdin open after `stdin`: told a writer of more bytes (a `toolgate/1` tool's answers), which resolves
   * false once the pipe is gone. Stdin closes when the process exits.
   */
  readonly replies?: (write: (bytes: Uint8Array) => Promise<boolean>) => void;
  /**
   * Stdin is written only once this says true: the process is started before it (a start held at its gate, or a
   * built-in tool, which reads its arguments first), and nothing of the tool runs until then. False: stdin closes
   * unwritten, and the start leaves having run nothing.
   */
  readonly goAhead?: Promise<boolean>;
  /** While this says true, the idle limit waits: a tool waiting for an answer to its question is not idle. */
  readonly waiting?: () => boolean;
  /** The wall-clock limit; `Infinity` for none. */
  readonly timeoutMs: number;
  /**
   * Ends the tree when nothing came on stdout or stderr for this long; every byte resets the clock. Absent: no
   * idle limit.
   */
  readonly idleTimeoutMs?: number;
  /** Time between SIGTERM and SIGKILL. */
  readonly graceMs: number;
  /** The most bytes kept per stream; past it the tree is ended. */
  readonly maxOutputBytes: number;
  /** Ends the tree when aborted (a cancelled request). */
  readonly signal?: AbortSignal;
  /** Trees to end if toolgate itself is told to stop. */
  readonly registry?: ProcessRegistry;
  /**
   * The program is a sandbox (bwrap with a pid namespace) whose end ends every descendant: signal it directly
   * (no unscoped `--allow-run` needed) and skip the sweep of the process group after it exits.
   */
  readonly endsItsTree?: boolean;
  /**
   * How the sandbox's whole tree ends (its launch says: a cgroup, a pid namespace): signals go through it, and the
   * run reports its end only once it says nothing of the tree is left. Absent: the process itself is signalled.
   */
  readonly tree?: TreeEnd;
  /** How to start a leader of its own process group (see `groupLauncher`); looked up when absent. */
  readonly launcher?: readonly string[];
  /**
   * Start a sandbox in a session of its own too (a background job): a Ctrl-C on the terminal reaches toolgate's
   * process group, and it must not end a job that outlives the call.
   */
  readonly detach?: boolean;
  /**
   * A sandbox's process may have been started ahead (starts_ahead.ts): the run takes it when it was started with
   * exactly this program, these arguments, environment and folder, and leaves its own start to be made ahead
   * next. Only for a start whose tool waits for its stdin (a built-in tool, or one held by its gate).
   */
  readonly ahead?: StartsAhead;
  /**
   * Where the process is started: a thread of its own (`SpawnThread`, for a long-lived command), so that this
   * thread does not wait in the start. Absent: started here.
   */
  readonly spawner?: Spawner;
  /** Told the process's pid as soon as it started (before any output). */
  readonly onSpawn?: (pid: number) => void;
  /**
   * Receives the output as it arrives instead of the result keeping it: nothing is kept, and no cap stops the
   * tool (the sink keeps what it wants: a job's capped log).
   */
  readonly sink?: (chunk: Uint8Array, stream: "stdout" | "stderr") => void;
  /** Shown each chunk of stderr as it arrives (kept or sunk as ever): a tool's own progress, for a person. */
  readonly onStderr?: (chunk: Uint8Array) => void;
}

/** What every run reports, started or not. */
interface RunFacts {
  readonly code: number | null;
  readonly signal: string | null;
  /** The kept bytes (at most `maxOutputBytes`), joined into one buffer at the first read. */
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  /** Every byte the stream carried, kept or not. */
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  /** The wall-clock limit ended it. */
  readonly timedOut: boolean;
  /** The idle limit ended it: nothing came on stdout or stderr for `idleTimeoutMs` (absent: it did not). */
  readonly idleTimedOut?: boolean;
  readonly aborted: boolean;
  /** The stream that passed `maxOutputBytes`, if one did. */
  readonly overflow?: "stdout" | "stderr";
  /** A descendant that left the process group kept the output open after the tool exited. */
  readonly escaped: boolean;
  readonly durationMs: number;
}

/** A process that never started: it could not (`spawnError`), or its signal was aborted before it. */
export interface NotStarted extends RunFacts {
  readonly started: false;
  readonly spawnError?: StartProblem;
  readonly code: null;
  readonly signal: null;
}

/** A process that started and ended (by itself, or ended by a limit, an abort or a cap). */
export interface Ended extends RunFacts {
  readonly started: true;
  readonly spawnError?: undefined;
}

/**
 * How a run ended: {@linkcode NotStarted} (no output, no exit) or {@linkcode Ended}.
 *
 * @example
 * ```ts
 * import type { RunResult } from "./runner.ts";
 * function describe(result: RunResult): string {
 *   if (!result.started) return result.spawnError?.message ?? "stopped before it started";
 *   return result.signal ? `killed by ${result.signal}` : `exit ${result.code}`;
 * }
 * ```
 */
export type RunResult = NotStarted | Ended;

/**
 * The words of setsid(1), or of the session starter (src/sandbox/session_start.c), when it could not execute the
 * program it was given.
 */
const START_FAILED = /^(?:setsid|session-start): failed to execute /;

const EMPTY = new Uint8Array(0);
const decoder = new TextDecoder();
/** The least time to wait for the pipes to close once the tree is gone, whatever the grace period. */
const ESCAPE_WAIT_MIN_MS = 250;

/**
 * Runs one process to its end and reports how it ended; it never throws for what the tool does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runProcess } from "./runner.ts";
 * const result = await runProcess({
 *   program: "/bin/cat", args: [], env: { PATH: "/usr/bin:/bin" }, cwd: ".",
 *   stdin: new TextEncoder().encode("{}"), timeoutMs: 5000, graceMs: 2000, maxOutputBytes: 1 << 20,
 * });
 * assert.equal(new TextDecoder().decode(result.stdout), "{}");
 * ```
 */
export async function runProcess(request: RunRequest): Promise<RunResult> {
  const started = performance.now();
  const failed = (spawn: StartProblem | undefined, aborted = false): NotStarted => ({
    started: false,
    spawnError: spawn,
    code: null,
    signal: null,
    stdout: EMPTY,
    stderr: EMPTY,
    stdoutBytes: 0,
    stderrBytes: 0,
    timedOut: false,
    idleTimedOut: false,
    aborted,
    escaped: false,
    durationMs: performance.now() - started,
  });
  // spawn() ignores an already-aborted signal, so look first.
  if (request.signal?.aborted) return failed(undefined, true);

  // A plain tool gets its own session and process group, so that one signal reaches every descendant: through
  // setsid(1) when it may, else `detached` (which forks the whole runtime, a few ms). A sandbox needs neither:
  // ending bwrap ends its pid namespace.
  const launcher = request.endsItsTree ? [] : request.launcher ?? groupLauncher();
  if (launcher.length > 0) {
    const problem = startProblem(request.program);
    if (problem) return failed(problem);
  }
  const ahead = request.endsItsTree && request.detach !== true ? request.ahead : undefined;
  // Awaited only with a store: an abort right after the call must find the start's listener in place.
  const early = ahead === undefined ? undefined : await ahead.take(request);
  // The arguments go with the start (one step across the spawn thread), unless the tool may be answered later
  // (its stdin stays open), was started ahead (it waits for them on its open stdin) or waits for its go.
  const inputWithStart = early === undefined && request.replies === undefined &&
    request.goAhead === undefined;
  let child: ChildHandle;
  try {
    const start = {
      program: launcher[0] ?? request.program,
      args: launcher.length > 0
        ? [...launcher.slice(1), request.program, ...request.args]
        : [...request.args],
      cwd: request.cwd,
      env: request.env,
      // Never both: setsid(1) in a process that already leads a group forks, and its parent exits at once.
      detached: launcher.length === 0 && (!request.endsItsTree || request.detach === true),
      input: inputWithStart ? request.stdin : undefined,
    };
    child = early ?? await (request.spawner ?? SPAWN_HERE).spawn(start);
  } catch (error) {
    return failed(spawnError(error, request.program));
  }
  request.onSpawn?.(child.pid);

  const pgid = child.pid;
  let timedOut = false;
  let idleTimedOut = false;
  let aborted = false;
  let overflow: "stdout" | "stderr" | undefined;
  let ending: Promise<void> | undefined;
  let cancelKill: CancelTimer | undefined;
  let exited = false;

  const killChild = (signal: TreeSignal) => {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  };
  const endTree = async (signal: TreeSignal): Promise<void> => {
    if (request.tree !== undefined) {
      // Once the first process is gone (and reaped), its pid may be another's: the tree is settled below. An
      // unconfined tool (the first process) hears the signal at once, since the tree's end runs a shell, late on a
      // loaded machine; a sandbox's bwrap never does before its tree's end has stopped it (its pid namespace).
      if (!exited) {
        if (!request.endsItsTree) killChild(signal);
        await request.tree.signal(pgid, signal);
      }
      return;
    }
    if (request.endsItsTree) return killChild(signal);
    // Under setsid(1) the group exists only once setsid() has run in the child: until then, signal the child.
    if (!(await signalGroup(pgid, signal)) && !exited) killChild(signal);
  };
  const stopTree = (): Promise<void> => {
    // SIGTERM now, SIGKILL after the grace period unless everything is already gone.
    ending ??= endTree("SIGTERM").then(() => {
      // Sending SIGTERM may take a `kill` process: the tool may have ended (and been swept) meanwhile.
      if (!exited) cancelKill = after(request.graceMs, () => void endTree("SIGKILL"));
    });
    return ending;
  };

  const status = child.status;
  // Done once nothing of the tree is left, not when its first process exited.
  const { promise: settled, resolve: settle } = Promise.withResolvers<void>();
  const forget = request.registry?.track({ end: endTree, done: settled });
  // A limit fires only when nothing else is ending the tree already: the envelope names the first reason.
  const limits = new RunLimits({
    timeoutMs: request.timeoutMs,
    idleTimeoutMs: request.idleTimeoutMs,
    waiting: request.waiting,
    onTimeout: () => {
      if (ending !== undefined) return;
      timedOut = true;
      void stopTree();
    },
    onIdle: () => {
      if (ending !== undefined) return;
      idleTimedOut = true;
      void stopTree();
    },
  });
  // The limits count from the tool's start: for a start waiting for its go, from the go.
  if (request.goAhead === undefined) limits.arm();
  else void request.goAhead.then((go) => go && limits.arm(), () => {});
  const onAbort = () => {
    aborted = true;
    void stopTree();
  };
  request.signal?.addEventListener("abort", onAbort, { once: true });
  // Aborted while a store handed over its process.
  if (request.signal?.aborted) onAbort();

  let releaseStreams!: () => void;
  const streamsReleased = new Promise<void>((resolve) => releaseStreams = resolve);
  const overflowOn = (stream: "stdout" | "stderr") => () => {
    if (overflow) return;
    overflow = stream;
    void stopTree();
  };
  const progress = { reads: 0, onData: () => limits.output() };
  const sink = request.sink;
  // No caller's cap goes past what toolgate can hold (the options refuse one; this holds for any caller).
  const cap = sink ? Infinity : Math.min(request.maxOutputBytes, MAX_OUTPUT_BYTES);
  const stdoutDone = drain(
    child.stdout,
    cap,
    overflowOn("stdout"),
    streamsReleased,
    progress,
    sink && ((chunk) => sink(chunk, "stdout")),
  );
  const stderrDone = drain(
    child.stderr,
    cap,
    overflowOn("stderr"),
    streamsReleased,
    progress,
    sink && ((chunk) => sink(chunk, "stderr")),
    request.onStderr,
  );
  const fed = inputWithStart
    ? Promise.resolve()
    : feed(child.stdin, request.stdin, { replies: request.replies, exited: status, after: request.goAhead });

  const exit = await status;
  exited = true;
  limits.stop();
  request.signal?.removeEventListener("abort", onAbort);
  // The tool is gone; whatever it left behind in its group (or its cgroup) goes too, so no descendant outlives
  // the call.
  // A SIGTERM on its way through the tree's end (a shell that reads the cgroup) finishes first: once this call
  // is done its cgroup slot goes to the next call, whose processes that late reading must never see.
  if (request.tree !== undefined) {
    await ending;
    await request.tree.settle(pgid);
  } else if (!request.endsItsTree) await endTree("SIGKILL");
  settle();
  cancelKill?.();

  // A descendant that escaped the group (setsid) may still hold the pipes open: wait a moment, then stop reading.
  // Never while output is still arriving, nor when the wait ran late (a busy event loop may have reads queued
  // behind this timer): cutting then would lose what the tool printed.
  let escaped = false;
  const escapeWaitMs = Math.max(ESCAPE_WAIT_MIN_MS, Math.min(request.graceMs, 1000));
  let cancelRelease: CancelTimer | undefined;
  const watchPipes = () => {
    const armedAt = performance.now();
    const reads = progress.reads;
    cancelRelease = after(escapeWaitMs, () => {
      if (progress.reads !== reads || performance.now() - armedAt > 2 * escapeWaitMs) return watchPipes();
      escaped = true;
      releaseStreams();
    });
  };
  watchPipes();
  const [out, err] = await Promise.all([stdoutDone, stderrDone, Promise.race([fed, streamsReleased])]);
  cancelRelease?.();
  releaseStreams();
  forget?.();
  const stderrBytes = joined(err);

  if (
    launcher.length > 0 && !exit.success && out.total === 0 && err.kept < 65536 &&
    START_FAILED.test(decoder.decode(stderrBytes()))
  ) {
    // The exec after setsid() failed (a bad interpreter line): the same start failure a direct spawn reports.
    const detail = decoder.decode(stderrBytes()).replace(START_FAILED, "").trim();
    return failed({ reason: "not_executable", message: `cannot execute ${detail}` });
  }
  const stdoutBytes = joined(out);
  return {
    started: true,
    code: exit.signal ? null : exit.code,
    signal: exit.signal ?? null,
    get stdout() {
      return stdoutBytes();
    },
    get stderr() {
      return stderrBytes();
    },
    stdoutBytes: out.total,
    stderrBytes: err.total,
    timedOut,
    idleTimedOut,
    aborted,
    overflow,
    escaped,
    durationMs: performance.now() - started,
  };
}
