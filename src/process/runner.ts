/**
 * Runs one tool process from start to end: argv without a shell, the arguments on stdin, a cleared environment,
 * output capped per stream (or handed to a sink as it arrives), a wall-clock and an idle timeout that end the whole
 * tree (SIGTERM, a grace period, SIGKILL), and no descendant left alive when the call returns.
 *
 * @module
 */
import { groupLauncher, type ProcessRegistry, signalGroup, type TreeSignal } from "./process_tree.ts";
import { MAX_OUTPUT_BYTES } from "./executor_defaults.ts";

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
  /** How to start a leader of its own process group (see `groupLauncher`); looked up when absent. */
  readonly launcher?: readonly string[];
  /**
   * Start a sandbox in a session of its own too (a background job): a Ctrl-C on the terminal reaches toolgate's
   * process group, and it must not end a job that outlives the call.
   */
  readonly detach?: boolean;
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

/** Why a process could not start. */
export interface StartProblem {
  readonly reason: "not_found" | "not_executable" | "not_permitted";
  readonly message: string;
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

/** What a stream carried: the kept chunks (joined only when asked for), and every byte it carried. */
interface Drained {
  readonly chunks: readonly Uint8Array[];
  readonly kept: number;
  readonly total: number;
}

/** The kept chunks as one buffer: made once, the chunks let go. */
function joined(drained: Drained): () => Uint8Array {
  let bytes: Uint8Array | undefined;
  let chunks: readonly Uint8Array[] | undefined = drained.chunks;
  return () => {
    if (bytes === undefined) {
      bytes = new Uint8Array(drained.kept);
      let offset = 0;
      for (const chunk of chunks ?? []) {
        bytes.set(chunk, offset);
        offset += chunk.length;
      }
      chunks = undefined;
    }
    return bytes;
  };
}

/**
 * Reads a stream to its end, keeping at most `cap` bytes (none with a sink, which gets every chunk instead); calls
 * `onOverflow` once when it passes the cap, and `progress.onData` and `observe` for every chunk. The chunks are kept as they
 * came: one buffer of them is made only if someone reads it (an overflow's envelope never does), so a flood up to
 * the cap costs the bytes kept once, not twice.
 */
async function drain(
  stream: ReadableStream<Uint8Array>,
  cap: number,
  onOverflow: () => void,
  stop: Promise<void>,
  progress: { reads: number; onData: () => void },
  sink?: (chunk: Uint8Array) => void,
  observe?: (chunk: Uint8Array) => void,
): Promise<Drained> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let total = 0;
  let stopped = false;
  stop.then(() => {
    stopped = true;
    reader.cancel().catch(() => {});
  });
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done || stopped) break;
      progress.reads++;
      progress.onData();
      total += value.length;
      observe?.(value);
      if (sink) {
        sink(value);
        continue;
      }
      if (kept < cap) {
        const take = Math.min(value.length, cap - kept);
        // A part of a chunk is copied, so that the rest of it is not kept alive with it.
        chunks.push(take === value.length ? value : value.slice(0, take));
        kept += take;
      }
      if (total > cap) {
        onOverflow();
        // Reading on would only count bytes nobody keeps, and the garbage of a flood piles up faster than it
        // is collected: close the pipe instead, which also stops a writer that ignores SIGTERM.
        await reader.cancel();
        break;
      }
    }
  } catch {
    // A cancelled read ends the stream; what was kept stands.
  }
  return { chunks, kept, total };
}

