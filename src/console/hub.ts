/**
 * What the web console shows, kept as it happens: the calls in flight and finished, the background jobs, the
 * approval questions and the forms (a tool's, an MCP server's) waiting for an answer. Every string is masked by the run's redactor before it is kept, so
 * nothing the console sends can hold a secret value. Listeners hear of each change (the console's event stream).
 *
 * @module
 */
import type { Envelope } from "../contract.ts";
import type { JobView } from "../run/jobs.ts";
import type { Answer, ApprovalQuestion } from "../policy/policy.ts";
import { redactDeep, type Redactor } from "../state/redact.ts";
import type { CallSeen, CallWatch, FormQuestion, WatchedCall } from "../run/call_watch.ts";
import type { ElicitAnswer } from "../run/tool_questions.ts";
import { formContent } from "./form_answer.ts";
import type { ToolEvent } from "../manifest/tool_messages.ts";
import { plainLine } from "../base/terminal.ts";

/** The most finished calls kept (older ones are in the audit log). */
const KEPT_CALLS = 200;
/** How many lines of a job's output, and of a call's messages and stderr, the console shows. */
const TAIL_LINES = 20;
/** The most characters of one line shown (cut after redaction, so no secret is cut in two before it). */
const LINE_CHARS = 500;
/** A stderr line with no end yet is taken whole at this length. */
const PARTIAL_CHARS = 16_384;
/** The least time between two updates sent for a call's messages and stderr (a flood is not a flood of events). */
const EVENT_PUSH_MS = 150;

/** One call as the console shows it. */
export interface CallRow {
  readonly id: number;
  readonly tool: string;
  readonly caller: string;
  /** The arguments as JSON text, secrets masked. */
  readonly args: string;
  readonly startedAt: string;
  /** `running` while in flight, then `ok` or the failure's kind. */
  outcome: string;
  durationMs?: number;
  killedBy?: string;
  message?: string;
  /** The tool's progress and log messages (`toolgate/1`), the newest last. */
  events: string[];
  /** The last lines of the tool's stderr. */
  stderr: string[];
}

/** A background job as the console sees it: its owner's scope, and a snapshot (as `poll` answers). */
/** Where the console reads and stops jobs (the executor). */
export interface JobSource {
  jobList(): JobView[];
  stopJob(id: string, scope: string): boolean;
}

/** A question waiting for an answer in the console. */
interface Waiting {
  readonly id: number;
  readonly tool: string;
  readonly reason: string;
  readonly lines: readonly string[];
  readonly answer: (answer: Answer) => void;
}

/** A form waiting for the user's answer in the console (its text masked). */
interface WaitingForm {
  readonly id: number;
  readonly tool: string;
  readonly message: string;
  readonly requestedSchema: Record<string, unknown>;
  readonly answer: (answer: ElicitAnswer) => void;
}

/**
 * The console's state, and the {@linkcode CallWatch} that feeds it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConsoleHub } from "./hub.ts";
 * const hub = new ConsoleHub((text) => text.replaceAll("s3cret", "[REDACTED]"));
 * const seen = hub.started({ tool: "echo", caller: "model", args: { text: "s3cret" } });
 * seen.ended({ ok: true, result: null });
 * assert.equal(hub.state().calls[0].args, '{"text":"[REDACTED]"}');
 * ```
 */
export class ConsoleHub implements CallWatch {
  readonly #redact: Redactor;
  readonly #jobs?: JobSource;
  readonly #calls: CallRow[] = [];
  readonly #waiting = new Map<number, Waiting>();
  readonly #forms = new Map<number, WaitingForm>();
  /** How to stop each running call that can be stopped, by its row's id. */
  readonly #stops = new Map<number, () => void>();
  readonly #listeners = new Set<() => void>();
  #next = 1;
  #audited = 0;
  #pending?: ReturnType<typeof setTimeout>;

  /** A hub masking with `redact`, reading jobs from `jobs` when given. */
  constructor(redact: Redactor, jobs?: JobSource) {
    this.#redact = redact;
    this.#jobs = jobs;
  }

