/**
 * A worker's memory of the calls it took, against replays: a call is taken only while its timestamp is fresh, and
 * its id only once, so the ids need remembering only as long as a call with them could still be fresh. The memory
 * is bounded: when it is full, new calls wait (they are never taken unchecked).
 *
 * @module
 */

/** What a worker does with a call, as far as its age and id go. */
export type Freshness = "fresh" | "stale" | "replayed" | "full";

/**
 * The ids a worker took, each with the stream message that brought it (the stream handing the same message out
 * again is no replay) and until when it could be fresh.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ReplayGuard } from "./replay_guard.ts";
 * const guard = new ReplayGuard({ skewMs: 60_000, capacity: 1000 });
 * const now = Date.now();
 * assert.equal(guard.check({ id: "c1", seq: 1, ts: now, wait: 30_000 }, now), "fresh");
 * assert.equal(guard.check({ id: "c1", seq: 1, ts: now, wait: 30_000 }, now), "fresh"); // the same message, handed out again
 * assert.equal(guard.check({ id: "c1", seq: 7, ts: now, wait: 30_000 }, now), "replayed"); // the same id, published again
 * assert.equal(guard.check({ id: "c2", seq: 8, ts: now - 600_000, wait: 30_000 }, now), "stale");
 * ```
 */
export class ReplayGuard {
  readonly #skewMs: number;
  readonly #capacity: number;
  /** By id: the stream sequence of its message, and when it stops being fresh. Kept in the order taken. */
  readonly #seen = new Map<string, { readonly seq: number; readonly until: number }>();
  #swept = 0;

  constructor(options: { readonly skewMs: number; readonly capacity: number }) {
    this.#skewMs = options.skewMs;
    this.#capacity = options.capacity;
  }

  /** How many ids it remembers now. */
  get size(): number {
    return this.#seen.size;
  }

  /**
   * Whether a call may be taken at `now` (ms since the epoch): `fresh` (and now remembered), `stale` (its time is
   * outside `[ts - skew, ts + wait + skew]`), `replayed` (its id came before in another message), or `full`.
   */
  check(call: { id: string; seq: number; ts: number; wait: number }, now: number): Freshness {
    const until = call.ts + call.wait + this.#skewMs;
    if (now < call.ts - this.#skewMs || now > until) return "stale";
    const earlier = this.#seen.get(call.id);
    if (earlier !== undefined) return earlier.seq === call.seq ? "fresh" : "replayed";
    // A sweep costs one pass over the ids: once a second, or when full.
    if (now - this.#swept >= 1000 || this.#seen.size >= this.#capacity) this.#forget(now);
    if (this.#seen.size >= this.#capacity) return "full";
    this.#seen.set(call.id, { seq: call.seq, until });
    return "fresh";
  }

  /** Drops the ids that can no longer come fresh (any call with them is stale now). */
  #forget(now: number): void {
    this.#swept = now;
    for (const [id, { until }] of this.#seen) {
      if (until < now) this.#seen.delete(id);
    }
  }
}
