/**
 * A `toolgate/1` tool on a worker asks its caller, as a local tool asks toolgate: the worker hands the call's
 * questions, log and progress to the caller over the pool (`relay_messages.ts`), and the caller answers each
 * question through its own handlers (the terminal and the run's model, or the MCP client), approval policy
 * included, exactly as for a tool it runs itself; the answer goes back to the worker and on to the tool. Both
 * sides sign what they send with the pool's key and heed only what verifies: a question or an event from the
 * worker that runs the call, an answer naming the call, the worker and the question's nonce, once.
 *
 * @module
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { RelayTarget } from "../run/tool_pool.ts";
import {
  parseMessage,
  PROTOCOL_LIMITS,
  type ToolEvent,
  type ToolQuestion,
} from "../manifest/tool_messages.ts";
import {
  type ElicitAnswer,
  QuestionDesk,
  type QuestionHandlers,
  rootsAnswer,
  type SamplingAnswer,
} from "../run/tool_questions.ts";
import { isRecord } from "../contract.ts";
import { encode, POOL } from "./protocol.ts";
import { type AnswerMessage, type AskMessage, type EventMessage, readAnswer } from "./relay_messages.ts";
import { type PoolSigningKey, signed, verified } from "./signing.ts";

/** What a worker's call gives its executor: the handlers that ask the caller, and the relay of its events. */
export interface RelayedCall {
  readonly questions: QuestionHandlers;
  readonly onToolEvent: (event: ToolEvent) => void;
  /** Resolves once every event so far went out (before the call's result, so none comes after it). */
  sent(): Promise<void>;
}

/** A call of this worker, as the relay needs it. */
interface CallAddress {
  readonly id: string;
  readonly reply: string;
}

/**
 * The worker's side: asks each call's caller, and takes the caller's answers from the worker's control subject.
 *
 * @example
 * ```ts ignore
 * import { WorkerRelay } from "./question_relay.ts";
 * const relay = new WorkerRelay({ nc, key, name: "build-1" });
 * const { questions, onToolEvent } = relay.forCall(call);
 * // executor.run(prepared, { questions, onToolEvent }); and on the control subject: await relay.receive(data)
 * ```
 */
export class WorkerRelay {
  readonly #options: { readonly nc: NatsConnection; readonly key: PoolSigningKey; readonly name: string };
  /** The questions waiting for their answer, by nonce. */
  readonly #waiting = new Map<
    string,
    { readonly id: string; readonly settle: (answer: AnswerMessage) => void }
  >();

  constructor(options: { readonly nc: NatsConnection; readonly key: PoolSigningKey; readonly name: string }) {
    this.#options = options;
  }

