/**
 * The tasks of an upstream server's questions asked as tasks (a task-augmented `sampling/createMessage` or
 * `elicitation/create`): toolgate answers at once with the task, the server then polls `tasks/get` and fetches
 * `tasks/result` on toolgate's client. This store holds each task while the call that asked it runs, and no
 * longer: the task is forgotten when that call ends, and a server holds at most {@linkcode MAX_QUESTION_TASKS} of
 * them. A task cancelled by the server (`tasks/cancel`) stops its question's wait.
 *
 * Not here: who answers a question and how (`server_questions.ts`, which creates the tasks and stores their
 * answers), the protocol's `tasks/*` handlers (the SDK's, over this store).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/experimental/tasks/interfaces"
import type { TaskStore } from "npm:@modelcontextprotocol/sdk@1.32.2/experimental/tasks/interfaces.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ErrorCode, McpError, type Result, type Task } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";

/** The most question tasks one server holds at once (each is a question of a call in flight, which asks few). */
export const MAX_QUESTION_TASKS = 32;

/** One task: its state, its answer once given, what stops its question, and the call it belongs to. */
interface Held {
  task: Task;
  result?: Result;
  readonly stopped: AbortController;
  readonly owner: object;
}

/**
 * The tasks of one server's questions. {@linkcode QuestionTasks.open} creates one for a call in flight (its
 * `owner`), {@linkcode QuestionTasks.settle} stores its answer, {@linkcode QuestionTasks.forget} drops a call's
 * tasks when it ends; the rest is the SDK's {@linkcode TaskStore}, which its `tasks/*` handlers read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { QuestionTasks } from "./question_tasks.ts";
 * const tasks = new QuestionTasks();
 * const call = {};
 * const { task } = tasks.open(call, 60_000);
 * assert.equal((await tasks.getTask(task.taskId))?.status, "working");
 * tasks.settle(task.taskId, { action: "decline" });
 * assert.deepEqual(await tasks.getTaskResult(task.taskId), { action: "decline" });
 * tasks.forget(call);
 * assert.equal(await tasks.getTask(task.taskId), null);
 * ```
 */
export class QuestionTasks implements TaskStore {
  readonly #held = new Map<string, Held>();

  /**
   * A new working task of `owner`'s (a call in flight) living at most `ttl` ms as the server sees it (toolgate
   * forgets it sooner, when the call ends); its `signal` is aborted when the server cancels it. Refused when the
   * server holds {@linkcode MAX_QUESTION_TASKS} already.
   */
  open(owner: object, ttl: number): { readonly task: Task; readonly signal: AbortSignal } {
    if (this.#held.size >= MAX_QUESTION_TASKS) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        `toolgate refuses the server's question as a task: it holds ${MAX_QUESTION_TASKS} tasks already`,
      );
    }
    const now = new Date().toISOString();
    const task: Task = {
      taskId: crypto.randomUUID(),
      status: "working",
      ttl,
      createdAt: now,
      lastUpdatedAt: now,
      pollInterval: 1000,
    };
    const stopped = new AbortController();
    this.#held.set(task.taskId, { task, stopped, owner });
    return { task: { ...task }, signal: stopped.signal };
  }

  /** Stores the answer of task `taskId` (`completed`), or says why it has none (`failed`); a task ended stays so. */
  settle(taskId: string, result: Result | Error): void {
    const held = this.#held.get(taskId);
    if (held === undefined || terminal(held.task.status)) return;
    const failed = result instanceof Error;
    held.task = {
      ...held.task,
      status: failed ? "failed" : "completed",
      ...(failed ? { statusMessage: result.message } : {}),
      lastUpdatedAt: new Date().toISOString(),
    };
    if (!failed) held.result = result;
  }

  /** Drops the tasks of `owner` (its call ended): their questions stop and the server finds them no more. */
  forget(owner: object): void {
    for (const [id, held] of this.#held) {
      if (held.owner !== owner) continue;
      held.stopped.abort(new Error("the call that asked ended"));
      this.#held.delete(id);
    }
  }

  /** Not used: toolgate opens its tasks itself ({@linkcode QuestionTasks.open}), knowing the call that asks. */
  createTask(): Promise<Task> {
    return Promise.reject(new McpError(ErrorCode.InvalidRequest, "toolgate opens its question tasks itself"));
  }

  /** The task `taskId`, or `null` when toolgate holds none by that id. */
  getTask(taskId: string): Promise<Task | null> {
    const held = this.#held.get(taskId);
    return Promise.resolve(held === undefined ? null : { ...held.task });
  }

  /** Stores the result of task `taskId` (the SDK's path; toolgate's own is {@linkcode QuestionTasks.settle}). */
  storeTaskResult(taskId: string, status: "completed" | "failed", result: Result): Promise<void> {
    const held = this.#held.get(taskId);
    if (held === undefined || terminal(held.task.status)) return Promise.resolve();
    held.task = { ...held.task, status, lastUpdatedAt: new Date().toISOString() };
    held.result = result;
    return Promise.resolve();
  }

  /** The answer of task `taskId`, once it completed. */
  getTaskResult(taskId: string): Promise<Result> {
    const held = this.#held.get(taskId);
    if (held?.result === undefined) {
      return Promise.reject(new McpError(ErrorCode.InvalidParams, `task ${taskId} has no result`));
    }
    return Promise.resolve(held.result);
  }

  /** Sets the status of task `taskId`; `cancelled` (the server's `tasks/cancel`) also stops its question. */
  updateTaskStatus(taskId: string, status: Task["status"], statusMessage?: string): Promise<void> {
    const held = this.#held.get(taskId);
    if (held === undefined || terminal(held.task.status)) return Promise.resolve();
    held.task = {
      ...held.task,
      status,
      ...(statusMessage === undefined ? {} : { statusMessage }),
      lastUpdatedAt: new Date().toISOString(),
    };
    if (status === "cancelled") held.stopped.abort(new Error("the server cancelled the task"));
    return Promise.resolve();
  }

  /** Every task toolgate holds for the server, in one page. */
  listTasks(): Promise<{ tasks: Task[] }> {
    return Promise.resolve({ tasks: [...this.#held.values()].map((held) => ({ ...held.task })) });
  }
}

function terminal(status: Task["status"]): boolean {
  return status === "completed" || status === "failed" || status === "cancelled";
}
