/**
 * Processes started ahead of their call: a command that runs the same tool the same way each time (a resident
 * server's `call`) keeps the next call's process started and waiting, so that the call finds its sandbox set up
 * (and a built-in tool's runtime loaded) instead of paying for them.
 *
 * A process is started ahead only for a start whose tool does nothing until its stdin speaks: a built-in tool
 * reads its arguments first; any other tool's start waits at its gate (src/sandbox/gate.ts). A waiting process
 * that reads the end of its stdin (its server gone, whatever the way) leaves without running the tool. A call
 * takes one only when its program, arguments, environment and folder are exactly those it was started with; any
 * other is ended first, and its call starts as ever. Not here: running it (runner.ts).
 *
 * @module
 */

/** The whole of a start, as the runner makes it: a process started ahead serves only this very one. */
export interface AheadStart {
  readonly program: string;
  readonly args: readonly string[];
  /** The complete environment (nothing else is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
}

interface Waiting {
  readonly key: string;
  readonly child: Deno.ChildProcess;
  /** Set once it has ended by itself (a failed start): it is not handed out. */
  ended: boolean;
}

/** The start's identity: every field, the environment in a fixed order. */
function keyOf(start: AheadStart): string {
  const env = Object.entries(start.env).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  return JSON.stringify([start.program, start.args, env, start.cwd]);
}

/**
 * At most one process started ahead: the start the last call asked for, made again once that call is over.
 *
 * @example
 * ```ts ignore
 * const ahead = new StartsAhead();
 * const child = await ahead.take(start) ?? spawn(start); // this call
 * // ... the call runs and ends ...
 * ahead.refill(); // the next call of the same start finds it waiting
 * await ahead.close();
 * ```
 */
export class StartsAhead {
  #wanted?: { key: string; start: AheadStart };
  #waiting?: Waiting;
  #closed = false;

  /**
   * The process started ahead for exactly `start`, or `undefined` (none, or one for another start, which is ended
   * first: the call then starts its own). Either way `start` is what {@linkcode refill} makes next.
   */
  async take(start: AheadStart): Promise<Deno.ChildProcess | undefined> {
    const key = keyOf(start);
    this.#wanted = { key, start };
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting === undefined) return undefined;
    if (waiting.key === key && !waiting.ended) {
      // Its call keeps the process alive now, as any call's process does.
      waiting.child.ref();
      return waiting.child;
    }
    await end(waiting.child);
    return undefined;
  }

  /** Starts ahead the start the last call took or asked for, unless one waits already. */
  refill(): void {
    const wanted = this.#wanted;
    if (this.#closed || wanted === undefined || this.#waiting !== undefined) return;
    let child: Deno.ChildProcess;
    try {
      // As the runner starts a sandbox: its own pipes, the environment given and nothing else.
      child = new Deno.Command(wanted.start.program, {
        args: [...wanted.start.args],
        cwd: wanted.start.cwd,
        env: { ...wanted.start.env },
        clearEnv: true,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch {
      // It cannot start: the next call starts its own, and says why.
      this.#wanted = undefined;
      return;
    }
    const waiting: Waiting = { key: wanted.key, child, ended: false };
    // A waiting process keeps nothing alive: a server leaving ends it (close).
    child.unref();
    void child.status.then(() => waiting.ended = true);
    this.#waiting = waiting;
  }

  /** Ends the process waiting, if any; nothing is started ahead after this. */
  async close(): Promise<void> {
    this.#closed = true;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting !== undefined) await end(waiting.child);
  }
}

/** Ends a process that was started ahead and never used, and lets its pipes go. */
async function end(child: Deno.ChildProcess): Promise<void> {
  try {
    child.kill("SIGKILL");
  } catch {
    // Gone already.
  }
  // Waited for: its end is awaited now.
  child.ref();
  await child.status;
  await Promise.all([
    child.stdin.close().catch(() => {}),
    child.stdout.cancel().catch(() => {}),
    child.stderr.cancel().catch(() => {}),
  ]);
}
