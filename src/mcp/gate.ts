/**
 * Scheduling of MCP calls by the manifest's `concurrent` flag: concurrent tools run side by side, any other tool
 * runs alone (as the agent loop runs it), and calls start in the order they arrived.
 *
 * @module
 */

interface Waiter {
  readonly exclusive: boolean;
  readonly start: () => void;
}

/** Frees the slot a call holds. */
export type Release = () => void;

/**
 * A first-come, first-served gate with shared (concurrent) and exclusive slots.
 *
 * @example
 * ```ts
 * import { CallGate } from "./gate.ts";
 * const gate = new CallGate();
 * const release = await gate.acquire(false);
 * try {
 *   // run a concurrent tool
 * } finally {
 *   release?.();
 * }
 * ```
 */
export class CallGate {
  #shared = 0;
  #exclusive = false;
  readonly #queue: Waiter[] = [];

  /**
   * Waits for a slot (`exclusive` for a tool that is not concurrent). Resolves to `undefined`, holding nothing,
   * when `signal` aborts first.
   */
  acquire(exclusive: boolean, signal?: AbortSignal): Promise<Release | undefined> {
    if (signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        exclusive,
        start: () => {
          signal?.removeEventListener("abort", onAbort);
          if (exclusive) this.#exclusive = true;
          else this.#shared += 1;
          resolve(this.#releaser(exclusive));
        },
      };
      const onAbort = () => {
        const index = this.#queue.indexOf(waiter);
        if (index >= 0) this.#queue.splice(index, 1);
        resolve(undefined);
        // A waiting exclusive call may have held back shared ones behind it.
        this.#pump();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(waiter);
      this.#pump();
    });
  }

  #releaser(exclusive: boolean): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (exclusive) this.#exclusive = false;
      else this.#shared -= 1;
      this.#pump();
    };
  }

  #pump(): void {
    while (this.#queue.length > 0 && !this.#exclusive) {
      const next = this.#queue[0];
      if (next.exclusive && this.#shared > 0) return;
      this.#queue.shift();
      next.start();
    }
  }
}
