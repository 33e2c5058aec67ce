/**
 * Runs one tool process from start to end: argv without a shell, the arguments on stdin, a cleared environment,
 * output capped per stream (or handed to a sink as it arrives), a wall-clock and an idle timeout that end the whole
 * tree (SIGTERM, a grace period, SIGKILL), and no descendant left alive when the call returns. Not here: the
 * limits' clocks (run_limits.ts), the pipes (pipes.ts), what a run is asked and reports (run_terms.ts).
 *
 * @module
 */
import { groupLauncher, signalGroup, type TreeSignal } from "./process_tree.ts";
import { MAX_OUTPUT_BYTES } from "./executor_defaults.ts";
import { after, type CancelTimer } from "../base/timer.ts";
import { drain, feed, joined } from "./pipes.ts";
import { RunLimits } from "./run_limits.ts";
import { spawnError, type StartProblem, startProblem } from "./start_problem.ts";
import { type ChildHandle, SPAWN_HERE } from "./spawn_thread.ts";
import type { NotStarted, RunRequest, RunResult } from "./run_terms.ts";

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
  // A sandbox's bwrap exits as soon as the tool has, while its namespace's init is still being ended (killed as
  // its parent dies, then every process of the namespace with it): the session starter in front of it exits only
  // after that, and where it is not, the cgroup says when nothing is left.
  if (request.tree !== undefined) {
    await ending;
    await request.tree.settle(pgid, exit);
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
