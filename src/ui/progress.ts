/**
 * Progress on the terminal: one stderr line per running tool, redrawn in place, with how long it has run against
 * its wall-clock limit (`running exec 30.0s/310s`) and what it last said of its progress (a `toolgate/1` progress
 * message, or the last line it wrote to stderr); that line is all a running tool shows, so no standing heartbeat
 * lines pile up under it; a finished tool leaves one line behind; while the model is asked, `waiting for MODEL at
 * HOST, N s`. Nothing at all when disabled (no terminal, or `--quiet`). {@linkcode heartbeatText} keeps the words
 * `serve` sends in its MCP progress notifications.
 *
 * @module
 */
import type { Envelope } from "../contract.ts";
import type { ToolEvent } from "../manifest/tool_messages.ts";
import { neutralizeControls } from "../base/terminal.ts";
import { fit } from "../base/text.ts";

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
  /** The call's wall-clock limit in seconds, if it has one. */
  readonly limitSec?: number;
  /**
   * What the tool last said of its progress, shown in its line: a `toolgate/1` progress message (`50%`, `3/10`,
   * its message), or the last line it wrote to stderr.
   */
  said?: string;
}

/** `/Zs` after the elapsed time of a call with a wall-clock limit of Z seconds; nothing without one. */
function limit(limitSec: number | undefined): string {
  return limitSec === undefined || !Number.isFinite(limitSec) ? "" : `/${limitSec}s`;
}

/**
 * The heartbeat's words, the message of `serve`'s MCP progress notifications while a tool runs: `running NAME
 * elapsed=Ys/Zs`, or `elapsed=Ys` for a call without a wall-clock limit. (A terminal shows the same figures in
 * the tool's progress line instead: see {@linkcode Progress}.)
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { heartbeatText } from "./progress.ts";
 * assert.equal(heartbeatText("exec", 30_200, 310), "running exec elapsed=30s/310s");
 * assert.equal(heartbeatText("build", 60_000), "running build elapsed=60s");
 * ```
 */
export function heartbeatText(name: string, elapsedMs: number, limitSec?: number): string {
  return `running ${name} elapsed=${Math.round(elapsedMs / 1000)}s${limit(limitSec)}`;
}

/** Clears the current terminal line. */
const CLEAR_LINE = "\r\x1b[2K";
/** Moves up one line and clears it: what erases the lines above the last of a drawn block. */
const CLEAR_LINE_ABOVE = "\x1b[1A\x1b[2K";
/** The most running tools drawn a line each; past it, one more line counts the others. */
const MAX_LINES = 8;

