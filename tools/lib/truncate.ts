/**
 * Head-and-tail truncation of a stream of text: `truncateForModel` of `src/contract.ts` (40% head, 60% tail,
 * its marker) for output that arrives in chunks, holding no more than it will keep.
 *
 * @module
 */
import { truncationMarker } from "../../src/contract.ts";

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Keeps the head and the tail of a stream of text chunks, counting everything that went past, so that output of
 * any size costs at most `maxChars` of memory (twice that, briefly).
 *
 * @example
 * ```ts
 * import { HeadTail } from "./truncate.ts";
 * const kept = new HeadTail(100);
 * kept.push("x".repeat(1000));
 * kept.text().length <= 100; // true
 * ```
 */
export class HeadTail {
  readonly #max: number;
  readonly #headBudget: number;
  readonly #tailBudget: number;
  #head = "";
  #tail: string | undefined;
  #total = 0;

  constructor(maxChars: number) {
    this.#max = maxChars;
    // Size the marker for the largest count it could report, so the result never exceeds maxChars.
    const budget = Math.max(
      0,
      maxChars - truncationMarker(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER).length,
    );
    this.#headBudget = Math.floor(budget * 0.4);
    this.#tailBudget = budget - this.#headBudget;
  }

  /** Adds a chunk. */
  push(chunk: string): void {
    this.#total += chunk.length;
    if (this.#tail === undefined) {
      this.#head += chunk;
      if (this.#head.length <= this.#max) return;
      // From here on only the head budget and a tail are kept.
      this.#tail = this.#head.slice(this.#headBudget);
      this.#head = this.#head.slice(0, this.#headBudget);
    } else {
      this.#tail += chunk;
    }
    if (this.#tail.length > 2 * this.#max) this.#tail = this.#tail.slice(-this.#max);
  }

  /** Characters seen in all. */
  get total(): number {
    return this.#total;
  }

  /** Was anything cut? */
  get truncated(): boolean {
    return this.#total > this.#max;
  }

  /** The kept text: everything when it fits, else head + marker + tail. */
  text(): string {
    if (!this.truncated) return this.#head;
    let head = this.#head;
    let tail = (this.#tail ?? "").slice(-this.#tailBudget);
    if (head.length > 0 && isHighSurrogate(head.charCodeAt(head.length - 1))) head = head.slice(0, -1);
    // A low surrogate at the start of the tail lost its pair to the cut.
    if (tail.length > 0 && isLowSurrogate(tail.charCodeAt(0))) tail = tail.slice(1);
    return head + truncationMarker(this.#total - head.length - tail.length, this.#total) + tail;
  }
}
