/**
 * Many waits of one length, on one timer (see {@linkcode WaitQueue}).
 *
 * @module
 */
import { after, type CancelTimer } from "./timer.ts";

/**
 * Waits of one length on one timer: they end in the order they began, so a queue with one timer armed for its
 * oldest does what a timer for each would (each of which cost an HTTP call more than the rest of its wait).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { after } from "./timer.ts";
 * import { WaitQueue } from "./wait_queue.ts";
 * const waits = new WaitQueue();
 * const fired: string[] = [];
 * waits.add(20, () => fired.push("a"));
 * const cancel = waits.add(20, () => fired.push("b"));
 * waits.add(20, () => fired.push("c"));
 * cancel();
 * await new Promise<void>((resolve) => after(80, resolve)); // its timer keeps no process alive: this one does
 * assert.deepEqual(fired, ["a", "c"]);
 * ```
 */
export class WaitQueue {
  #queue: { at: number; fire: () => void; done: boolean }[] = [];
  #head = 0;
  #armed = false;

  /**
   * Calls `fire` after `ms` (no sooner than any wait added before it ends), unless the returned cancel comes
   * first. The timer does not keep the process alive.
   */
  add(ms: number, fire: () => void): CancelTimer {
    const entry = { at: performance.now() + ms, fire, done: false };
    this.#queue.push(entry);
    this.#arm();
    return () => void (entry.done = true);
  }

  #arm(): void {
    if (this.#armed) return;
    while (this.#head < this.#queue.length && this.#queue[this.#head].done) this.#head++;
    if (this.#head >= this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
      return;
    }
    this.#armed = true;
    after(Math.max(0, this.#queue[this.#head].at - performance.now()), () => {
      this.#armed = false;
      const now = performance.now();
      while (this.#head < this.#queue.length) {
        const entry = this.#queue[this.#head];
        if (!entry.done && entry.at > now) break;
        this.#head++;
        if (!entry.done) {
          entry.done = true;
          entry.fire();
        }
      }
      if (this.#head > 1024) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      this.#arm();
    }, { keepAlive: false });
  }
}
