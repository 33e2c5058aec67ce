/**
 * Tasks of the 2025-11-25 revision (experimental there) for session clients: a `tools/call` with `params.task`
 * is answered at once with a `CreateTaskResult` (`{task: {taskId, status, ttl, createdAt, lastUpdatedAt,
 * pollInterval}}`) and goes on; `tasks/get` says how it stands, `tasks/result` waits for its end and answers what
 * the call would have (its result, or its JSON-RPC error), `tasks/list` names the session's tasks, `tasks/cancel`
 * ends a running one (its whole tree; its audit line says `killed_by: "user"`). What the call asks meanwhile (an
 * approval, a tool's form or a question to the model) puts the task in `input_required` and goes out, marked with
 * the related task, on the stream of a `tasks/result` request of the task, as the revision says (the client calls
 * it once it sees `input_required`); its progress and log messages go there too, and nowhere while none is open.
 *
 * A task is its session's: another session is told `-32602`, as for an id that never was, and a session that
 * closes ends its running tasks. Limits are the stateless extension's ({@linkcode TASK_LIMITS}): an ended task is
 * kept `ttl` ms (the client may ask for less, never more), a session keeps at most `maxPerCaller` (its oldest
 * ended one goes first; with every one still running, a new one is refused).
 *
 * Not here: running the call (`server.ts`); the tasks of stateless callers (`tasks.ts`).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/index"
import type { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/shared/protocol"
import type { RequestOptions } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/protocol.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  type CallToolResult,
  CancelTaskRequestSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  McpError,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { after } from "../base/timer.ts";
import type { CallNotification, ClientChannel } from "./client_asks.ts";
import { TASK_LIMITS, type TaskStatus } from "./tasks.ts";

/** The `_meta` key that ties a message to its task. */
export const RELATED_TASK = "io.modelcontextprotocol/related-task";

/** What `serve` declares at `initialize`: tasks for `tools/call`, with `tasks/list` and `tasks/cancel`. */
export const SESSION_TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } } as const;

/** Where a call's questions and notifications go: its request's stream, or its task's `tasks/result`. */
export interface CallRoute {
  /** What the call asks the client through. */
  readonly channel: ClientChannel;
  /** The request the questions relate to (a task's route puts its `tasks/result` in its place). */
  readonly requestId: string | number;
  /** Aborted when the client cancels the call (the request, or the task). */
  readonly signal: AbortSignal;
  /** Sends one of the call's notifications. */
  readonly send: (notification: CallNotification) => Promise<void>;
}

interface SessionTask {
  readonly id: string;
  readonly owner: string;
  readonly createdAt: string;
  readonly ttl: number;
  readonly server: Server;
  lastUpdatedAt: string;
  status: TaskStatus;
  statusMessage?: string;
  /** Aborted by `tasks/cancel`, or the session's end: the call ends (its whole tree). */
  readonly stop: AbortController;
  /** Resolves when the call has ended, every process of it gone. */
  readonly settled: PromiseWithResolvers<void>;
  outcome?: { readonly result: CallToolResult } | { readonly error: McpError };
  /** The questions of the call waiting for an answer. */
  asking: number;
  /** The `tasks/result` requests open for the task: the newest carries its questions and notifications. */
  readonly readers: (string | number)[];
  reader: PromiseWithResolvers<void>;
}

const ended = (status: TaskStatus) => status === "completed" || status === "failed" || status === "cancelled";

/**
 * The tasks of every session of one `ToolService`, each its session's.
 *
 * @example Not run as a doc test: a task is a running call of a session (tests/mcp/two_eras_test.ts runs some).
 * ```ts ignore
 * import { SessionTasks } from "./session_tasks.ts";
 * const tasks = new SessionTasks();
 * tasks.install(server, session.id); // tasks/get, tasks/result, tasks/list, tasks/cancel
 * const created = tasks.start(server, session.id, request.params.task.ttl, (route) => run(route));
 * ```
 */
export class SessionTasks {
  readonly #tasks = new Map<string, SessionTask>();

