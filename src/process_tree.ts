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

const SETSID_PATHS = ["/usr/bin/setsid", "/bin/setsid"];

/**
 * How to start a program as the leader of its own session and process group: `["/usr/bin/setsid"]` to run it
 * through setsid(1), or `[]` for Deno's `detached: true`. Deno starts a detached child with fork() of the whole
 * runtime, some milliseconds a call; setsid(1) costs one small exec. It is used only under an unscoped
 * `--allow-run`: allowing setsid under a scoped one would allow every program.
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
  if (Deno.build.os !== "linux" || !canKillDirectly()) return [];
  for (const path of SETSID_PATHS) {
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

/**
 * The trees of the tools running now. When toolgate receives SIGINT or SIGTERM it sends SIGTERM to each, waits up
 * to `graceMs` for them, sends SIGKILL to what is left, and exits (130 or 143). A caller with a shutdown of its
 * own (the MCP server answers its calls in flight first) passes `handleSignals: false` and calls `endAll`.
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

  constructor(
    readonly graceMs: number,
    readonly exit: (code: number) => void = (code) => Deno.exit(code),
    readonly handleSignals = true,
  ) {}

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
    if (on === this.#listening || !this.handleSignals || Deno.build.os === "windows") return;
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
