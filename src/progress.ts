/**
 * Progress on the terminal: one stderr line, redrawn in place, naming each running tool and how long it has run;
 * a finished tool leaves one line behind. Nothing at all when disabled (no terminal, or `--quiet`).
 *
 * @module
 */
import type { Envelope } from "./contract.ts";
import { neutralizeControls } from "./terminal.ts";

/** How a {@linkcode Progress} shows itself. */
export interface ProgressOptions {
  /** False without a terminal or with `--quiet`: every method does nothing. */
  readonly enabled: boolean;
  /**
   * Writes to stderr as is: the line's redraws are control sequences. Whatever else goes in the line is made safe
   * for the terminal here.
   */
  readonly write: (text: string) => Promise<void>;
  /** Milliseconds, monotonic. */
  readonly now?: () => number;
  /** How often the line is redrawn while tools run. */
  readonly intervalMs?: number;
  /** The terminal's width: a longer line would wrap and could not be redrawn in place. */
  readonly columns?: number;
}

interface Running {
  readonly name: string;
  readonly started: number;
}

/** Clears the current terminal line. */
const CLEAR_LINE = "\r\x1b[2K";

function elapsed(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/**
 * Shows the tools that are running.
 *
 * @example
 * ```ts
 * import { Progress } from "./progress.ts";
 * const progress = new Progress({ enabled: true, write: async (t) => void Deno.stderr.write(new TextEncoder().encode(t)) });
 * progress.start("call_1", "get_time");
 * // ... the call runs ...
 * // progress.end("call_1", envelope);
 * await progress.close();
 * ```
 */
export class Progress {
  readonly #options: ProgressOptions;
  readonly #now: () => number;
  readonly #running = new Map<string, Running>();
  #timer?: ReturnType<typeof setInterval>;
  #queue: Promise<void> = Promise.resolve();
  #drawn = false;

  constructor(options: ProgressOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** A call started. */
  start(id: string, name: string): void {
    if (!this.#options.enabled) return;
    this.#running.set(id, { name: neutralizeControls(name), started: this.#now() });
    this.#timer ??= setInterval(() => this.#draw(), this.#options.intervalMs ?? 200);
    this.#draw();
  }

  /** A call ended: its line stays, and the others' line is redrawn. */
  end(id: string, envelope: Envelope): void {
    if (!this.#options.enabled) return;
    const running = this.#running.get(id);
    if (!running) return;
    this.#running.delete(id);
    const outcome = envelope.ok ? "ok" : neutralizeControls(String(envelope.kind));
    const line = `  ${envelope.ok ? "✓" : "✗"} ${running.name} ${
      elapsed(this.#now() - running.started)
    } ${outcome}\n`;
    this.#write(`${this.#drawn ? CLEAR_LINE : ""}${line}`);
    this.#drawn = false;
    if (this.#running.size === 0) this.#stop();
    else this.#draw();
  }

  /** Redraws the line now (the timer does it on its own). */
  draw(): void {
    if (this.#options.enabled) this.#draw();
  }

  /** Clears the line, stops the timer, and waits for every write. */
  async close(): Promise<void> {
    this.#stop();
    if (this.#drawn) this.#write(CLEAR_LINE);
    this.#drawn = false;
    this.#running.clear();
    await this.#queue;
  }

  #draw(): void {
    if (this.#running.size === 0) return;
    const now = this.#now();
    const parts = [...this.#running.values()].map((r) => `${r.name} ${elapsed(now - r.started)}`);
    let line = `  running ${parts.length === 1 ? "" : `${parts.length} tools: `}${parts.join(", ")}`;
    const columns = Math.max(20, (this.#options.columns ?? 80) - 1);
    if (line.length > columns) line = line.slice(0, columns - 1) + "…";
    this.#write(`${CLEAR_LINE}${line}`);
    this.#drawn = true;
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #write(text: string): void {
    // Ordered, and a failed write to stderr must not fail a tool call.
    this.#queue = this.#queue.then(() => this.#options.write(text)).catch(() => {});
  }
}

/** The terminal's width for a progress line (80 when it cannot be told). */
export function terminalColumns(): number {
  try {
    // A terminal that does not know its size says 0.
    return Deno.consoleSize().columns || 80;
  } catch {
    return 80;
  }
}
