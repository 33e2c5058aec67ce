/**
 * A run's two clocks: its wall-clock limit, and its idle limit (nothing on stdout or stderr for so long; every
 * chunk starts it again, and it waits while the tool waits for an answer). Both count from `arm()`: the start, or
 * for a start waiting for its go, the go. Each tells its run once when it passes; ending the tree is the run's
 * (src/process/runner.ts). Timers from `after`, not `setTimeout`: the first `setTimeout` of a process loads
 * Node's timers (src/base/timer.ts).
 *
 * @module
 */
import { after, type CancelTimer } from "../base/timer.ts";

/** The longest delay a timer takes; a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A run's limits, and whom they tell. */
export interface RunLimitsOptions {
  /** The wall-clock limit; `Infinity` for none. */
  readonly timeoutMs: number;
  /** The idle limit; absent (or `Infinity`) for none. */
  readonly idleTimeoutMs?: number;
  /** While this says true, the idle clock waits: a tool waiting for an answer to its question is not idle. */
  readonly waiting?: () => boolean;
  /** Told once the wall-clock limit passed. */
  readonly onTimeout: () => void;
  /** Told once the idle limit passed. */
  readonly onIdle: () => void;
}

/**
 * The clocks of one run.
 *
 * @example
 * ```ts
 * import { RunLimits } from "./run_limits.ts";
 * const limits = new RunLimits({ timeoutMs: 5_000, idleTimeoutMs: 1_000, onTimeout: () => {}, onIdle: () => {} });
 * limits.arm();
 * limits.output(); // a chunk came
 * limits.stop(); // the run ended
 * ```
 */
export class RunLimits {
  readonly #options: RunLimitsOptions;
  #cancelTimeout?: CancelTimer;
  #cancelIdle?: CancelTimer;
  #lastOutput = performance.now();
  #stopped = false;

  constructor(options: RunLimitsOptions) {
    this.#options = options;
  }

  /** Starts both clocks, now (nothing once stopped). */
  arm(): void {
    if (this.#stopped) return;
    const { timeoutMs, idleTimeoutMs, onTimeout } = this.#options;
    this.#lastOutput = performance.now();
    if (Number.isFinite(timeoutMs)) this.#cancelTimeout = after(Math.min(timeoutMs, MAX_TIMER_MS), onTimeout);
    if (idleTimeoutMs !== undefined && Number.isFinite(idleTimeoutMs)) this.#watchIdle(idleTimeoutMs);
  }

  /** Output came: the idle clock starts again. */
  output(): void {
    this.#lastOutput = performance.now();
  }

  /** The run ended: neither clock tells anything any more. */
  stop(): void {
    this.#stopped = true;
    this.#cancelTimeout?.();
    this.#cancelIdle?.();
  }

  /** One timer for the idle limit, moved on lazily: re-arming it for every chunk of a flood would cost more. */
  #watchIdle(delay: number): void {
    const idleMs = this.#options.idleTimeoutMs!;
    this.#cancelIdle = after(Math.min(delay, MAX_TIMER_MS), () => {
      // Waiting for an answer (a person typing) is not idling: the clock starts again once the answer went out.
      if (this.#options.waiting?.()) this.#lastOutput = performance.now();
      const quiet = performance.now() - this.#lastOutput;
      if (quiet < idleMs) return this.#watchIdle(idleMs - quiet);
      this.#options.onIdle();
    });
  }
}