  /** Answers `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` of the session `owner` on `server`. */
  install(server: Server, owner: string): void {
    server.setRequestHandler(
      GetTaskRequestSchema,
      (request) => this.#fields(this.#own(owner, request.params.taskId)),
    );
    server.setRequestHandler(ListTasksRequestSchema, () => ({
      tasks: [...this.#tasks.values()].filter((task) => task.owner === owner).map((task) =>
        this.#fields(task)
      ),
    }));
    server.setRequestHandler(CancelTaskRequestSchema, (request) => {
      const task = this.#own(owner, request.params.taskId);
      if (ended(task.status)) {
        throw new McpError(ErrorCode.InvalidParams, `Cannot cancel a task that has ended (${task.status})`);
      }
      this.#set(task, "cancelled", "the client cancelled the task");
      task.stop.abort();
      this.#forgetLater(task);
      return this.#fields(task);
    });
    server.setRequestHandler(GetTaskPayloadRequestSchema, async (request, extra) => {
      const task = this.#own(owner, request.params.taskId);
      task.readers.push(extra.requestId);
      task.reader.resolve();
      try {
        await Promise.race([
          task.settled.promise,
          new Promise((_, reject) =>
            extra.signal.addEventListener("abort", () => reject(extra.signal.reason), { once: true })
          ),
        ]);
      } finally {
        task.readers.splice(task.readers.indexOf(extra.requestId), 1);
        if (task.readers.length === 0) task.reader = Promise.withResolvers();
      }
      const outcome = task.outcome!;
      if ("error" in outcome) throw outcome.error;
      const { result } = outcome;
      return { ...result, _meta: { ...result._meta, [RELATED_TASK]: { taskId: task.id } } };
    });
  }

  /**
   * Starts `run` as a task of the session `owner` (its route the task's: its signal is `tasks/cancel`'s), and
   * answers its `CreateTaskResult`. `requestedTtl`, the client's wish, may shorten how long it is kept. Throws an
   * `McpError` when the session has {@linkcode TASK_LIMITS}'s `maxPerCaller` tasks running.
   */
  start(
    server: Server,
    owner: string,
    requestedTtl: number | null | undefined,
    run: (route: CallRoute) => Promise<CallToolResult>,
  ): { task: Record<string, unknown> } {
    if (!this.#room(owner)) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        `This session has ${TASK_LIMITS.maxPerCaller} tasks running: wait for one to end, or cancel one`,
      );
    }
    const now = new Date().toISOString();
    const ttl = typeof requestedTtl === "number" && requestedTtl > 0
      ? Math.min(Math.ceil(requestedTtl), TASK_LIMITS.ttlMs)
      : TASK_LIMITS.ttlMs;
    const task: SessionTask = {
      id: crypto.randomUUID(),
      owner,
      createdAt: now,
      lastUpdatedAt: now,
      ttl,
      server,
      status: "working",
      stop: new AbortController(),
      settled: Promise.withResolvers(),
      asking: 0,
      readers: [],
      reader: Promise.withResolvers(),
    };
    this.#tasks.set(task.id, task);
    run(this.#route(task)).then(
      (result) => {
        task.outcome = { result };
        if (!ended(task.status)) this.#set(task, "completed");
      },
      (error) => {
        task.outcome = {
          error: error instanceof McpError ? error : new McpError(ErrorCode.InternalError, String(error)),
        };
        if (!ended(task.status)) this.#set(task, "failed", task.outcome.error.message);
      },
    ).finally(() => {
      task.settled.resolve();
      this.#forgetLater(task);
    });
    return { task: this.#fields(task) };
  }

