/**
 * A one-shot timer that does not load Node's timers. In Deno 2.9 the global `setTimeout` is Node's: its first use
 * loads `node:timers` and what it imports (async hooks, Node's errors and `inspect`), about 5 to 8 ms of a
 * process's start, measured with `--cpu-prof` on every `toolgate call` (the process runner arms its limits with
 * timers). `AbortSignal.timeout` runs on the runtime's own timer (about 1 ms at first use), which keeps the
 * process alive while an abort listener is attached and lets it go once none is: the very behaviour of a
 * `setTimeout` and its `clearTimeout`. (Tested: `tests/base/timer_test.ts`.)
 *
 * @module
 */

/** Cancels a timer of {@linkcode after}; calling it after the timer fired, or twice, does nothing. */
export type CancelTimer = () => void;

/**
 * Calls `fire` once after `ms` milliseconds, unless cancelled first; the process stays alive until one of the two.
 *
 * @example
 * ```ts
 * import { after } from "./timer.ts";
 * const cancel = after(60_000, () => console.log("a minute went by"));
 * cancel(); // nothing is printed, and nothing keeps the process alive
 * ```
 */
export function after(ms: number, fire: () => void): CancelTimer {
  const signal = AbortSignal.timeout(Math.max(0, Math.ceil(ms)));
  const listener = () => fire();
  signal.addEventListener("abort", listener, { once: true });
  return () => signal.removeEventListener("abort", listener);
}