  /** The handlers and the event relay of one call. */
  forCall(call: CallAddress): RelayedCall {
    const { nc, key, name } = this.#options;
    let count = 0;
    // One after the other: the caller heeds only an event newer than the last, so none may overtake another.
    let chain = Promise.resolve();
    const onToolEvent = (event: ToolEvent) => {
      const n = ++count;
      const { kind, ...fields } = event;
      chain = chain.then(async () => {
        const message: EventMessage = await signed(key, "reply", {
          t: "event",
          id: call.id,
          worker: name,
          n,
          event: { type: kind, ...fields },
        });
        if (!nc.isClosed()) nc.publish(call.reply, encode(message));
      }).catch(() => {});
    };
    const questions: QuestionHandlers = {
      user: async (question, { signal, id }) =>
        asElicitAnswer(await this.#ask(call, { type: "elicit", ...question }, signal, id)),
      model: async (request, { signal, id }) =>
        asSamplingAnswer(await this.#ask(call, { type: "sample", ...request }, signal, id)),
      roots: async ({ signal, id }) => rootsAnswer(await this.#ask(call, { type: "roots" }, signal, id)),
    };
    return { questions, onToolEvent, sent: () => chain };
  }

  /**
   * One question to the caller: its answer, or an error the tool reads (the caller is gone, refused, the call
   * ended). The question goes with the tool's own id for it (`id`; the nonce where it has none), which the caller
   * shows its own client (an input-required round's key), and the nonce, which its answer names.
   */
  async #ask(
    call: CallAddress,
    question: Record<string, unknown>,
    signal: AbortSignal,
    id?: string | number,
  ): Promise<unknown> {
    const { nc, key, name } = this.#options;
    if (signal.aborted) throw new Error("the call ended before its caller answered");
    const nonce = crypto.randomUUID();
    const answered = Promise.withResolvers<AnswerMessage>();
    this.#waiting.set(nonce, { id: call.id, settle: answered.resolve });
    const ended = Promise.withResolvers<never>();
    const onAbort = () => ended.reject(new Error("the call ended before its caller answered"));
    signal.addEventListener("abort", onAbort, { once: true });
    ended.promise.catch(() => {});
    try {
      const ask: AskMessage = await signed(key, "reply", {
        t: "ask",
        id: call.id,
        worker: name,
        nonce,
        question: { ...question, id: id ?? nonce },
      });
      try {
        await nc.request(call.reply, encode(ask), { timeout: POOL.answerMs });
      } catch {
        throw new Error(
          "the caller did not take the question: it is gone, or its toolgate cannot relay questions",
        );
      }
      const answer = await Promise.race([answered.promise, ended.promise]);
      if (answer.error !== undefined) throw new Error(answer.error);
      return answer.answer;
    } finally {
      this.#waiting.delete(nonce);
      signal.removeEventListener("abort", onAbort);
    }
  }

  /**
   * A message on the control subject: when it is an answer signed with the pool's key to a question waiting
   * here (its call, this worker, its nonce), that question has its answer. Whether it was an answer at all.
   */
  async receive(data: Uint8Array): Promise<boolean> {
    const answer = readAnswer(data);
    if (answer === undefined) return false;
    if (!await verified(this.#options.key, "answer", { ...answer })) return true;
    const waiting = this.#waiting.get(answer.nonce);
    if (waiting === undefined || waiting.id !== answer.id || answer.worker !== this.#options.name) {
      return true;
    }
    // Once: a second answer to the same question (a replay) finds nothing waiting.
    this.#waiting.delete(answer.nonce);
    waiting.settle(answer);
    return true;
  }
}

/** A form's answer as the caller sent it, or an error when it is not one. */
function asElicitAnswer(value: unknown): ElicitAnswer {
  if (isRecord(value) && (value.action === "decline" || value.action === "cancel")) {
    return { action: value.action };
  }
  if (
    isRecord(value) && value.action === "accept" && (value.content === undefined || isRecord(value.content))
  ) {
    return value.content === undefined ? { action: "accept" } : { action: "accept", content: value.content };
  }
  throw new Error("the caller's answer is not a form's answer");
}

/** The model's answer as the caller sent it, or an error when it is not one. */
function asSamplingAnswer(value: unknown): SamplingAnswer {
  if (
    isRecord(value) && value.role === "assistant" && isRecord(value.content) &&
    typeof value.content.type === "string" && typeof value.model === "string"
  ) {
    return value as unknown as SamplingAnswer;
  }
  throw new Error("the caller's answer is not the model's answer");
}

/** What a {@linkcode CallerRelay} is given. */
export interface CallerRelayOptions {
  /** The call's id. */
  readonly id: string;
  /** Where the call's tool messages go (absent: every question is answered with an error, events dropped). */
  readonly target?: RelayTarget;
  /** The pool's key: every answer is signed with it. */
  readonly key: PoolSigningKey;
  /** Publishes on the pool's connection. */
  readonly publish: (subject: string, data: Uint8Array) => void;
}

/**
 * The caller's side, for one call: its worker's events go to the target's `onToolEvent`, its questions to the
 * target's handlers (through a {@linkcode QuestionDesk}, as a local tool's do), and each answer, signed, to the
 * worker's control subject.
 *
 * @example
 * ```ts ignore
 * import { CallerRelay } from "./question_relay.ts";
 * const relay = new CallerRelay({ id, target, key, publish: (subject, data) => nc.publish(subject, data) });
 * // relay.event(message); relay.ask(message, control); ... relay.close();
 * ```
 */
export class CallerRelay {
  readonly #options: CallerRelayOptions;
  readonly #desk?: QuestionDesk;
  /** Where each open question's answer goes, by nonce. */
  readonly #open = new Map<string, { readonly worker: string; readonly control: string }>();
  /** The nonce of each open question, by the id its desk knows it by (the tool's own, or the nonce). */
  readonly #nonces = new Map<string | number, string>();
  readonly #asked = new Set<string>();
  #lastEvent = 0;
  #events = 0;

  constructor(options: CallerRelayOptions) {
    this.#options = options;
    const target = options.target;
    if (target !== undefined) {
      this.#desk = new QuestionDesk({
        tool: target.tool,
        handlers: target.questions,
        scrub: target.scrub,
        write: (bytes) => this.#answer(bytes),
      });
    }
  }

  /**
   * A question or an event on the call's reply subject (its signature checked), heeded only from the worker that
   * runs the call (`running`); a question's receipt (the answer to its request) says it is being asked.
   */
  take(
    message: AskMessage | EventMessage,
    running: { readonly worker: string; readonly control: string } | undefined,
    msg: { respond(data: Uint8Array): boolean },
  ): void {
    if (running === undefined || running.worker !== message.worker) return;
    if (message.t === "event") return this.event(message);
    msg.respond(encode({}));
    this.ask(message, running.control);
  }

  /** An event of the worker that runs the call (its signature checked): passed on once, in order. */
  event(message: EventMessage): void {
    if (message.n <= this.#lastEvent) return;
    this.#lastEvent = message.n;
    if (++this.#events > PROTOCOL_LIMITS.maxMessages) return;
    const read = parseMessage(JSON.stringify(message.event));
    if (!read.ok) return;
    const line = read.message;
    // The caller's own redaction is the target's `onToolEvent`'s (the executor's, as for a local call).
    if (line.type === "log") {
      this.#options.target?.onToolEvent?.({
        kind: "log",
        level: line.level,
        message: line.message,
        ...(line.data === undefined ? {} : { data: line.data }),
      });
    } else if (line.type === "progress") {
      this.#options.target?.onToolEvent?.({
        kind: "progress",
        progress: line.progress,
        ...(line.total === undefined ? {} : { total: line.total }),
        ...(line.message === undefined ? {} : { message: line.message }),
      });
    }
  }

