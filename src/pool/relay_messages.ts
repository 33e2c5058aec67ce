/**
 * The pool's messages for a `toolgate/1` tool's questions, log and progress: a worker relays them to the call's
 * caller, who answers each question as it would a local tool's. Each is signed with the pool's key like every
 * other message of the pool (`signing.ts`): a worker's question and event as a `reply`, a caller's answer under
 * a purpose of its own (`answer`), bound to the call, the worker and the question's nonce, so an answer
 * recorded for one question never answers another.
 *
 * @module
 */
import { asEnvelope, type ContentBlock, type Envelope, isRecord, withContent } from "../contract.ts";

/**
 * A worker's question for the caller (a request on the call's reply subject: the caller's answer to the request
 * is only its receipt; the answer itself comes later on the worker's control subject, as an
 * {@linkcode AnswerMessage}).
 *
 * @example
 * ```ts
 * import type { AskMessage } from "./relay_messages.ts";
 * const ask: AskMessage = {
 *   t: "ask", id: "0b7c...", worker: "build-1:4242", nonce: "5f1e...",
 *   question: { type: "elicit", id: "5f1e...", message: "Deploy where?", requestedSchema: { type: "object", properties: {} } },
 *   sig: "Xk9...",
 * };
 * ```
 */
export interface AskMessage {
  readonly t: "ask";
  readonly id: string;
  readonly worker: string;
  /** New for each question: the caller's answer names it. */
  readonly nonce: string;
  /**
   * The question as a `toolgate/1` line (an `elicit`, `sample` or `roots` message, its `id` the tool's own: what
   * the caller shows its client; a worker of an earlier toolgate sent the nonce there), secrets taken out on the
   * worker; the caller checks it as it checks a local tool's line.
   */
  readonly question: Readonly<Record<string, unknown>>;
  readonly sig: string;
}

/**
 * A tool's log message or progress, relayed by its worker (published; the caller heeds only a number newer than
 * the last it heard).
 *
 * @example
 * ```ts
 * import type { EventMessage } from "./relay_messages.ts";
 * const event: EventMessage = {
 *   t: "event", id: "0b7c...", worker: "build-1:4242", n: 1, event: { type: "progress", progress: 1, total: 3 }, sig: "Zr8...",
 * };
 * ```
 */
export interface EventMessage {
  readonly t: "event";
  readonly id: string;
  readonly worker: string;
  /** The event's number in its call (1, 2, ...). */
  readonly n: number;
  /** A `toolgate/1` `log` or `progress` line, secrets taken out on the worker. */
  readonly event: Readonly<Record<string, unknown>>;
  readonly sig: string;
}

/**
 * The caller's answer to one question, on the worker's control subject: the answer (MCP's `ElicitResult` or
 * `CreateMessageResult`), or why there is none.
 *
 * @example
 * ```ts
 * import type { AnswerMessage } from "./relay_messages.ts";
 * const answer: AnswerMessage = {
 *   t: "answer", id: "0b7c...", worker: "build-1:4242", nonce: "5f1e...", answer: { action: "decline" }, sig: "Lm5...",
 * };
 * ```
 */
export interface AnswerMessage {
  readonly t: "answer";
  readonly id: string;
  readonly worker: string;
  readonly nonce: string;
  /** The answer, when there is one. */
  readonly answer?: unknown;
  /** Why there is no answer (for the tool). */
  readonly error?: string;
  readonly sig: string;
}

const isText = (value: unknown): value is string => typeof value === "string" && value !== "";

/**
 * A question or an event on a call's reply subject (a decoded, signed message of kind `ask` or `event`), or
 * `undefined` when it is not well formed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readRelayed } from "./relay_messages.ts";
 * assert.equal(readRelayed({ t: "event", id: "a", worker: "w", n: 1, event: { type: "log", message: "hi" }, sig: "s" })?.t, "event");
 * assert.equal(readRelayed({ t: "event", id: "a", worker: "w", n: 0, event: {}, sig: "s" }), undefined);
 * ```
 */
export function readRelayed(value: Record<string, unknown>): AskMessage | EventMessage | undefined {
  const { id, worker, sig } = value;
  if (!isText(id) || !isText(worker) || typeof sig !== "string") return undefined;
  if (value.t === "ask" && isText(value.nonce) && isRecord(value.question)) {
    return { t: "ask", id, worker, nonce: value.nonce, question: value.question, sig };
  }
  if (
    value.t === "event" && typeof value.n === "number" && Number.isSafeInteger(value.n) && value.n > 0 &&
    isRecord(value.event)
  ) {
    return { t: "event", id, worker, n: value.n, event: value.event, sig };
  }
  return undefined;
}

/**
 * An answer on a worker's control subject, or `undefined` (it is then not one; its signature is checked by the
 * worker).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readAnswer } from "./relay_messages.ts";
 * const data = new TextEncoder().encode('{"t":"answer","id":"a","worker":"w","nonce":"n","error":"no","sig":"s"}');
 * assert.equal(readAnswer(data)?.error, "no");
 * ```
 */
export function readAnswer(data: Uint8Array): AnswerMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
  if (!isRecord(value) || value.t !== "answer") return undefined;
  const { id, worker, nonce, sig, error } = value;
  if (!isText(id) || !isText(worker) || !isText(nonce) || typeof sig !== "string") return undefined;
  if (error !== undefined && typeof error !== "string") return undefined;
  return {
    t: "answer",
    id,
    worker,
    nonce,
    ...("answer" in value ? { answer: value.answer } : {}),
    ...(error === undefined ? {} : { error }),
    sig,
  };
}

/**
 * A worker's envelope as the caller takes it (`undefined` when it is none): a success keeps its content blocks (a
 * `toolgate/1` tool's), which `asEnvelope` leaves out where it reads a tool's own stdout.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { receivedEnvelope } from "./relay_messages.ts";
 * assert.deepEqual(receivedEnvelope({ ok: true, result: null, content: [{ type: "text", text: "hi" }] })?.content, [{ type: "text", text: "hi" }]);
 * ```
 */
export function receivedEnvelope(value: unknown): Envelope | undefined {
  const envelope = asEnvelope(value);
  if (envelope?.ok !== true || !isRecord(value) || !Array.isArray(value.content)) return envelope;
  return withContent(
    envelope,
    value.content.filter((block): block is ContentBlock => isRecord(block) && typeof block.type === "string"),
  );
}
