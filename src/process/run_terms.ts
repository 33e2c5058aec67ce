/**
 * The terms of a process's run: what it is asked ({@linkcode RunRequest}: the program, its stdin, its limits, how
 * its tree ends) and what it reports ({@linkcode RunResult}: how it ended, its output). Not here: the run itself
 * (runner.ts).
 *
 * @module
 */
import type { ProcessRegistry } from "./process_tree.ts";
import type { StartProblem } from "./start_problem.ts";
import type { StartsAhead } from "./starts_ahead.ts";
import type { Spawner } from "./spawn_thread.ts";
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
 * import type { RunResult } from "./run_terms.ts";
 * function describe(result: RunResult): string {
 *   if (!result.started) return result.spawnError?.message ?? "stopped before it started";
 *   return result.signal ? `killed by ${result.signal}` : `exit ${result.code}`;
 * }
 * ```
 */
export type RunResult = NotStarted | Ended;
