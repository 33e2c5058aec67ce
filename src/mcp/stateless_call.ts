/**
 * A `tools/call` of the 2026-07-28 revision: run through {@linkcode ToolService.callWithout} (the same approvals,
 * limits, audit and envelopes as a session's call), with whatever needs a person or the client's model asked by
 * input-required rounds, since the server has no session to send a request on:
 *
 * - an approval: before anything runs, an elicitation form (`input_rounds.ts`); the retry runs the call;
 * - a `store_secret` value: a URL elicitation of a page of toolgate's own (`secret_page.ts`), over HTTP;
 * - a running tool's own questions: the tool waits, and the retry brings it the answers (`question_rounds.ts`).
 *
 * Every round's state is signed, bound to the caller, the tool and the arguments, and good once. A tool that asks
 * what the client did not declare it can answer (`sampling`, `elicitation`) is refused before it runs, with the
 * revision's `MissingRequiredClientCapability` error.
 *
 * For a client of the tasks extension, a call still running after a moment goes on as a task (`tasks.ts`), and a
 * background `exec` is, as soon as its job runs, the task of that job (`job_tasks.ts`).
 *
 * One piece: a `tools/call` and a `prompts/get` that asks are the same walk of rounds over one waiting call (its
 * signed state issued and redeemed against one binding, its answer or its next questions, the moment after which
 * it goes on as a task); `StatelessCalls` holds the rounds, the waiting calls and the tasks that walk shares, and
 * each request's own part (the approval and secret rounds, the job task, the prompt's binding) is a few lines
 * over it. The rounds' signing is `input_rounds.ts`'s, the questions' `question_rounds.ts`'s, the tasks'
 * `tasks.ts`'s and `job_tasks.ts`'s.
 *
 * Not here: the checks every request passes (`stateless.ts`); the wire (`stateless_wire.ts`).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { McpError } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { LoggingLevel } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { isRecord } from "../contract.ts";
import { LOG_LEVELS } from "../manifest/tool_messages.ts";
import type { AskSecret } from "../run/store_secret.ts";
import type { QuestionHandlers } from "../run/tool_questions.ts";
import { carrierFromMeta } from "../run/tracing.ts";
import type { ToolService } from "./server.ts";
import { type CallNotification, toolEvents } from "./client_asks.ts";
import {
  APPROVAL_KEY,
  approvalAnswer,
  approvalRound,
  InputRequired,
  type RoundBinding,
  RoundStates,
} from "./input_rounds.ts";
import { type WaitingCall, WaitingCalls } from "./question_rounds.ts";
import type { SecretPages } from "./secret_page.ts";
import { declaresTasks, TASK_LIMITS, Tasks, TASKS_EXTENSION } from "./tasks.ts";
import { JobTasks } from "./job_tasks.ts";
import { after } from "../base/timer.ts";
import {
  answered,
  callerKey,
  META,
  rejected,
  type RequestId,
  STATELESS_ERRORS,
  type StatelessAnswer,
  type StatelessFrom,
} from "./stateless_wire.ts";

/** The key of a `store_secret` URL elicitation in `inputRequests` and `inputResponses`. */
export const SECRET_KEY = "toolgate_secret";

/** What a client must declare for a tool that asks: the user (a form), the model, its roots. */
const NEEDS: Record<string, string> = { user: "elicitation", model: "sampling", roots: "roots" };

/** What a round's state carries, beside its binding: the secret page or the waiting call it is about. */
type RoundData = { readonly page: string } | { readonly call: string };

function readData(data: string | undefined): RoundData | undefined {
  if (data === undefined) return undefined;
  const [kind, value] = [data.slice(0, data.indexOf(":")), data.slice(data.indexOf(":") + 1)];
  return kind === "page" ? { page: value } : kind === "call" ? { call: value } : undefined;
}

