/**
 * Ending whole process trees: a signal to a tool's process group, and a registry of running groups that toolgate
 * ends before it exits on SIGINT, SIGTERM or SIGHUP (a Ctrl-C may first go to the agent loop's stop button).
 *
 * @module
 */

/** The signals toolgate sends to a tool's tree. */
export type TreeSignal = "SIGTERM" | "SIGKILL";

/** Can this process signal a group directly? `Deno.kill` needs an unscoped `--allow-run`. */
function canKillDirectly(): boolean {
  return Deno.permissions.querySync({ name: "run" }).state === "granted";
}

const SETSID_PATHS = ["/usr/bin/setsid", "/bin/setsid"];

/**
 * How to start a program as the leader of its own session and process group: `["/usr/bin/setsid"]` to run it
 * through setsid(1), or `[]` for Deno's `detached: true`. Deno starts a detached child with fork() of the whole
 * runtime, some milliseconds a call; setsid(1) costs one small exec. It is used when this process may run it: the
 * launcher grants it by its path, as it grants `sh` (either can start any program, so the grant adds no power).
 *
 * @example
 * ```ts
 * import { groupLauncher } from "./process_tree.ts";
 * const [launcher] = groupLauncher();
 * const command = launcher
 *   ? new Deno.Command(launcher, { args: ["/bin/sleep", "1"] })
 *   : new Deno.Command("/bin/sleep", { args: ["1"], detached: true });
 * ```
 */
export function groupLauncher(): readonly string[] {
  if (Deno.build.os !== "linux") return [];
  for (const path of SETSID_PATHS) {
    if (Deno.permissions.querySync({ name: "run", command: path }).state !== "granted") continue;
    try {
      if (Deno.statSync(path).isFile) return [path];
    } catch {
      // Not here: look on.
    }
  }
  return [];
}

/**
 * Sends `signal` to the process group `pgid` (a tool started by {@linkcode groupLauncher} or with
 * `detached: true` leads its own group); resolves to whether a group was there to receive it. It never throws:
 * a group that is gone, or one whose last members toolgate may not signal (a setuid program), is not the call's
 * failure. Without an unscoped `--allow-run`, the `kill` program does it.
 *
 * @example
 * ```ts
 * import { signalGroup } from "./process_tree.ts";
 * const child = new Deno.Command("sleep", { args: ["60"], detached: true }).spawn();
 * await signalGroup(child.pid, "SIGKILL");
 * ```
 */
export async function signalGroup(pgid: number, signal: TreeSignal): Promise<boolean> {
  if (canKillDirectly()) {
    try {
      Deno.kill(-pgid, signal);
      return true;
    } catch {
      return false;
    }
  }
  try {
    const killer = new Deno.Command("kill", {
      args: ["-s", signal.slice(3), "--", `-${pgid}`],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      clearEnv: true,
    });
    return (await killer.output()).success;
  } catch {
    // No kill program we may run: the tool's own timeout handling (bwrap, --die-with-parent) must do.
    return false;
  }
}

/** A running tool's tree, as the registry knows it. */
interface Running {
  readonly end: (signal: TreeSignal) => Promise<void>;
  readonly done: Promise<unknown>;
}

/** The signals that stop toolgate, and the exit codes a shell reports for them. */
export const STOP_SIGNALS = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;
/** A signal that stops toolgate. */
export type StopSignal = keyof typeof STOP_SIGNALS;

/**
 * How long after a Ctrl-C that stopped the calls in flight a second one ends toolgate.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SECOND_INTERRUPT_MS } from "./process_tree.ts";
 * assert.equal(SECOND_INTERRUPT_MS, 2000);
 * ```
 */
export const SECOND_INTERRUPT_MS = 2000;

/**
 * The trees of the tools running now (calls in flight and background jobs). When toolgate receives SIGINT,
 * SIGTERM or SIGHUP it sends SIGTERM to each, waits up to `graceMs` for them, sends SIGKILL to what is left, and
 * exits (130, 143 or 129). A caller with a shutdown of its own (the MCP server answers its calls in flight first)
 * passes `handleSignals: false` and calls `endAll`. A caller with a stop button (the agent loop on a terminal)
 * takes the first SIGINT with {@linkcode ProcessRegistry.interceptInterrupt}; a second one within
 * {@linkcode SECOND_INTERRUPT_MS} ends toolgate as above.
 *
 * @example
 * ```ts
 * import { ProcessRegistry } from "./process_tree.ts";
 * const registry = new ProcessRegistry(2000);
 * // runner: const forget = registry.track({ end, done }); ... forget();
 * ```
 */
