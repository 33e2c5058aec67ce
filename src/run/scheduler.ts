/**
 * The one scheduler of tool calls, for the agent loop and every MCP session alike: calls of `concurrent` tools run
 * side by side, any other call runs alone, calls start in the order they arrived, a call can be cancelled while
 * it waits, and no more than a cap of calls are in flight (per scheduler, and across every scheduler that shares
 * a {@linkcode CallLimit}).
 *
 * @module
 */

/** Frees the slot a call holds; a second call does nothing. */
export type Release = () => void;

/**
 * A cap on calls in flight shared by several schedulers (the MCP server's sessions): when it is full, a scheduler
 * whose next call could start waits for a slot, and freed slots go to the waiting schedulers in turn, so that no
 * session can take them all.
 *
 * @example
 * ```ts
 * import { CallLimit, Scheduler } from "./scheduler.ts";
 * const limit = new CallLimit(16);
 * const sessionA = new Scheduler({ maxInFlight: 4, limit });
 * const sessionB = new Scheduler({ maxInFlight: 4, limit });
 * ```
 */
export class CallLimit {
  /** The most calls in flight. */
  readonly max: number;
  #used = 0;
  /** Schedulers with a call that could start but for this limit, in the order they asked. */
  readonly #waiting: (() => void)[] = [];

  /** A cap of `max` calls (an integer, at least 1). */
  constructor(max: number) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`a call limit must be >= 1 (got ${max})`);
    this.max = max;
  }

  /** Calls in flight now. */
  get used(): number {
    return this.#used;
  }

  /** Takes a slot when one is free. */
  tryTake(): boolean {
    if (this.#used >= this.max) return false;
    this.#used += 1;
    return true;
  }

  /** Asks to be woken when a slot is freed (once per ask). */
  wait(wake: () => void): void {
    if (!this.#waiting.includes(wake)) this.#waiting.push(wake);
  }

  /** Gives a slot back and wakes waiting schedulers while slots are free. */
  give(): void {
    this.#used -= 1;
    // A woken scheduler that still has a call to start takes a slot (and asks again at the back of the line when
    // it has more); one whose call was cancelled meanwhile takes nothing, and the next one is woken.
    while (this.#used < this.max && this.#waiting.length > 0) this.#waiting.shift()!();
  }
}

/** How a {@linkcode Scheduler} runs calls. */
export interface SchedulerOptions {
  /** The most calls of this scheduler in flight at once (default: no cap but `limit`'s). */
  readonly maxInFlight?: number;
  /** A cap shared with other schedulers. */
  readonly limit?: CallLimit;
}

interface Waiter {
  readonly concurrent: boolean;
  readonly start: () => void;
}

/**
 * First come, first served: a call of a concurrent tool starts when no other-than-concurrent call runs and no
 * call waits before it; any other call starts when nothing runs. So a run of concurrent calls goes side by side,
 * and a call that is not concurrent sees every call before it finished and no call after it started: the outcome
 * of running them one after another in arrival order, since concurrent tools have no side effects to order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Scheduler } from "./scheduler.ts";
 * const scheduler = new Scheduler({ maxInFlight: 4 });
 * const release = await scheduler.acquire(true);
 * assert.equal(typeof release, "function"); // a slot was free
 * try {
 *   // run a call of a concurrent tool
 * } finally {
 *   release?.();
 * }
 * ```
 */
export class Scheduler {
  readonly #max: number;
  readonly #limit?: CallLimit;
  #shared = 0;
  #exclusive = false;
  readonly #queue: Waiter[] = [];
  readonly #wake = () => this.#pump();

  /** A scheduler with the given caps (none by default). */
  constructor(options: SchedulerOptions = {}) {
    const max = options.maxInFlight ?? Infinity;
    if (!(max >= 1)) throw new RangeError(`maxInFlight must be >= 1 (got ${max})`);
    this.#max = max;
    this.#limit = options.limit;
  }

  /** Calls of this scheduler in flight now. */
  get inFlight(): number {
    return this.#shared + (this.#exclusive ? 1 : 0);
  }

  /** Calls waiting for their turn. */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Waits for the call's turn (`concurrent`: the tool's flag). Resolves to `undefined`, holding nothing, when
   * `signal` aborts first.
   */
  acquire(concurrent: boolean, signal?: AbortSignal): Promise<Release | undefined> {
    if (signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        concurrent,
        start: () => {
          signal?.removeEventListener("abort", onAbort);
          if (concurrent) this.#shared += 1;
          else this.#exclusive = true;
          resolve(this.#releaser(concurrent));
        },
      };
      const onAbort = () => {
        const index = this.#queue.indexOf(waiter);
        if (index >= 0) this.#queue.splice(index, 1);
        resolve(undefined);
        // A waiting call that is not concurrent may have held back concurrent ones behind it.
        this.#pump();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(waiter);
      this.#pump();
    });
  }

  /**
   * Runs `work` in the call's turn and frees the slot when it ends; `undefined` when `signal` aborted before the
   * turn came (`work` never ran).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Scheduler } from "./scheduler.ts";
   * const scheduler = new Scheduler();
   * const answer = await scheduler.run(false, undefined, () => Promise.resolve(42));
   * assert.equal(answer, 42);
   * ```
   */
  async run<T>(
    concurrent: boolean,
    signal: AbortSignal | undefined,
    work: () => Promise<T>,
  ): Promise<T | undefined> {
    const release = await this.acquire(concurrent, signal);
    if (!release) return undefined;
    try {
      return await work();
    } finally {
      release();
    }
  }

  #releaser(concurrent: boolean): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (concurrent) this.#shared -= 1;
      else this.#exclusive = false;
      // The shared limit's give() may wake this very scheduler: count the call as ended first.
      if (this.#limit) this.#limit.give();
      this.#pump();
    };
  }

  #pump(): void {
    while (this.#queue.length > 0 && !this.#exclusive && this.inFlight < this.#max) {
      const next = this.#queue[0];
      if (!next.concurrent && this.#shared > 0) return;
      if (this.#limit && !this.#limit.tryTake()) {
        this.#limit.wait(this.#wake);
        return;
      }
      this.#queue.shift();
      next.start();
    }
  }
}