async function feed(
  stdin: WritableStream<Uint8Array>,
  bytes: Uint8Array,
  replies?: (write: (bytes: Uint8Array) => Promise<boolean>) => void,
  exited?: Promise<unknown>,
): Promise<void> {
  const writer = stdin.getWriter();
  try {
    if (bytes.length > 0) await writer.write(bytes);
    if (replies === undefined || exited === undefined) return await writer.close();
  } catch {
    // A tool may exit without reading its stdin (BrokenPipe): that is its right, not a failure.
    return;
  }
  // Writes one after another, in the order asked; a write after the pipe broke says so instead of throwing.
  let open = true;
  let queue: Promise<boolean> = Promise.resolve(true);
  replies((more) =>
    queue = queue.then(async () => {
      if (!open) return false;
      try {
        await writer.write(more);
        return true;
      } catch {
        open = false;
        return false;
      }
    })
  );
  await exited;
  open = false;
  await queue;
  await writer.close().catch(() => {});
}

function spawnError(error: unknown, program: string): StartProblem {
  if (error instanceof Deno.errors.NotCapable) {
    return { reason: "not_permitted", message: `toolgate is not permitted to run ${program} (--allow-run)` };
  }
  // A missing cwd or script interpreter is NotFound too: only a missing program is reported as one.
  if (error instanceof Deno.errors.NotFound && !exists(program)) {
    return { reason: "not_found", message: `no such program: ${program}` };
  }
  const detail = error instanceof Error ? error.message : String(error);
  return { reason: "not_executable", message: `cannot execute ${program}: ${detail}` };
}

/**
 * Why `program` cannot start (missing, a directory, not executable), found before a wrapper (setsid(1), bwrap)
 * would have to report it as its own failure; `undefined` when it looks startable.
 */
export function startProblem(program: string): StartProblem | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(program);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { reason: "not_found", message: `no such program: ${program}` };
    }
    // Not ours to read (a scoped --allow-read): the start itself will tell.
    if (error instanceof Deno.errors.NotCapable) return undefined;
    return { reason: "not_executable", message: `cannot execute ${program}: ${(error as Error).message}` };
  }
  if (info.isDirectory) {
    return { reason: "not_executable", message: `cannot execute ${program}: a directory` };
  }
  if (info.mode !== null && (info.mode & 0o111) === 0) {
    return { reason: "not_executable", message: `cannot execute ${program}: not executable` };
  }
  return undefined;
}

/** setsid(1)'s words when it could not execute the program it was given. */
const SETSID_FAILED = "setsid: failed to execute ";

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    return !(error instanceof Deno.errors.NotFound);
  }
}