  /** Hears of every change; returns the function that stops listening. */
  listen(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** An audit line was written: the listeners are told, and the state's `audited` count moves on. */
  audited(): void {
    this.#audited++;
    this.changed();
  }

  /** Tells the listeners (a job started or ended, say). */
  changed(): void {
    for (const listener of this.#listeners) {
      try {
        listener();
      } catch {
        // A listener that went away is its own business.
      }
    }
  }

  /** {@inheritDoc CallWatch.started} */
  started(call: WatchedCall): CallSeen {
    const started = performance.now();
    const row: CallRow = {
      id: this.#next++,
      tool: this.#redact(call.tool),
      caller: this.#redact(call.caller),
      args: this.#redact(JSON.stringify(redactDeep(call.args ?? {}, this.#redact))),
      startedAt: new Date().toISOString(),
      outcome: "running",
      events: [],
      stderr: [],
    };
    if (call.stop !== undefined) this.#stops.set(row.id, call.stop);
    this.#calls.push(row);
    if (this.#calls.length > KEPT_CALLS) this.#calls.splice(0, this.#calls.length - KEPT_CALLS);
    this.changed();
    const decoder = new TextDecoder();
    let partial = "";
    const keep = (list: string[], line: string) => {
      const shown = this.#redact(line);
      list.push(shown.length > LINE_CHARS ? `${shown.slice(0, LINE_CHARS)}...` : shown);
      if (list.length > TAIL_LINES) list.splice(0, list.length - TAIL_LINES);
    };
    return {
      toolEvent: (event) => {
        keep(row.events, eventLine(event));
        this.#soon();
      },
      stderr: (chunk) => {
        // Whole lines only (a secret is masked in its line), or a line too long to wait for.
        partial += decoder.decode(chunk, { stream: true });
        const lines = partial.split("\n");
        partial = lines.pop() ?? "";
        if (partial.length > PARTIAL_CHARS) {
          lines.push(partial);
          partial = "";
        }
        if (lines.length === 0) return;
        // Made plain before the masking (no escape sequence, no control character), so none can hide a secret.
        for (const line of lines) keep(row.stderr, plainLine(shownPart(line)));
        this.#soon();
      },
      ended: (result) => {
        if (partial !== "") keep(row.stderr, plainLine(shownPart(partial)));
        partial = "";
        row.durationMs = Math.round(performance.now() - started);
        this.#stops.delete(row.id);
        const end = endOf(result);
        row.outcome = end.outcome;
        if (end.message !== undefined) row.message = this.#redact(end.message);
        if (end.killedBy !== undefined) row.killedBy = end.killedBy;
        this.changed();
      },
    };
  }

  /** Tells the listeners soon (at most every {@linkcode EVENT_PUSH_MS}): a call's messages may come in floods. */
  #soon(): void {
    if (this.#pending !== undefined) return;
    this.#pending = setTimeout(() => {
      this.#pending = undefined;
      this.changed();
    }, EVENT_PUSH_MS);
  }

