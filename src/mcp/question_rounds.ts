/**
 * A running tool's own questions (a `toolgate/1` tool's `elicit`, `sample` and `roots`) for a caller of the 2026-07-28
 * revision, which the server cannot send a request to: the call goes on running, its question waits, and the
 * request is answered with an `InputRequiredResult` (the open questions in `inputRequests`, keyed by the ids the
 * tool gave them). The client's retry, with the round's signed state (`input_rounds.ts`), brings the answers:
 * they go to the waiting tool, and the retry is answered with the call's result or its next questions. The tool
 * is never run twice: the state names the waiting call, which belongs to the caller, the tool and the arguments it
 * was bound to. A call nobody comes back for is stopped after {@linkcode WAIT_LIMITS}'s `ttlMs` (its tree ends,
 * its audit line says so).
 *
 * Not here: the signed states (`input_rounds.ts`); the requests (`stateless.ts`); the questions' channel to the
 * tool (`run/tool_questions.ts`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import {
  type ElicitAnswer,
  type QuestionHandlers,
  rootsAnswer,
  type SamplingAnswer,
} from "../run/tool_questions.ts";
import { UserStop } from "../process/stop.ts";
import { after, type CancelTimer } from "../base/timer.ts";
import type { CallNotification } from "./client_asks.ts";
import type { StatelessAnswer } from "./stateless_wire.ts";

/**
 * How long a call waits for the client to come back with answers, and the most calls waiting at once: in all, and
 * of one caller (a waiting call holds its turn, as a session's call waiting for an answer does; a caller that
 * leaves rounds unanswered must not hold every turn it has).
 */
export const WAIT_LIMITS = { ttlMs: 10 * 60 * 1000, maxWaiting: 64, maxPerCaller: 2 } as const;

/** One question as the revision sends it to the client. */
export interface InputRequest {
  readonly method: string;
  readonly params: Record<string, unknown>;
}

/** What a waiting call comes to next: its answer, or the questions the client must answer first. */
export type NextStep<T> = { readonly done: T } | { readonly ask: Record<string, InputRequest> };

interface Open {
  readonly request: InputRequest;
  readonly answer: (response: unknown) => void;
}

/** The client's `ElicitResult` as the tool's answer (an unknown action is a decline). */
function elicitAnswer(response: unknown): ElicitAnswer {
  if (!isRecord(response) || response.action !== "accept") {
    return { action: isRecord(response) && response.action === "cancel" ? "cancel" : "decline" };
  }
  return isRecord(response.content) ? { action: "accept", content: response.content } : { action: "accept" };
}

/** The client's `CreateMessageResult` as the tool's answer; anything else is no answer. */
function samplingAnswer(response: unknown): SamplingAnswer {
  const content = isRecord(response) && Array.isArray(response.content) ? response.content[0] : undefined;
  const block = content ?? (isRecord(response) ? response.content : undefined);
  if (!isRecord(response) || !isRecord(block) || typeof block.type !== "string") {
    throw new Error("the client's answer is not a model's message");
  }
  return {
    role: "assistant",
    content: block as SamplingAnswer["content"],
    model: typeof response.model === "string" ? response.model : "unknown",
    ...(typeof response.stopReason === "string" ? { stopReason: response.stopReason } : {}),
  };
}

/**
 * One stateless call that may wait for answers between rounds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { WaitingCall } from "./question_rounds.ts";
 * const call = new WaitingCall();
 * const handlers = call.questions({ elicitation: {} });
 * const asked = handlers.user!({ message: "Name?", requestedSchema: { type: "object" } }, {
 *   tool: {} as never, signal: call.stop.signal, id: "user_name",
 * });
 * const first = await call.next(asked);
 * assert.ok("ask" in first && first.ask.user_name.method === "elicitation/create");
 * call.answer({ user_name: { action: "accept", content: { name: "Ada" } } });
 * assert.deepEqual(await call.next(asked), { done: { action: "accept", content: { name: "Ada" } } });
 * ```
 */
export class WaitingCall {
  /** The call's own id (a round's state names it). */
  readonly id: string = crypto.randomUUID();
  /** Ends the call: the client went away while it waited for it, or never came back. */
  readonly stop: AbortController = new AbortController();
  /** The call's answer, once it ends. */
  result?: Promise<StatelessAnswer>;
  /** Where the call's notifications go: the request of the round in progress (none between rounds). */
  notify?: (notification: CallNotification) => void;
  readonly #open = new Map<string, Open>();
  /** Answers given before their question was asked (a client's first request may carry them). */
  readonly #early = new Map<string, unknown>();
  #asked = 0;
  #changed = Promise.withResolvers<void>();
  #answers = Promise.withResolvers<void>();

  /** Resolves when the client next brings answers (a task's `tasks/update`), or the call ends. */
  answered(): Promise<void> {
    return Promise.race([
      this.#answers.promise,
      new Promise<void>((resolve) =>
        this.stop.signal.addEventListener("abort", () => resolve(), { once: true })
      ),
    ]);
  }

