/**
 * Ending whole process trees: a signal to a tool's process group, and a registry of running groups that toolgate
 * ends before it exits on SIGINT or SIGTERM.
 *
 * @module
 */

/** The signals toolgate sends to a tool's tree. */
export type TreeSignal = "SIGTERM" | "SIGKILL";

/** Can this process signal a group directly? `Deno.kill` needs an unscoped `--allow-run`. */
function canKillDirectly(): boolean {
  return Deno.permissions.querySync({ name: "run" }).state === "granted";
}

/**
 * Sends `signal` to the process group `pgid` (a tool started with `detached: true` leads its own group). A group
 * that is already gone is not an error. Without an unscoped `--allow-run`, the `kill` program does it.
 *
 * @example
 * ```ts
 * import { signalGroup } from "./process_tree.ts";
 * const child = new Deno.Command("sleep", { args: ["60"], detached: true }).spawn();
 * await signalGroup(child.pid, "SIGKILL");
 * ```
 */
export async function signalGroup(pgid: number, signal: TreeSignal): Promise<void> {
  if (canKillDirectly()) {
    try {
      Deno.kill(-pgid, signal);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    return;
  }
  try {
    const killer = new Deno.Command("kill", {
      args: ["-s", signal.slice(3), "--", `-${pgid}`],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      clearEnv: true,
    });
    await killer.output();
  } catch {
    // No kill program we may run: the tool's own timeout handling (bwrap, --die-with-parent) must do.
  }
}

/** A running tool's tree, as the registry knows it. */
interface Running {
  readonly end: (signal: TreeSignal) => Promise<void>;
  readonly done: Promise<unknown>;
}

/**
 * The trees of the tools running now. When toolgate receives SIGINT or SIGTERM it sends SIGTERM to each, waits up
 * to `graceMs` for them, sends SIGKILL to what is left, and exits (130 or 143).
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
  readonly #onSignal = (signal: "SIGINT" | "SIGTERM") => () => void this.#shutdown(signal);
  readonly #onInt = this.#onSignal("SIGINT");
  readonly #onTerm = this.#onSignal("SIGTERM");

  constructor(readonly graceMs: number, readonly exit: (code: number) => void = (code) => Deno.exit(code)) {}

  /** Tracks a tree until the returned function is called. */
  track(running: Running): () => void {
    this.#running.add(running);
    this.#listen(true);
    return () => {
      this.#running.delete(running);
      if (this.#running.size === 0) this.#listen(false);
    };
  }

  /** How many trees are running. */
  get size(): number {
    return this.#running.size;
  }

  #listen(on: boolean): void {
    if (on === this.#listening || Deno.build.os === "windows") return;
    this.#listening = on;
    const method = on ? Deno.addSignalListener : Deno.removeSignalListener;
    method("SIGINT", this.#onInt);
    method("SIGTERM", this.#onTerm);
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

  async #shutdown(signal: "SIGINT" | "SIGTERM"): Promise<void> {
    await this.endAll();
    this.exit(signal === "SIGINT" ? 130 : 143);
  }
}