  /** Stops the timer of an update still to be sent (the console closes). */
  close(): void {
    clearTimeout(this.#pending);
    this.#pending = undefined;
  }

  /** {@inheritDoc CallWatch.ask} */
  ask(question: ApprovalQuestion, signal: AbortSignal | undefined, timeoutMs: number): Promise<Answer> {
    return this.#waitFor(this.#waiting, signal, timeoutMs, (id, answer) => ({
      id,
      tool: this.#redact(question.tool),
      reason: this.#redact(question.reason),
      lines: question.lines.map(this.#redact),
      answer,
    }));
  }

  /** {@inheritDoc CallWatch.form} */
  form(question: FormQuestion, signal: AbortSignal | undefined, timeoutMs: number): Promise<ElicitAnswer> {
    return this.#waitFor(this.#forms, signal, timeoutMs, (id, answer) => ({
      id,
      tool: this.#redact(question.tool),
      message: this.#redact(question.message),
      requestedSchema: redactDeep(question.requestedSchema, this.#redact) as Record<string, unknown>,
      answer,
    }));
  }

  /**
   * Puts a question in `waiting` (made by `entry` with its id and the function that answers it) until it is
   * answered, withdrawn by `signal`, or `timeoutMs` passes: then the call is refused, as it would be with nobody
   * to ask.
   */
  #waitFor<A, E>(
    waiting: Map<number, E>,
    signal: AbortSignal | undefined,
    timeoutMs: number,
    entry: (id: number, answer: (answer: A) => void) => E,
  ): Promise<A> {
    return new Promise<A>((resolve, reject) => {
      if (signal?.aborted) return reject(new Error("the question was withdrawn"));
      const id = this.#next++;
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        waiting.delete(id);
        this.changed();
      };
      const onAbort = () => {
        settle();
        reject(new Error("the question was withdrawn"));
      };
      const timer = setTimeout(() => {
        settle();
        reject(new Error(`nobody answered in the console within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      waiting.set(
        id,
        entry(id, (answer) => {
          settle();
          resolve(answer);
        }),
      );
      this.changed();
    });
  }

  /**
   * Answers the waiting form `id` with `action` and, when accepted, `content` (each value checked against its
   * field): `answered`, `not waiting` (answered elsewhere, withdrawn), or why the answer does not fit the form.
   */
  answerForm(id: number, action: unknown, content: unknown): string {
    const waiting = this.#forms.get(id);
    if (waiting === undefined) return "not waiting";
    if (action === "decline" || action === "cancel") {
      waiting.answer({ action });
      return "answered";
    }
    if (action !== "accept") return "the action is accept, decline or cancel";
    const fitting = formContent(waiting.requestedSchema, content ?? {});
    if (typeof fitting === "string") return fitting;
    waiting.answer({ action: "accept", content: fitting });
    return "answered";
  }

  /** Answers the waiting question `id`; false when none waits by that id (answered elsewhere, withdrawn). */
  answer(id: number, answer: Answer): boolean {
    const waiting = this.#waiting.get(id);
    if (waiting === undefined) return false;
    waiting.answer(answer);
    return true;
  }

  /**
   * Stops the running call `id` as its user (its answer says `killed_by: "user"`); false when no call by that id
   * runs, or its caller cannot stop it.
   */
  stopCall(id: number): boolean {
    const stop = this.#stops.get(id);
    if (stop === undefined) return false;
    this.#stops.delete(id);
    stop();
    return true;
  }

  /** Stops a running job as its user; false when there is no such running job. */
  stopJob(id: string, scope: string): boolean {
    const stopped = this.#jobs?.stopJob(id, scope) ?? false;
    if (stopped) this.changed();
    return stopped;
  }

  /** Everything the console shows now but the audit log (only how many lines were written), secrets masked. */
  state(): {
    /** Each call, and whether the console can stop it now (its Stop button: running, and not stopped yet). */
    calls: (CallRow & { stoppable: boolean })[];
    approvals: { id: number; tool: string; reason: string; lines: readonly string[] }[];
    /** The forms waiting for the user: the tool, the message, the fields (MCP's `requestedSchema`). */
    forms: { id: number; tool: string; message: string; requestedSchema: Record<string, unknown> }[];
    jobs: Record<string, unknown>[];
    audited: number;
  } {
    const jobs = (this.#jobs?.jobList() ?? []).map((job) => ({
      scope: job.scope,
      ...redactDeep(job.snapshot(TAIL_LINES), this.#redact),
    }));
    return {
      calls: this.#calls.map((row) => ({ ...row, stoppable: this.#stops.has(row.id) })),
      approvals: [...this.#waiting.values()].map(({ id, tool, reason, lines }) => ({
        id,
        tool,
        reason,
        lines,
      })),
      forms: [...this.#forms.values()].map(({ id, tool, message, requestedSchema }) => ({
        id,
        tool,
        message,
        requestedSchema,
      })),
      jobs,
      audited: this.#audited,
    };
  }
}

/**
 * A tool's message as one line: `[level] message` (an MCP server's: `[level] ev/logger: message`) or
 * `progress 3/10 message`.
 */
function eventLine(event: ToolEvent): string {
  if (event.kind === "log") {
    return `[${event.level}] ${event.logger === undefined ? "" : `${event.logger}: `}${event.message}`;
  }
  const total = event.total === undefined ? "" : `/${event.total}`;
  return `progress ${event.progress}${total}${event.message === undefined ? "" : ` ${event.message}`}`;
}

/** How a call ended, as its row shows it: `ok` or the failure's kind, its message, and who stopped it. */
function endOf(result: Envelope | Error): { outcome: string; message?: string; killedBy?: string } {
  if (result instanceof Error) return { outcome: "error", message: result.message };
  if (result.ok) {
    const killed = (result.result as Record<string, unknown> | null | undefined)?.killed_by;
    return { outcome: "ok", killedBy: typeof killed === "string" ? killed : undefined };
  }
  const killed = result.killed_by ?? (result.metadata as Record<string, unknown> | undefined)?.killed_by;
  return {
    outcome: result.kind,
    message: result.message,
    killedBy: typeof killed === "string" ? killed : undefined,
  };
}

/** What a terminal shows of a line redrawn with carriage returns (a progress bar): its last drawing. */
function shownPart(line: string): string {
  return line.split("\r").filter((part) => part !== "").at(-1) ?? "";
}
