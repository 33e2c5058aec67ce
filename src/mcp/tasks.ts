/**
 * The tasks extension of the 2026-07-28 revision (`io.modelcontextprotocol/tasks`) for stateless callers that
 * declare it: a `tools/call` still running after {@linkcode TASK_LIMITS}'s `afterMs` without asking anything is
 * answered as a task (`resultType: "task"`, its id and status) and goes on (`stateless_call.ts` decides); `tasks/get` says how it stands (its result or error once
 * it ended, its open questions while it waits for input), `tasks/update` brings the answers to its questions, and
 * `tasks/cancel` ends it (its whole tree; its audit line says `killed_by: "user"`). A task is its caller's: another
 * caller is told `-32602`, as for an id that never was. An ended task is kept `ttlMs` (its result with it), then
 * forgotten; a caller keeps at most `maxPerCaller` (the oldest ended one goes first; a running one is never
 * dropped: past the cap of running tasks, a call stays a plain call).
 *
 * Not here: running the call (`stateless_call.ts`), its questions (`question_rounds.ts`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import { UserStop } from "../process/stop.ts";
import { after } from "../base/timer.ts";
import type { InputRequest, WaitingCall } from "./question_rounds.ts";
import type { StatelessAnswer } from "./stateless_wire.ts";

/** The extension's name, as clients declare it under `clientCapabilities.extensions`. */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** When a call becomes a task, how long an ended task is kept, how often to poll, the most tasks per caller. */
export const TASK_LIMITS = {
  afterMs: 500,
  ttlMs: 30 * 60 * 1000,
  pollIntervalMs: 1000,
  maxPerCaller: 32,
} as const;

/** A task's status, as the extension names them. */
export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

interface Task {
  readonly id: string;
  readonly caller: string;
  readonly call: WaitingCall;
  readonly createdAt: string;
  lastUpdatedAt: string;
  status: TaskStatus;
  result?: Record<string, unknown>;
  error?: unknown;
  inputRequests?: Record<string, InputRequest>;
}

/**
 * Does the client declare the tasks extension (in `clientCapabilities.extensions`)?
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { declaresTasks } from "./tasks.ts";
 * assert.ok(declaresTasks({ extensions: { "io.modelcontextprotocol/tasks": {} } }));
 * assert.ok(!declaresTasks({ elicitation: {} }));
 * ```
 */
export function declaresTasks(capabilities: Record<string, unknown>): boolean {
  return isRecord(capabilities.extensions) && isRecord(capabilities.extensions[TASKS_EXTENSION]);
}

/**
 * The tasks of one connection's stateless callers.
 *
 * @example Not run as a doc test: a task is a running call (tests/mcp/stateless_tasks_test.ts runs some).
 * ```ts ignore
 * import { Tasks } from "./tasks.ts";
 * const tasks = new Tasks();
 * const created = tasks.start("http|client", waiting); // the CreateTaskResult's fields
 * tasks.get("http|client", created.taskId);
 * ```
 */
export class Tasks {
  readonly #tasks = new Map<string, Task>();