  /** The session `owner` closed: its running tasks end, and all of its tasks are forgotten (nobody can ask). */
  end(owner: string): void {
    for (const task of [...this.#tasks.values()]) {
      if (task.owner !== owner) continue;
      if (!ended(task.status)) this.#set(task, "cancelled", "the session closed");
      task.stop.abort();
      this.#tasks.delete(task.id);
    }
  }

  /** The task's route: its questions wait for a `tasks/result` and go out on its stream, marked with the task. */
  #route(task: SessionTask): CallRoute {
    const { server } = task;
    const related = <T extends Record<string, unknown> | undefined>(params: T): T =>
      ({
        ...params,
        _meta: { ...params?._meta as Record<string, unknown>, [RELATED_TASK]: { taskId: task.id } },
      }) as T;
    const channel = {
      getClientCapabilities: () => server.getClientCapabilities(),
      elicitInput: (params: Parameters<Server["elicitInput"]>[0], options?: RequestOptions) =>
        this.#ask(
          task,
          options,
          (reader) => server.elicitInput(related(params), { ...options, relatedRequestId: reader }),
        ),
      createMessage: (params: Parameters<Server["createMessage"]>[0], options?: RequestOptions) =>
        this.#ask(
          task,
          options,
          (reader) => server.createMessage(related(params), { ...options, relatedRequestId: reader }),
        ),
      listRoots: (params: Parameters<Server["listRoots"]>[0], options?: RequestOptions) =>
        this.#ask(
          task,
          options,
          (reader) => server.listRoots(related(params), { ...options, relatedRequestId: reader }),
        ),
      notification: (notification: Parameters<Server["notification"]>[0]) => this.#notify(task, notification),
    } as ClientChannel;
    return {
      channel,
      requestId: task.id,
      signal: task.stop.signal,
      send: (notification) => this.#notify(task, notification),
    };
  }

  /**
   * One question of the task's call: the task is `input_required` until every open question is answered; the
   * question goes out on the newest `tasks/result` of the task, once one comes (within the question's timeout).
   */
  async #ask<T>(
    task: SessionTask,
    options: RequestOptions | undefined,
    send: (reader: string | number) => Promise<T>,
  ): Promise<T> {
    task.asking += 1;
    if (task.status === "working") this.#set(task, "input_required");
    try {
      const signal = AbortSignal.any([
        task.stop.signal,
        ...(options?.signal ? [options.signal] : []),
        ...(options?.timeout ? [AbortSignal.timeout(options.timeout)] : []),
      ]);
      while (task.readers.length === 0) {
        await Promise.race([
          task.reader.promise,
          new Promise((_, reject) => {
            if (signal.aborted) reject(new Error("nobody came for the task's question"));
            signal.addEventListener(
              "abort",
              () => reject(new Error("nobody came for the task's question")),
              { once: true },
            );
          }),
        ]);
      }
      return await send(task.readers.at(-1)!);
    } finally {
      task.asking -= 1;
      if (task.asking === 0 && task.status === "input_required") this.#set(task, "working");
    }
  }

  /** One of the call's notifications, on the newest `tasks/result` of the task; none open: it is dropped. */
  async #notify(task: SessionTask, notification: Parameters<Server["notification"]>[0]): Promise<void> {
    const reader = task.readers.at(-1);
    if (reader === undefined) return;
    const params = {
      ...notification.params,
      _meta: { ...notification.params?._meta, [RELATED_TASK]: { taskId: task.id } },
    };
    await task.server.notification({ ...notification, params } as typeof notification, {
      relatedRequestId: reader,
    });
  }

  #set(task: SessionTask, status: TaskStatus, message?: string): void {
    task.status = status;
    task.statusMessage = message;
    task.lastUpdatedAt = new Date().toISOString();
    // The revision's optional push: to whoever listens on the session's own stream (stdio, or HTTP's GET).
    task.server.notification({ method: "notifications/tasks/status", params: this.#fields(task) }).catch(
      () => {},
    );
  }

  #fields(task: SessionTask): Record<string, unknown> & { taskId: string; status: TaskStatus } {
    return {
      taskId: task.id,
      status: task.status,
      ...(task.statusMessage === undefined ? {} : { statusMessage: task.statusMessage }),
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      ttl: task.ttl,
      pollInterval: TASK_LIMITS.pollIntervalMs,
    };
  }

  /** An ended task is kept its `ttl` from its end, then forgotten. */
  #forgetLater(task: SessionTask): void {
    after(task.ttl, () => {
      if (this.#tasks.get(task.id) === task && ended(task.status)) this.#tasks.delete(task.id);
    }, { keepAlive: false });
  }

  /** Can `owner` start one more task? Past the cap, its oldest ended task is forgotten to make room. */
  #room(owner: string): boolean {
    const own = [...this.#tasks.values()].filter((task) => task.owner === owner);
    if (own.length < TASK_LIMITS.maxPerCaller) return true;
    const done = own.find((task) => ended(task.status));
    if (done !== undefined) this.#tasks.delete(done.id);
    return done !== undefined;
  }

  /** The task `id` of `owner`; another session's, or none: `-32602`, the same words for both. */
  #own(owner: string, id: string): SessionTask {
    const task = this.#tasks.get(id);
    if (task === undefined || task.owner !== owner) {
      throw new McpError(ErrorCode.InvalidParams, "No such task");
    }
    return task;
  }
}