export class ProcessRegistry {
  readonly #running = new Set<Running>();
  #listening = false;
  #interceptor?: () => boolean;
  /** When a Ctrl-C last went to the interceptor (monotonic ms). */
  #lastIntercepted = -Infinity;
  /** Keeps SIGINT heard for the window after an intercepted one, whatever else stops listening. */
  #window?: ReturnType<typeof setTimeout>;
  #stopping = false;
  readonly #onInt = () => this.#interrupt();
  readonly #onTerm = () => void this.#shutdown("SIGTERM");
  readonly #onHup = () => void this.#shutdown("SIGHUP");

  constructor(
    readonly graceMs: number,
    readonly exit: (code: number) => void = (code) => Deno.exit(code),
    readonly handleSignals = true,
    /** The time within which a second Ctrl-C ends toolgate (default {@linkcode SECOND_INTERRUPT_MS}). */
    readonly interruptWindowMs: number = SECOND_INTERRUPT_MS,
  ) {}

  /** Tracks a tree until the returned function is called. */
  track(running: Running): () => void {
    this.#running.add(running);
    this.#update();
    return () => {
      this.#running.delete(running);
      this.#update();
    };
  }

  /** How many trees are running. */
  get size(): number {
    return this.#running.size;
  }

  /**
   * Routes the first Ctrl-C (SIGINT) to `stop` until the returned function is called: `stop` ends what it owns
   * (the calls in flight) and returns true, and toolgate goes on; it returns false when it had nothing to stop,
   * and toolgate ends as without it. A second Ctrl-C within `interruptWindowMs` of one that `stop` took ends
   * toolgate (every tree, then exit 130).
   *
   * @example
   * ```ts
   * import { ProcessRegistry } from "./process_tree.ts";
   * const registry = new ProcessRegistry(2000);
   * const controller = new AbortController();
   * const disarm = registry.interceptInterrupt(() => (controller.abort(), true));
   * // ... the calls run with controller.signal ...
   * disarm();
   * ```
   */
  interceptInterrupt(stop: () => boolean): () => void {
    this.#interceptor = stop;
    this.#update();
    return () => {
      if (this.#interceptor === stop) this.#interceptor = undefined;
      this.#update();
    };
  }

  #update(): void {
    this.#listen(this.#running.size > 0 || this.#interceptor !== undefined || this.#window !== undefined);
  }

  #listen(on: boolean): void {
    if (on === this.#listening || !this.handleSignals || Deno.build.os === "windows") return;
    this.#listening = on;
    const method = on ? Deno.addSignalListener : Deno.removeSignalListener;
    method("SIGINT", this.#onInt);
    method("SIGTERM", this.#onTerm);
    method("SIGHUP", this.#onHup);
  }

  #interrupt(): void {
    const now = performance.now();
    if (now - this.#lastIntercepted > this.interruptWindowMs && this.#interceptor?.()) {
      this.#lastIntercepted = now;
      clearTimeout(this.#window);
      this.#window = setTimeout(() => {
        this.#window = undefined;
        this.#update();
      }, this.interruptWindowMs);
      // The window must not hold toolgate open once its work is done.
      Deno.unrefTimer(this.#window);
      this.#update();
      return;
    }
    void this.#shutdown("SIGINT");
  }

  /** Ends every running tree: SIGTERM, a grace period, then SIGKILL. */
  async endAll(): Promise<void> {
    const running = [...this.#running];
    await Promise.all(running.map((r) => r.end("SIGTERM")));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise((resolve) => timer = setTimeout(resolve, this.graceMs));
    await Promise.race([Promise.allSettled(running.map((r) => r.done)), grace]);
    clearTimeout(timer);
    await Promise.all(running.map((r) => r.end("SIGKILL")));
  }

  async #shutdown(signal: StopSignal): Promise<void> {
    // A second signal while the trees are being ended changes nothing.
    if (this.#stopping) return;
    this.#stopping = true;
    await this.endAll();
    this.exit(STOP_SIGNALS[signal]);
  }
}