  /** Can `caller` start one more task (its running tasks under the cap)? */
  room(caller: string): boolean {
    const own = [...this.#tasks.values()].filter((task) => task.caller === caller);
    if (own.length < TASK_LIMITS.maxPerCaller) return true;
    const ended = own.find((task) => task.status !== "working" && task.status !== "input_required");
    if (ended !== undefined) this.#tasks.delete(ended.id);
    return ended !== undefined;
  }

  /** `call` of `caller`, running, as a task: the fields of its `CreateTaskResult`. */
  start(caller: string, call: WaitingCall): Record<string, unknown> {
    const now = new Date().toISOString();
    const task: Task = {
      id: crypto.randomUUID(),
      caller,
      call,
      createdAt: now,
      lastUpdatedAt: now,
      status: "working",
    };
    this.#tasks.set(task.id, task);
    void this.#follow(task);
    return { resultType: "task", ...this.#fields(task) };
  }

  /** The call's questions and its end, as the task's status. */
  async #follow(task: Task): Promise<void> {
    for (;;) {
      const step = await task.call.next(task.call.result!);
      if ("ask" in step) {
        // Taken before the open questions are read: an answer that comes from here on wakes this wait, and one
        // that came before it (while the step was being made) is seen in them, never lost between the two.
        const answered = task.call.answered();
        const open = task.call.pending();
        const asked = Object.keys(step.ask).filter((key) => key in open);
        if (asked.length === 0) continue;
        this.#set(task, "input_required");
        task.inputRequests = Object.fromEntries(asked.map((key) => [key, step.ask[key]]));
        if (asked.length === Object.keys(step.ask).length) await Promise.race([answered, task.call.result]);
        // Answered in part: the task waits on for the rest, which alone it still shows.
        const pending = task.call.pending();
        task.inputRequests = Object.keys(pending).length > 0 ? pending : undefined;
        if (task.inputRequests === undefined && task.status === "input_required") this.#set(task, "working");
        continue;
      }
      this.#ended(task, step.done);
      return;
    }
  }

  #ended(task: Task, done: StatelessAnswer): void {
    if (task.status === "cancelled") return;
    task.inputRequests = undefined;
    const { response } = done;
    if ("error" in response) {
      task.error = response.error;
      this.#set(task, "failed");
    } else if (response.result.resultType === "input_required") {
      // An approval or a secret cannot be asked of a task: the call ended there.
      task.error = {
        code: -32603,
        message: "the call needs an approval or a secret, which a task cannot ask",
      };
      this.#set(task, "failed");
    } else {
      task.result = response.result;
      this.#set(task, "completed");
    }
    after(TASK_LIMITS.ttlMs, () => this.#tasks.delete(task.id), { keepAlive: false });
  }

  #set(task: Task, status: TaskStatus): void {
    task.status = status;
    task.lastUpdatedAt = new Date().toISOString();
  }

  #fields(task: Task): Record<string, unknown> {
    return {
      taskId: task.id,
      status: task.status,
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      ttlMs: TASK_LIMITS.ttlMs,
      pollIntervalMs: TASK_LIMITS.pollIntervalMs,
    };
  }

  /** `tasks/get`: the task's fields, with its result, error or open questions; undefined for no task of `caller`. */
  get(caller: string, id: unknown): Record<string, unknown> | undefined {
    const task = this.#own(caller, id);
    if (task === undefined) return undefined;
    return {
      ...this.#fields(task),
      ...(task.result === undefined ? {} : { result: task.result }),
      ...(task.error === undefined ? {} : { error: task.error }),
      ...(task.inputRequests === undefined ? {} : { inputRequests: task.inputRequests }),
    };
  }

  /** `tasks/update`: answers to the task's open questions; false for no task of `caller`. */
  update(caller: string, id: unknown, responses: unknown): boolean {
    const task = this.#own(caller, id);
    if (task === undefined) return false;
    if (isRecord(responses)) task.call.answer(responses);
    return true;
  }

  /** `tasks/cancel`: ends a running task (its tree); an ended one stays as it is. False for no task of `caller`. */
  cancel(caller: string, id: unknown): boolean {
    const task = this.#own(caller, id);
    if (task === undefined) return false;
    if (task.status === "working" || task.status === "input_required") {
      this.#set(task, "cancelled");
      task.inputRequests = undefined;
      task.call.stop.abort(new UserStop("the client cancelled the task"));
      after(TASK_LIMITS.ttlMs, () => this.#tasks.delete(task.id), { keepAlive: false });
    }
    return true;
  }

  /** Ends every running task (the connection closes, or the server stops). */
  stopAll(): void {
    for (const task of this.#tasks.values()) task.call.stop.abort(new UserStop("the server stops"));
  }

  #own(caller: string, id: unknown): Task | undefined {
    const task = typeof id === "string" ? this.#tasks.get(id) : undefined;
    return task?.caller === caller ? task : undefined;
  }
}