  /** The handlers of the questions the client said it can answer (`clientCapabilities`). */
  questions(capabilities: Record<string, unknown>): QuestionHandlers {
    const nobody = "this client did not declare the capability the question needs";
    return {
      nobody,
      ...(isRecord(capabilities.elicitation)
        ? {
          user: async (question, context) =>
            elicitAnswer(
              await this.#ask(context.id, {
                method: "elicitation/create",
                params: {
                  mode: "form",
                  message: question.message,
                  requestedSchema: question.requestedSchema,
                },
              }, context.signal),
            ),
        }
        : {}),
      ...(isRecord(capabilities.sampling)
        ? {
          model: async (request, context) =>
            samplingAnswer(
              await this.#ask(context.id, {
                method: "sampling/createMessage",
                params: request as unknown as Record<string, unknown>,
              }, context.signal),
            ),
        }
        : {}),
      ...(isRecord(capabilities.roots)
        ? {
          roots: async (context) =>
            rootsAnswer(await this.#ask(context.id, { method: "roots/list", params: {} }, context.signal)),
        }
        : {}),
    };
  }

  #ask(id: string | number | undefined, request: InputRequest, signal: AbortSignal): Promise<unknown> {
    this.#asked += 1;
    const key = id === undefined ? `question_${this.#asked}` : String(id);
    if (this.#early.has(key)) {
      const early = this.#early.get(key);
      this.#early.delete(key);
      return Promise.resolve(early);
    }
    const { promise, resolve, reject } = Promise.withResolvers<unknown>();
    const onAbort = () => {
      this.#open.delete(key);
      reject(signal.reason ?? new Error("the call ended"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    this.#open.set(key, {
      request,
      answer: (response) => {
        signal.removeEventListener("abort", onAbort);
        resolve(response);
      },
    });
    this.#changed.resolve();
    return promise;
  }

  /** The questions still waiting for their answers, by key (none once every one was answered). */
  pending(): Record<string, InputRequest> {
    return Object.fromEntries([...this.#open].map(([key, open]) => [key, open.request]));
  }

  /**
   * The client's answers, by key: each goes to its open question; answers to no open question wait for one. An
   * answer that is not an object is no answer: its question stays open, and is asked again.
   */
  answer(responses: Record<string, unknown>): void {
    this.#answers.resolve();
    this.#answers = Promise.withResolvers<void>();
    for (const [key, response] of Object.entries(responses)) {
      if (!isRecord(response)) continue;
      const open = this.#open.get(key);
      if (open === undefined) {
        this.#early.set(key, response);
        continue;
      }
      this.#open.delete(key);
      open.answer(response);
    }
  }

  /**
   * What comes next: the call's answer once `result` settles, or, when questions are open (and the call has not
   * ended in the same turn), those questions.
   */
  async next<T>(result: Promise<T>): Promise<NextStep<T>> {
    const settled = result.then((done) => ({ done }));
    for (;;) {
      if (this.#open.size > 0) {
        // Questions the tool wrote together come in the same turn: give the call one to ask them all, or to end.
        const ended = await Promise.race([
          settled,
          new Promise<undefined>((resolve) => after(0, () => resolve(undefined))),
        ]);
        if (ended !== undefined) return ended;
        return { ask: Object.fromEntries([...this.#open].map(([key, open]) => [key, open.request])) };
      }
      this.#changed = Promise.withResolvers<void>();
      const step = await Promise.race([settled, this.#changed.promise.then(() => undefined)]);
      if (step !== undefined) return step;
    }
  }
}

/**
 * The calls waiting for a client's answers, by id; each is stopped when nobody comes back in time.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { WaitingCalls } from "./question_rounds.ts";
 * const calls = new WaitingCalls();
 * const call = calls.start();
 * calls.wait(call, "http|client");
 * assert.equal(calls.take(call.id), call);
 * assert.equal(calls.take(call.id), undefined); // taken: the next round waits again
 * ```
 */
export class WaitingCalls {
  readonly #waiting = new Map<string, { call: WaitingCall; caller: string; cancel: CancelTimer }>();
  readonly #ttlMs: number;

  constructor(ttlMs: number = WAIT_LIMITS.ttlMs) {
    this.#ttlMs = ttlMs;
  }

  /** A new call. */
  start(): WaitingCall {
    return new WaitingCall();
  }

  /**
   * `call` of `caller` waits for the client: stopped unless it is taken back within the time; past a cap, the
   * oldest waiting call (of the caller, or of all) is stopped.
   */
  wait(call: WaitingCall, caller: string): void {
    const own = [...this.#waiting].filter(([, waiting]) => waiting.caller === caller).map(([id]) => id);
    while (own.length >= WAIT_LIMITS.maxPerCaller) {
      this.#end(own.shift()!, "its client left more calls waiting for answers than it may");
    }
    while (this.#waiting.size >= WAIT_LIMITS.maxWaiting) {
      const [oldest] = this.#waiting.keys();
      this.#end(oldest, "too many calls wait for their clients' answers");
    }
    const cancel = after(
      this.#ttlMs,
      () => this.#end(call.id, "its client did not come back with the answers in time"),
    );
    this.#waiting.set(call.id, { call, caller, cancel });
  }

  /** The call `id` waits for, taken back for a round; undefined when none does (ended, or taken already). */
  take(id: string): WaitingCall | undefined {
    const waiting = this.#waiting.get(id);
    if (waiting === undefined) return undefined;
    waiting.cancel();
    this.#waiting.delete(id);
    return waiting.call;
  }

  /** Stops every waiting call (the server stops). */
  stopAll(): void {
    for (const id of [...this.#waiting.keys()]) this.#end(id, "the server stops");
  }

  #end(id: string, why: string): void {
    const waiting = this.#waiting.get(id);
    if (waiting === undefined) return;
    waiting.cancel();
    this.#waiting.delete(id);
    waiting.call.stop.abort(new UserStop(why));
  }
}