  /** A question of the worker that runs the call (its signature checked), answered on `control`. */
  ask(message: AskMessage, control: string): void {
    if (this.#asked.has(message.nonce)) return;
    this.#asked.add(message.nonce);
    this.#open.set(message.nonce, { worker: message.worker, control });
    const refuse = (reason: string) => void this.#send(message.nonce, { error: reason });
    if (this.#asked.size > PROTOCOL_LIMITS.maxQuestions) return refuse("the call asked too many questions");
    const read = parseMessage(JSON.stringify(message.question));
    if (
      !read.ok ||
      (read.message.type !== "elicit" && read.message.type !== "sample" && read.message.type !== "roots")
    ) {
      return refuse("the worker relayed something that is not a question");
    }
    const line = read.message;
    // The tool's own id, as a local tool's question has it; the nonce where another open question holds that id.
    const id = this.#nonces.has(line.id) ? message.nonce : line.id;
    const question: ToolQuestion = line.type === "elicit"
      ? { asks: "user", id, message: line.message, requestedSchema: line.requestedSchema }
      : line.type === "sample"
      ? { asks: "model", id, request: line.request }
      : { asks: "roots", id };
    const target = this.#options.target;
    if (this.#desk === undefined || target === undefined) {
      return refuse("this caller of toolgate cannot ask anyone");
    }
    if (!target.tool.asks.includes(question.asks)) {
      return refuse(
        `the caller's manifest entry of ${target.tool.name} does not declare "asks": ["${question.asks}"]`,
      );
    }
    this.#nonces.set(id, message.nonce);
    this.#desk.ask(question);
  }

  /** The call ended: its open questions are abandoned (their handlers see the signal aborted). */
  close(): void {
    this.#desk?.close();
  }

  /** An answer line from the desk (`{"type":"answer","id":ID,...}`), sent to its worker under its question's nonce. */
  async #answer(bytes: Uint8Array): Promise<boolean> {
    const line: unknown = JSON.parse(new TextDecoder().decode(bytes));
    if (!isRecord(line) || (typeof line.id !== "string" && typeof line.id !== "number")) return false;
    const nonce = this.#nonces.get(line.id);
    if (nonce === undefined) return false;
    this.#nonces.delete(line.id);
    const error = isRecord(line.error) && typeof line.error.message === "string"
      ? line.error.message
      : undefined;
    return await this.#send(nonce, error === undefined ? { answer: line.answer } : { error });
  }

  async #send(nonce: string, outcome: { answer?: unknown; error?: string }): Promise<boolean> {
    const open = this.#open.get(nonce);
    if (open === undefined) return false;
    this.#open.delete(nonce);
    const answer: AnswerMessage = await signed(this.#options.key, "answer", {
      t: "answer",
      id: this.#options.id,
      worker: open.worker,
      nonce,
      ...outcome,
    });
    this.#options.publish(open.control, encode(answer));
    return true;
  }
}