/**
 * The stateless calls of one connection (the stdio one, or the HTTP server): the states of their rounds, the
 * calls waiting for answers, and the secret pages (HTTP only).
 *
 * @example Not run as a doc test: it needs a ToolService (tests/mcp/stateless_test.ts drives one).
 * ```ts ignore
 * import { StatelessCalls } from "./stateless_call.ts";
 * const calls = new StatelessCalls(service, pages);
 * const answer = await calls.call(7, params, meta, { connection: "http", signal });
 * ```
 */
/** Whether a call may go on as a task: never, after a moment without a question, or always. */
type TaskMode = "no" | "after" | "always";

export class StatelessCalls {
  readonly #service: ToolService;
  readonly #pages?: SecretPages;
  readonly #rounds = new RoundStates();
  readonly #waiting = new WaitingCalls();
  readonly #tasks = new Tasks();
  readonly #jobTasks = new JobTasks();

  constructor(service: ToolService, pages?: SecretPages) {
    this.#service = service;
    this.#pages = pages;
  }

  /** The connection closes, or the server stops: every call waiting for answers ends. */
  close(): void {
    this.#waiting.stopAll();
    this.#tasks.stopAll();
    this.#jobTasks.clear();
  }

  /**
   * `tasks/get`, `tasks/update`, `tasks/cancel` of the tasks extension: refused (-32021) for a client that does
   * not declare it, and -32602 for a task that is not the caller's.
   */
  task(
    id: RequestId,
    method: string,
    params: Record<string, unknown>,
    meta: Record<string, unknown>,
    from: StatelessFrom,
  ): StatelessAnswer {
    const capabilities = meta[META.clientCapabilities] as Record<string, unknown>;
    if (!declaresTasks(capabilities)) {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.missingClientCapability,
        `Missing required client capability: ${method} needs the ${TASKS_EXTENSION} extension`,
        {
          requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
        },
      );
    }
    const caller = callerKey(from.connection, meta);
    const unknown = () => rejected(400, id, STATELESS_ERRORS.invalidParams, "Invalid params: no such task");
    // A background job's task first (its own ids), then a long call's.
    if (method === "tasks/get") {
      const task = this.#jobTasks.get(caller, params.taskId) ?? this.#tasks.get(caller, params.taskId);
      return task === undefined ? unknown() : answered(id, task);
    }
    const done = method === "tasks/update"
      ? this.#jobTasks.update(caller, params.taskId) ||
        this.#tasks.update(caller, params.taskId, params.inputResponses)
      : this.#jobTasks.cancel(caller, params.taskId) || this.#tasks.cancel(caller, params.taskId);
    return done ? answered(id, {}) : unknown();
  }

  /** Answers one `tools/call` (its `params`, its `_meta` checked already). */
  async call(
    id: RequestId,
    params: Record<string, unknown>,
    meta: Record<string, unknown>,
    from: StatelessFrom,
  ): Promise<StatelessAnswer> {
    const { name } = params;
    if (typeof name !== "string") {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidParams,
        "Invalid params: tools/call needs a tool name",
      );
    }
    const capabilities = meta[META.clientCapabilities] as Record<string, unknown>;
    const binding: RoundBinding = {
      caller: callerKey(from.connection, meta),
      tool: name,
      args: params.arguments,
    };
    // A waiting call (the one an answer is for, or a new one) goes on as this request's, as a task where it may.
    const goOn = (waiting: WaitingCall) =>
      this.#next(id, waiting, binding, from, logLevel(meta), this.#mayTask(name, capabilities, binding));
    const responses = isRecord(params.inputResponses) ? params.inputResponses : {};
    // An answer counts only with the state of the round that asked it: good once, for this caller and this call.
    let data: RoundData | undefined;
    let approval;
    if (params.requestState !== undefined) {
      const redeemed = this.#rounds.redeem(params.requestState, binding);
      if ("refused" in redeemed) {
        return rejected(400, id, STATELESS_ERRORS.invalidParams, `Invalid params: ${redeemed.refused}`);
      }
      data = readData(redeemed.data);
      if (APPROVAL_KEY in responses) approval = approvalAnswer(responses[APPROVAL_KEY]);
    }
    if (data !== undefined && "call" in data) {
      const waiting = this.#waiting.take(data.call);
      if (waiting === undefined) {
        return rejected(
          400,
          id,
          STATELESS_ERRORS.invalidParams,
          "Invalid params: the call this answers has ended",
        );
      }
      waiting.answer(responses);
      return await goOn(waiting);
    }
    const missing = this.#service.asks(name).map((asked) => NEEDS[asked])
      .filter((capability) => capability !== undefined && !isRecord(capabilities[capability]));
    if (missing.length > 0) {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.missingClientCapability,
        `Missing required client capability: ${name} asks what needs ${missing.join(" and ")}`,
        { requiredCapabilities: Object.fromEntries(missing.map((capability) => [capability, {}])) },
      );
    }
    // A tool the manifest runs only as a task: a client without the extension cannot call it.
    const support = this.#service.taskSupport(name);
    if (support === "required" && !declaresTasks(capabilities)) {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.missingClientCapability,
        `Missing required client capability: ${name} runs only as a task, which needs the ${TASKS_EXTENSION} extension`,
        { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      );
    }
    // A person is asked for an approval (by a round) only through a client that said it can show a form.
    const round = isRecord(capabilities.elicitation)
      ? approvalRound(this.#rounds, binding, approval)
      : undefined;
    const waiting = this.#waiting.start();
    // Answers that came before their questions (a first request may carry them) wait for them; never an approval.
    const { [APPROVAL_KEY]: _, [SECRET_KEY]: __, ...early } = data === undefined ? responses : {};
    waiting.answer(early);
    const secret = data !== undefined && "page" in data
      ? {
        page: data.page,
        accepted: isRecord(responses[SECRET_KEY]) && responses[SECRET_KEY].action === "accept",
      }
      : undefined;
    const token = progressToken(meta);
    const result = this.#service.callWithout(binding.caller, name, params.arguments, {
      signal: waiting.stop.signal,
      progress: token === undefined ? undefined : (value, text) => {
        const params = { progressToken: token, progress: value, message: text };
        waiting.notify?.({ method: "notifications/progress", params });
        return Promise.resolve();
      },
      onToolEvent: toolEvents(name, token, {}, (notification) => waiting.notify?.(notification)),
      trace: { parent: carrierFromMeta(meta), requestId: String(id) },
      ask: round?.ask,
      inputRound: round,
      askSecret: isRecord(capabilities.elicitation) && isRecord(capabilities.elicitation.url)
        ? this.#askSecret(binding, secret)
        : undefined,
      questions: waiting.questions(capabilities),
    }).then((done) => answered(id, done as Record<string, unknown>), (error) => this.#failed(id, error));
    waiting.result = result;
    // A client of the tasks extension: a background `exec` is a task as soon as its job runs.
    if (declaresTasks(capabilities) && this.#service.startsJob(name, params.arguments)) {
      const answer = await this.#next(id, waiting, binding, from, logLevel(meta));
      return this.#jobTask(answer, binding.caller) ?? answer;
    }
    return await goOn(waiting);
  }

  /**
   * Whether this request's call may go on as a task: its client declares the extension and has room for one, and
   * the manifest does not say the tool never runs as one (`"always"`: it runs only as a task, one even when it
   * ends at once; a round it asks first is answered as a round).
   */
  #mayTask(name: string, capabilities: Record<string, unknown>, binding: RoundBinding): TaskMode {
    if (!declaresTasks(capabilities) || !this.#tasks.room(binding.caller)) return "no";
    const support = this.#service.taskSupport(name);
    return support === "forbidden" ? "no" : support === "required" ? "always" : "after";
  }

  /**
   * Answers one `prompts/get` whose server may ask its user while the prompt is got (a form): the question is
   * asked by an input-required round, the get waiting between rounds as a call does (the server is never asked
   * twice), and goes on with the answers the client's retry brings with the round's state, which is bound to the
   * caller, the prompt and its arguments. `get` gets the prompt, its questions going to the handlers it is given;
   * `failed` is the answer to its failure.
   */
  async prompt(
    id: RequestId,
    params: Record<string, unknown>,
    meta: Record<string, unknown>,
    from: StatelessFrom,
    get: (questions: QuestionHandlers, signal: AbortSignal) => Promise<Record<string, unknown>>,
    failed: (error: unknown) => StatelessAnswer,
  ): Promise<StatelessAnswer> {
    // A prompt's name in the binding cannot be a tool's (no tool name holds a slash): no state of one answers the other.
    const binding: RoundBinding = {
      caller: callerKey(from.connection, meta),
      tool: `prompts/get:${String(params.name)}`,
      args: params.arguments,
    };
    if (params.requestState !== undefined) {
      const redeemed = this.#rounds.redeem(params.requestState, binding);
      if ("refused" in redeemed) {
        return rejected(400, id, STATELESS_ERRORS.invalidParams, `Invalid params: ${redeemed.refused}`);
      }
      const data = readData(redeemed.data);
      const waiting = data !== undefined && "call" in data ? this.#waiting.take(data.call) : undefined;
      if (waiting === undefined) {
        return rejected(
          400,
          id,
          STATELESS_ERRORS.invalidParams,
          "Invalid params: the prompt this answers has ended",
        );
      }
      waiting.answer(isRecord(params.inputResponses) ? params.inputResponses : {});
      return await this.#next(id, waiting, binding, from);
    }
    const waiting = this.#waiting.start();
    const capabilities = meta[META.clientCapabilities] as Record<string, unknown>;
    waiting.result = get(waiting.questions(capabilities), waiting.stop.signal).then(
      (result) => answered(id, result),
      failed,
    );
    return await this.#next(id, waiting, binding, from);
  }

  /**
   * Waits for the call's answer, or its next questions (answered as a round, the call left waiting); the client
   * going away meanwhile ends the call. For a client of the tasks extension (`asTask`), a call still running after
   * a moment without asking anything goes on as a task, its request answered: questions asked within the moment
   * are a round (the client answers them and the call goes on the same way), those asked later the task's.
   */
  async #next(
    id: RequestId,
    waiting: WaitingCall,
    binding: RoundBinding,
    from: StatelessFrom,
    level?: LoggingLevel,
    asTask: TaskMode = "no",
  ): Promise<StatelessAnswer> {
    const gone = () => waiting.stop.abort(from.signal.reason);
    from.signal.addEventListener("abort", gone, { once: true });
    // This round's request carries the call's notifications; log messages only at the level it named, if any.
    waiting.notify = (notification: CallNotification) => {
      if (
        notification.method === "notifications/message" &&
        (level === undefined || below(notification.params.level, level))
      ) return;
      from.notify?.(notification);
    };
    try {
      const next = waiting.next(waiting.result!);
      const step = asTask !== "no"
        ? await Promise.race([
          next,
          new Promise<undefined>((resolve) => after(TASK_LIMITS.afterMs, () => resolve(undefined))),
        ])
        : await next;
      if (step === undefined) {
        if (waiting.stop.signal.aborted) return await waiting.result!;
        return {
          status: 200,
          response: { jsonrpc: "2.0", id, result: this.#tasks.start(binding.caller, waiting) },
        };
      }
      // A tool that runs only as a task is one even when it ended at once.
      if ("done" in step && asTask === "always" && completes(step.done)) {
        return {
          status: 200,
          response: { jsonrpc: "2.0", id, result: this.#tasks.start(binding.caller, waiting) },
        };
      }
      // The call's answer goes to the request of this round: with its id, whichever round started the call.
      if ("done" in step) return { ...step.done, response: { ...step.done.response, id } };
      this.#waiting.wait(waiting, binding.caller);
      const requestState = this.#rounds.issue(binding, `call:${waiting.id}`);
      // The answer: with the id of the request that brought this round.
      return {
        status: 200,
        response: {
          jsonrpc: "2.0",
          id,
          result: { resultType: "input_required", inputRequests: step.ask, requestState },
        },
      };
    } finally {
      from.signal.removeEventListener("abort", gone);
      waiting.notify = undefined;
    }
  }

  /**
   * A background `exec`'s answer as the task of the job it started: undefined when it started none (refused, an
   * approval round, an error), and the answer goes as it is.
   */
  #jobTask(answer: StatelessAnswer, caller: string): StatelessAnswer | undefined {
    const { response } = answer;
    if (!("result" in response) || response.result.resultType !== "complete") return undefined;
    const started = response.result.structuredContent;
    if (response.result.isError === true || !isRecord(started) || started.background !== true) {
      return undefined;
    }
    const job = typeof started.job_id === "string"
      ? this.#service.callerJob(caller, started.job_id)
      : undefined;
    if (job === undefined) return undefined;
    return {
      status: 200,
      response: { jsonrpc: "2.0", id: response.id, result: this.#jobTasks.start(caller, job, started) },
    };
  }

  /** A call's rejection as its answer: a round to answer (an approval, a secret), or a JSON-RPC error. */
  #failed(id: RequestId, error: unknown): StatelessAnswer {
    if (error instanceof InputRequired) {
      const { inputRequests, requestState } = error;
      return {
        status: 200,
        response: {
          jsonrpc: "2.0",
          id,
          result: { resultType: "input_required", inputRequests, requestState },
        },
      };
    }
    if (error instanceof McpError) return rejected(200, id, error.code, error.message);
    return rejected(500, id, STATELESS_ERRORS.internal, `Internal error: ${(error as Error).message}`);
  }

  /**
   * A `store_secret` value by a URL elicitation round: the first round opens a page and answers its URL; the
   * retry takes what the person typed into that page (none when they declined, or typed nothing).
   */
  #askSecret(
    binding: RoundBinding,
    secret: { page: string; accepted: boolean } | undefined,
  ): AskSecret | undefined {
    const pages = this.#pages;
    if (pages === undefined) return undefined;
    return (request) => {
      if (secret !== undefined) {
        const value = secret.accepted ? pages.take(secret.page) : undefined;
        pages.close(secret.page);
        return Promise.resolve(value ?? null);
      }
      const page = pages.open(request);
      const message = `The model asks for the secret ${request.name} (for ${request.tools.join(", ")}). ` +
        "Open the page to type it: it goes to toolgate only, never to this client.";
      return Promise.reject(
        new InputRequired(
          {
            [SECRET_KEY]: {
              method: "elicitation/create",
              params: { mode: "url", message, url: page.url, elicitationId: page.id },
            },
          },
          this.#rounds.issue(binding, `page:${page.id}`),
        ),
      );
    };
  }
}

/** Is `answer` the call's own result (not a round to answer, not a JSON-RPC error)? */
function completes(answer: StatelessAnswer): boolean {
  const { response } = answer;
  return "result" in response && response.result.resultType !== "input_required";
}

/** The request's progress token, if any. */
function progressToken(meta: Record<string, unknown>): string | number | undefined {
  const token = meta.progressToken;
  return typeof token === "string" || typeof token === "number" ? token : undefined;
}

/** The log level the request names; none: the client wants no log messages at all (the revision's rule). */
function logLevel(meta: Record<string, unknown>): LoggingLevel | undefined {
  const level = meta[META.logLevel];
  return typeof level === "string" && (LOG_LEVELS as readonly string[]).includes(level)
    ? level as LoggingLevel
    : undefined;
}

function below(level: LoggingLevel, least: LoggingLevel): boolean {
  return LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf(least);
}
