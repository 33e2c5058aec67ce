/**
 * Several spawn threads (`spawn_thread.ts`) behind one {@linkcode Spawner}: each start goes to the thread with the
 * fewest starts under way. A thread waits in each start until the child has called exec (a millisecond on a busy
 * machine), so under load one thread is a queue: measured under `serve`'s load of 16 sessions, starts waited 7 ms
 * at the median for a thread that spent 0.9 ms in each. A second thread gave 1.07 to 1.13 times the calls per
 * second at 16 sessions on 2 cores (1.01 to 1.04 at 64, where the cores were busy already).
 *
 * @module
 */
import { type ChildHandle, type Spawner, type SpawnRequest, SpawnThread } from "./spawn_thread.ts";

/** The threads a long-lived command starts its tools from: two, or one on a machine of one core. */
export function spawnThreadCount(cores: number = navigator.hardwareConcurrency): number {
  return Math.max(1, Math.min(2, cores));
}

/**
 * Starts processes from `count` spawn threads, each start on the least busy one; `close` ends them all.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SpawnPool } from "./spawn_pool.ts";
 * const pool = new SpawnPool(2);
 * const child = await pool.spawn({ program: "/bin/echo", args: ["hi"], cwd: "/", env: {}, detached: false });
 * await child.stdin.close();
 * const [out] = await Promise.all([new Response(child.stdout).text(), child.stderr.cancel(), child.status]);
 * assert.equal(out, "hi\n");
 * await pool.close();
 * ```
 */
export class SpawnPool implements Spawner {
  readonly #threads: SpawnThread[];
  /** Starts under way, by thread. */
  readonly #starting: number[];

  constructor(count: number = spawnThreadCount()) {
    this.#threads = Array.from({ length: Math.max(1, count) }, () => new SpawnThread());
    this.#starting = this.#threads.map(() => 0);
  }

  /** How many threads it starts from. */
  get size(): number {
    return this.#threads.length;
  }

  async spawn(request: SpawnRequest): Promise<ChildHandle> {
    let least = 0;
    for (let i = 1; i < this.#starting.length; i++) if (this.#starting[i] < this.#starting[least]) least = i;
    this.#starting[least]++;
    try {
      return await this.#threads[least].spawn(request);
    } finally {
      this.#starting[least]--;
    }
  }

  /** Ends every thread as {@linkcode SpawnThread.close} does: what still runs is killed. */
  async close(): Promise<void> {
    await Promise.all(this.#threads.map((thread) => thread.close()));
  }
}
