/**
 * A small deterministic generator (mulberry32), so that what a test or a benchmark draws is the same on every run:
 * a failure it finds can be reproduced, a measure is of the same input.
 *
 * @module
 */

/**
 * Numbers in [0, 1), the same sequence for the same `seed`.
 *
 * @example
 * ```ts
 * import { seededRandom } from "./seeded_random.ts";
 * const next = seededRandom(7);
 * console.assert(next() === seededRandom(7)());
 * ```
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