const EMPTY = new Uint8Array(0);
const decoder = new TextDecoder();
/** The least time to wait for the pipes to close once the tree is gone, whatever the grace period. */
const ESCAPE_WAIT_MIN_MS = 250;
/** The longest delay a timer takes; a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Runs one process to its end and reports how it ended; it never throws for what the tool does.
 *
 * @example
 * ```ts
 * import { runProcess } from "./runner.ts";
 * const result = await runProcess({
 *   program: "/bin/cat", args: [], env: { PATH: "/usr/bin:/bin" }, cwd: ".",
 *   stdin: new TextEncoder().encode("{}"), timeoutMs: 5000, graceMs: 2000, maxOutputBytes: 1 << 20,
 * });
 * new TextDecoder().decode(result.stdout); // "{}"
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
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(launcher[0] ?? request.program, {
      args: launcher.length > 0
        ? [...launcher.slice(1), request.program, ...request.args]
        : [...request.args],
      cwd: request.cwd,
      env: { ...request.env },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      // Never both: setsid(1) in a process that already leads a group forks, and its parent exits at once.
      detached: launcher.length === 0 && (!request.endsItsTree || request.detach === true),
    }).spawn();
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
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  let exited = false;

  const killChild = (signal: TreeSignal) => {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  };
  const endTree = async (signal: TreeSignal): Promise<void> => {
    if (request.endsItsTree) return killChild(signal);
    // Under setsid(1) the group exists only once setsid() has run in the child: until then, signal the child.
    if (!(await signalGroup(pgid, signal)) && !exited) killChild(signal);
  };
  const stopTree = (): Promise<void> => {
    // SIGTERM now, SIGKILL after the grace period unless everything is already gone.
    ending ??= endTree("SIGTERM").then(() => {
      // Sending SIGTERM may take a `kill` process: the tool may have ended (and been swept) meanwhile.
      if (!exited) killTimer = setTimeout(() => void endTree("SIGKILL"), request.graceMs);
    });
    return ending;
  };

  const status = child.status;
  const forget = request.registry?.track({ end: endTree, done: status });
  // A limit fires only when nothing else is ending the tree already: the envelope names the first reason.
  const timer = Number.isFinite(request.timeoutMs)
    ? setTimeout(() => {
      if (ending !== undefined) return;
      timedOut = true;
      void stopTree();
    }, Math.min(request.timeoutMs, MAX_TIMER_MS))
    : undefined;
  // One timer for the idle limit, moved on lazily: re-arming it for every chunk of a flood would cost more.
  const idleMs = request.idleTimeoutMs;
  let lastOutput = performance.now();
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  const watchIdle = (delay: number) => {
    idleTimer = setTimeout(() => {
      // Waiting for an answer (a person typing) is not idling: the clock starts again once the answer went out.
      if (request.waiting?.()) lastOutput = performance.now();
      const quiet = performance.now() - lastOutput;
      if (quiet < idleMs!) return watchIdle(idleMs! - quiet);
      if (ending !== undefined) return;
      idleTimedOut = true;
      void stopTree();
    }, Math.min(delay, MAX_TIMER_MS));
  };
  if (idleMs !== undefined && Number.isFinite(idleMs)) watchIdle(idleMs);
  const onAbort = () => {
    aborted = true;
    void stopTree();
  };
  request.signal?.addEventListener("abort", onAbort, { once: true });

  let releaseStreams!: () => void;
  const streamsReleased = new Promise<void>((resolve) => releaseStreams = resolve);
  const overflowOn = (stream: "stdout" | "stderr") => () => {
    if (overflow) return;
    overflow = stream;
    void stopTree();
  };
  const progress = { reads: 0, onData: () => lastOutput = performance.now() };
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
  const fed = feed(child.stdin, request.stdin, request.replies, status);

  const exit = await status;
  exited = true;
  clearTimeout(timer);
  clearTimeout(idleTimer);
  request.signal?.removeEventListener("abort", onAbort);
  // The tool is gone; whatever it left behind in its group goes too, so no descendant outlives the call.
  if (!request.endsItsTree) await endTree("SIGKILL");
  clearTimeout(killTimer);

  // A descendant that escaped the group (setsid) may still hold the pipes open: wait a moment, then stop reading.
  // Never while output is still arriving, nor when the wait ran late (a busy event loop may have reads queued
  // behind this timer): cutting then would lose what the tool printed.
  let escaped = false;
  const escapeWaitMs = Math.max(ESCAPE_WAIT_MIN_MS, Math.min(request.graceMs, 1000));
  let release: ReturnType<typeof setTimeout> | undefined;
  const watchPipes = () => {
    const armedAt = performance.now();
    const reads = progress.reads;
    release = setTimeout(() => {
      if (progress.reads !== reads || performance.now() - armedAt > 2 * escapeWaitMs) return watchPipes();
      escaped = true;
      releaseStreams();
    }, escapeWaitMs);
  };
  watchPipes();
  const [out, err] = await Promise.all([stdoutDone, stderrDone, Promise.race([fed, streamsReleased])]);
  clearTimeout(release);
  releaseStreams();
  forget?.();
  const stderrBytes = joined(err);

  if (
    launcher.length > 0 && !exit.success && out.total === 0 && err.kept < 65536 &&
    decoder.decode(stderrBytes()).startsWith(SETSID_FAILED)
  ) {
    // The exec after setsid() failed (a bad interpreter line): the same start failure a direct spawn reports.
    const detail = decoder.decode(stderrBytes()).slice(SETSID_FAILED.length).trim();
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
