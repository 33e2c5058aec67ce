/**
 * A command's stop on a signal: while a command that runs tools lives, SIGINT, SIGTERM and SIGHUP do not end the
 * process at once; they abort the command's calls with the reason the signal gives (`SIGINT` a person's stop, any
 * other toolgate's end), so that each call ends its tree, gets its envelope and writes its audit line, and the
 * command then returns the signal's exit code (130, 143, 129). Not here: the reasons and their envelopes
 * (src/process/stop.ts), ending the trees (src/process/process_tree.ts).
 *
 * @module
 */
import { SIGNAL_EXIT, type StopSignal } from "./cli.ts";
import { type ShutdownCause, type StopButton, stopReason } from "../process/stop.ts";
import { SECOND_INTERRUPT_MS } from "../process/process_tree.ts";

const SIGNALS = Object.keys(SIGNAL_EXIT) as StopSignal[];

/**
 * Hears the stop signals from its making until {@linkcode SignalStop.dispose}; the first one (or a
 * {@linkcode SignalStop.stop} of the command's own, such as a host that closed stdin) aborts
 * {@linkcode SignalStop.signal}. A later one changes nothing: the stop is under way, and each tree ends within its
 * kill grace. It is a {@linkcode StopButton} too (the agent loop on a
 * terminal): while armed, a SIGINT goes to the button first, and only a second one within
 * {@linkcode SECOND_INTERRUPT_MS} (or one the button had no use for) stops the command.
 *
 * @example
 * ```ts
 * import { SignalStop } from "./signal_stop.ts";
 * import assert from "node:assert/strict";
 * using stop = new SignalStop();
 * stop.stop("SIGTERM"); // as the signal would
 * assert.deepEqual([stop.signal.aborted, stop.received, stop.exitCode], [true, "SIGTERM", 143]);
 * ```
 */
export class SignalStop implements Disposable, StopButton {
  readonly #controller = new AbortController();
  #received?: ShutdownCause;
  readonly #listeners: [StopSignal, () => void][] = [];
  #button?: () => boolean;
  /** When a SIGINT last went to the button (monotonic ms). */
  #pressed = -Infinity;

  /** Starts hearing the signals (none on Windows, where none is sent). */
  constructor() {
    if (Deno.build.os === "windows") return;
    for (const name of SIGNALS) {
      const listener = () => this.#heard(name);
      Deno.addSignalListener(name, listener);
      this.#listeners.push([name, listener]);
    }
  }

  #heard(name: StopSignal): void {
    if (this.#received !== undefined) return;
    if (name === "SIGINT" && this.#button !== undefined) {
      const now = performance.now();
      if (now - this.#pressed > SECOND_INTERRUPT_MS && this.#button()) {
        this.#pressed = now;
        return;
      }
    }
    this.stop(name);
  }

  /** Routes SIGINT to `stop` until the returned function is called (see {@linkcode StopButton.arm}). */
  arm(stop: () => boolean): () => void {
    this.#button = stop;
    return () => {
      if (this.#button === stop) this.#button = undefined;
    };
  }

  /** Aborts {@linkcode SignalStop.signal} as `cause` would; nothing after the first stop. */
  stop(cause: ShutdownCause): void {
    if (this.#received !== undefined) return;
    this.#received = cause;
    this.#controller.abort(stopReason(cause));
  }

  /** Aborted at the first stop, with its reason (`UserStop` for SIGINT, `ShutdownStop` for any other). */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** What stopped the command, once something did. */
  get received(): ShutdownCause | undefined {
    return this.#received;
  }

  /** The exit code the stop gives (130, 143, 129; 1 for a host that closed stdin), once something stopped it. */
  get exitCode(): number | undefined {
    const received = this.#received;
    if (received === undefined) return undefined;
    return received === "stdin_closed" ? 1 : SIGNAL_EXIT[received];
  }

  /** Stops hearing the signals: from now on one ends the process as it would without this. */
  dispose(): void {
    for (const [name, listener] of this.#listeners.splice(0)) Deno.removeSignalListener(name, listener);
  }

  /** {@linkcode SignalStop.dispose}, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}