function elapsed(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/**
 * Shows the tools that are running.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { success } from "../contract.ts";
 * import { Progress } from "./progress.ts";
 * const written: string[] = [];
 * const progress = new Progress({ enabled: true, write: (text) => Promise.resolve(void written.push(text)) });
 * progress.start("call_1", "get_time");
 * progress.end("call_1", success({ iso8601: "2026-01-01T00:00:00Z" })); // once the call ran
 * await progress.close();
 * assert.match(written.join(""), /get_time/);
 * ```
 */
export class Progress {
  readonly #options: ProgressOptions;
  readonly #now: () => number;
  readonly #running = new Map<string, Running>();
  #timer?: ReturnType<typeof setInterval>;
  #queue: Promise<void> = Promise.resolve();
  /** How many lines the last drawing holds (0: none is on the terminal). */
  #drawn = 0;
  /** Questions on the terminal under way: the line is not drawn over them. */
  #held = 0;
  /** The model being asked, and since when: shown while no tool runs. */
  #waiting?: { readonly text: string; readonly since: number };

  constructor(options: ProgressOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * What the call `id` tells this progress as it runs (the executor's call options): a `toolgate/1` tool's
   * events and its tool's stderr lines. None when disabled, so that nothing is gathered that would not show.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Progress } from "./progress.ts";
   * const progress = new Progress({ enabled: false, write: () => Promise.resolve() });
   * assert.deepEqual(progress.listeners("call_1"), {});
   * ```
   */
  listeners(id: string): {
    onToolEvent?: (event: ToolEvent) => void;
    onStderrLine?: (line: string) => void;
  } {
    if (!this.#options.enabled) return {};
    return {
      onToolEvent: (event) => this.toolEvent(id, event),
      onStderrLine: (line) => this.toolStderr(id, line),
    };
  }

  /**
   * A call started; `limitSec` is its wall-clock limit, shown beside its elapsed time (none: no limit).
   *
   * @example
   * ```ts
   * import { Progress } from "./progress.ts";
   * const progress = new Progress({ enabled: false, write: () => Promise.resolve() });
   * progress.start("call_1", "exec", 310); // shows as `  running exec 0.0s/310s`
   * ```
   */
  start(id: string, name: string, limitSec?: number): void {
    if (!this.#options.enabled) return;
    this.#running.set(id, { name: neutralizeControls(name), started: this.#now(), limitSec });
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
    this.#write(`${this.#erase()}${line}`);
    if (this.#running.size === 0) this.#stop();
    else this.#draw();
  }

  /**
   * A `toolgate/1` tool's progress or log message for the call `id` (or an MCP server's, for its call): shown
   * after its name in the line (`50%` of a total, or `3` without one, and its message; a log message's text),
   * until the next one.
   *
   * @example
   * ```ts
   * import { Progress } from "./progress.ts";
   * const progress = new Progress({ enabled: false, write: () => Promise.resolve() });
   * progress.toolEvent("call_1", { kind: "progress", progress: 5, total: 10, message: "copying" });
   * ```
   */
  toolEvent(id: string, event: ToolEvent): void {
    if (!this.#options.enabled) return;
    const running = this.#running.get(id);
    if (!running) return;
    if (event.kind === "log") {
      // A log message (an MCP server's among them) is the line's text until the next message.
      running.said = neutralizeControls(event.message).replace(/\s+/g, " ").trim();
      return;
    }
    const amount = event.total !== undefined && event.total > 0
      ? `${Math.floor(Math.min(100, Math.max(0, event.progress / event.total * 100)))}%`
      : String(event.progress);
    running.said = neutralizeControls(event.message === undefined ? amount : `${amount} ${event.message}`)
      .replace(/\s+/g, " ");
  }

  /**
   * The last line the call `id`'s tool wrote to stderr (already made plain and masked by the executor): shown
   * after its time in its line, until the next one, in place of a bare timer.
   *
   * @example
   * ```ts
   * import { Progress } from "./progress.ts";
   * const progress = new Progress({ enabled: false, write: () => Promise.resolve() });
   * progress.toolStderr("call_1", "step 1/3");
   * ```
   */
  toolStderr(id: string, line: string): void {
    if (!this.#options.enabled) return;
    const running = this.#running.get(id);
    if (running) running.said = neutralizeControls(line).replace(/\s+/g, " ");
  }

  /**
   * Runs `ask` (a question on the terminal) with the line cleared and not redrawn until it is answered.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Progress } from "./progress.ts";
   * const progress = new Progress({ enabled: false, write: () => Promise.resolve() });
   * assert.equal(await progress.hold(() => Promise.resolve("answer")), "answer");
   * ```
   */
  async hold<T>(ask: () => Promise<T>): Promise<T> {
    if (!this.#options.enabled) return await ask();
    this.#held += 1;
    if (this.#drawn > 0) this.#write(this.#erase());
    await this.#queue;
    try {
      return await ask();
    } finally {
      this.#held -= 1;
      this.#draw();
    }
  }

  /**
   * The model is being asked: until {@linkcode Progress.doneWaiting}, the line says for whom and how long
   * (`waiting for MODEL at HOST, 3 s`), so that a slow or stuck endpoint shows as one.
   */
  waiting(model: string, host: string): void {
    if (!this.#options.enabled) return;
    this.#waiting = { text: neutralizeControls(`waiting for ${model} at ${host}`), since: this.#now() };
    this.#timer ??= setInterval(() => this.#draw(), this.#options.intervalMs ?? 200);
    this.#draw();
  }

  /** The model answered (or failed): the waiting line goes, leaving nothing behind. */
  doneWaiting(): void {
    if (!this.#options.enabled || this.#waiting === undefined) return;
    this.#waiting = undefined;
    if (this.#running.size > 0) return this.#draw();
    this.#stop();
    if (this.#drawn > 0) this.#write(this.#erase());
  }

  /** Redraws the line now (the timer does it on its own). */
  draw(): void {
    if (this.#options.enabled) this.#draw();
  }

  /** Clears the line, stops the timer, and waits for every write. */
  async close(): Promise<void> {
    this.#stop();
    this.#waiting = undefined;
    if (this.#drawn > 0) this.#write(this.#erase());
    this.#running.clear();
    await this.#queue;
  }

  #draw(): void {
    if (this.#held > 0) return;
    const now = this.#now();
    if (this.#running.size === 0) {
      if (this.#waiting === undefined) return;
      const seconds = Math.floor((now - this.#waiting.since) / 1000);
      this.#write(
        `${this.#erase() || CLEAR_LINE}${fit(`  ${this.#waiting.text}, ${seconds} s`, this.#columns)}`,
      );
      this.#drawn = 1;
      return;
    }
    // A line each, every one shorter than the terminal is wide: a wrapped line would throw the erase's count off.
    const running = [...this.#running.values()];
    const shown = running.length > MAX_LINES ? running.slice(0, MAX_LINES - 1) : running;
    const lines = shown.map((r) =>
      fit(
        `  running ${r.name} ${elapsed(now - r.started)}${limit(r.limitSec)}${
          r.said === undefined ? "" : ` ${r.said}`
        }`,
        this.#columns,
      )
    );
    if (shown.length < running.length) lines.push(`  and ${running.length - shown.length} more tools`);
    this.#write(`${this.#erase() || CLEAR_LINE}${lines.join("\n")}`);
    this.#drawn = lines.length;
  }

  /** What erases the drawn lines, leaving the cursor at the start of the first; none drawn: nothing. */
  #erase(): string {
    const text = this.#drawn === 0 ? "" : CLEAR_LINE + CLEAR_LINE_ABOVE.repeat(this.#drawn - 1);
    this.#drawn = 0;
    return text;
  }

  get #columns(): number {
    return Math.max(20, (this.#options.columns ?? 80) - 1);
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
