/**
 * A one-shot timer that does not load Node's timers. In Deno 2.9 the global `setTimeout` is Node's: its first use
 * loads `node:timers` and what it imports (async hooks, Node's errors and `inspect`), about 5 to 8 ms of a
 * process's start, measured with `--cpu-prof` on every `toolgate call` (the process runner arms its limits with
 * timers). `AbortSignal.timeout` runs on the runtime's own timer (about 1 ms at first use), which keeps the
 * process alive while an abort listener is attached and lets it go once none is: the very behaviour of a
 * `setTimeout` and its `clearTimeout`. A timer that must not keep the process alive (`Deno.unrefTimer`'s) waits
 * with `Atomics.waitAsync`, whose timeout the runtime serves without holding its event loop open. (Tested:
 * `tests/base/timer_test.ts`.)
 *
 * @module
 */

/** Cancels a timer of {@linkcode after}; calling it after the timer fired, or twice, does nothing. */
export type CancelTimer = () => void;

/** What {@linkcode after} may be told. */
export interface TimerOptions {
  /** Whether the pending timer keeps the process alive (default true), as a timer left unref'd does. */
  keepAlive?: boolean;
}

/**
 * Calls `fire` once after `ms` milliseconds, unless cancelled first; the process stays alive until one of the two
 * (unless `keepAlive` is false).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { after } from "./timer.ts";
 * let fired = 0;
 * const cancel = after(60_000, () => fired++);
 * cancel(); // nothing keeps the process alive
 * await new Promise<void>((resolve) => after(10, resolve));
 * assert.equal(fired, 0);
 * ```
 */
export function after(ms: number, fire: () => void, options: TimerOptions = {}): CancelTimer {
  // No time can pass that long: nothing to arm (the runtime's timer refuses a delay that is not a finite number).
  if (!Number.isFinite(ms)) return () => {};
  if (options.keepAlive === false) return unrefAfter(Math.max(0, Math.ceil(ms)), fire);
  const signal = AbortSignal.timeout(Math.max(0, Math.ceil(ms)));
  const listener = () => fire();
  signal.addEventListener("abort", listener, { once: true });
  return () => signal.removeEventListener("abort", listener);
}

/** The timer that does not keep the process alive: a wait on a word nobody changes, ended early by a notify. */
function unrefAfter(ms: number, fire: () => void): CancelTimer {
  const word = new Int32Array(new SharedArrayBuffer(4));
  let cancelled = false;
  const waited = Atomics.waitAsync(word, 0, 0, ms);
  const settle = (outcome: string) => {
    if (!cancelled && outcome === "timed-out") fire();
  };
  if (waited.async) waited.value.then(settle);
  else queueMicrotask(() => settle(waited.value));
  return () => {
    cancelled = true;
    Atomics.notify(word, 0);
  };
}
