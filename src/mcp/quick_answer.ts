/**
 * A call answered quickly goes out as one JSON body, not as an event stream: a session's POST is answered by the
 * SDK's transport with an SSE stream (a priming event, then each message, then the end), and the stream is read
 * here for a moment first. When it ends within that moment having carried nothing but the answers to every request
 * of the POST, those answers are sent as `application/json`, as the Streamable HTTP transport lets a server choose
 * for any POST: one write instead of a stream's several, and for the client no stream to parse. Anything else (a
 * notification, a question to the client, a stream closed for polling, a call still running when the moment is
 * over) goes out as the stream, the events already read first, untouched: nothing the stream promises (resumption
 * from its event ids, progress, questions mid-call) changes for a call that needs it.
 *
 * Not here: the sessions, the polling, and what a client that went away mid-stream cancels (`http_server.ts`).
 *
 * @module
 */

/** How long a POST's stream is read before its answer is sent as it comes (the stream, from its first event). */
export const QUICK_ANSWER_MS = 250;

/** What reading a stream for a moment gave: the answers in full, or the stream, whatever of it was read kept. */
export type QuickRead =
  | { readonly quick: true; readonly answers: readonly Record<string, unknown>[] }
  | {
    readonly quick: false;
    readonly read: readonly Uint8Array[];
    readonly rest: ReadableStreamDefaultReader<Uint8Array>;
    readonly pending?: Promise<ReadableStreamReadResult<Uint8Array>>;
  };

import { after, type CancelTimer } from "../base/timer.ts";

/**
 * The JSON-RPC messages of a whole SSE text: each event's `data` (its lines joined), events without data (the
 * priming event, comments) left out; `undefined` when an event's data is not JSON.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sseMessages } from "./quick_answer.ts";
 * const text = 'id: 1\nretry: 1000\ndata: \n\nevent: message\nid: 2\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n';
 * assert.deepEqual(sseMessages(text), [{ jsonrpc: "2.0", id: 7, result: {} }]);
 * assert.equal(sseMessages("data: {nope\n\n"), undefined);
 * ```
 */
export function sseMessages(text: string): Record<string, unknown>[] | undefined {
  const messages: Record<string, unknown>[] = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event.split(/\r?\n/).filter((line) => line.startsWith("data:")).map((line) =>
      line.slice(line.startsWith("data: ") ? 6 : 5)
    ).join("\n");
    if (data.trim() === "") continue;
    try {
      const message = JSON.parse(data);
      if (message === null || typeof message !== "object" || Array.isArray(message)) return undefined;
      messages.push(message);
    } catch {
      return undefined;
    }
  }
  return messages;
}

/**
 * Are `messages` the answers (results or errors) to exactly the requests `ids`, and nothing else?
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answersAll } from "./quick_answer.ts";
 * assert.ok(answersAll([{ jsonrpc: "2.0", id: 1, result: {} }], [1]));
 * assert.ok(!answersAll([{ jsonrpc: "2.0", method: "notifications/progress" }, { jsonrpc: "2.0", id: 1, result: {} }], [1]));
 * assert.ok(!answersAll([], [1]));
 * ```
 */
export function answersAll(
  messages: readonly Record<string, unknown>[],
  ids: readonly (string | number)[],
): boolean {
  if (messages.length !== ids.length) return false;
  const left = new Set(ids);
  for (const message of messages) {
    if ("method" in message || !("result" in message || "error" in message)) return false;
    if (!left.delete(message.id as string | number)) return false;
  }
  return left.size === 0;
}

/**
 * Reads `body` for at most `waitMs`: `quick` with the answers when it ended by then carrying only the answers to
 * `ids` (see {@linkcode answersAll}); otherwise the chunks read so far, the reader, and the read still under way,
 * as soon as it is known: at the first event that is not an answer (a notification, a question to the client goes
 * out at once), when the stream ends without every answer, or when the wait is over.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readQuickly } from "./quick_answer.ts";
 * const sse = (...events: string[]) => new ReadableStream<Uint8Array>({
 *   start(controller) {
 *     for (const event of events) controller.enqueue(new TextEncoder().encode(`data: ${event}\n\n`));
 *     if (!events.some((event) => event.includes("progress"))) controller.close();
 *   },
 * });
 * const answered = await readQuickly(sse('{"jsonrpc":"2.0","id":1,"result":{}}'), [1], 10_000);
 * assert.deepEqual(answered, { quick: true, answers: [{ jsonrpc: "2.0", id: 1, result: {} }] });
 * const started = performance.now();
 * const notified = await readQuickly(sse('{"jsonrpc":"2.0","method":"notifications/progress"}'), [1], 10_000);
 * assert.equal(notified.quick, false);
 * assert.ok(performance.now() - started < 5_000); // not the whole wait
 * ```
 */
export async function readQuickly(
  body: ReadableStream<Uint8Array>,
  ids: readonly (string | number)[],
  waitMs: number,
): Promise<QuickRead> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const read: Uint8Array[] = [];
  const answers: Record<string, unknown>[] = [];
  const streaming = () => ({ quick: false, read, rest: reader }) as const;
  let text = "";
  let cancel: CancelTimer | undefined;
  // Not a timer that keeps the process alive: the server does, and this one is cancelled at nearly every call.
  const late = new Promise<"late">((resolve) =>
    cancel = after(waitMs, () => resolve("late"), { keepAlive: false })
  );
  try {
    while (true) {
      const next = reader.read();
      const got = await Promise.race([next, late]);
      if (got === "late") return { ...streaming(), pending: next };
      if (got.done) break;
      read.push(got.value);
      text += decoder.decode(got.value, { stream: true });
      // The events complete so far: an answer is kept, anything else ends the wait.
      const end = text.lastIndexOf("\n\n");
      if (end === -1) continue;
      const messages = sseMessages(text.slice(0, end + 2));
      text = text.slice(end + 2);
      if (messages === undefined) return streaming();
      for (const message of messages) {
        if ("method" in message || !("result" in message || "error" in message)) return streaming();
        answers.push(message);
      }
    }
  } catch (error) {
    // The stream failed: handed on as it is, its error to come from the reader.
    return { ...streaming(), pending: Promise.reject(error) };
  } finally {
    cancel?.();
  }
  const rest = text + decoder.decode();
  if (rest.trim() !== "" && !/^(:[^\n]*\n|\s)*$/.test(rest)) return streaming();
  return answersAll(answers, ids) ? { quick: true, answers } : streaming();
}

/**
 * The stream of a response, its first chunks (`read`) already read from `rest` (and `pending`, a read under way),
 * passed through: `onGone` is called when the client stops reading before the end (it went away: Deno cancels
 * the body of a response whose connection closed), `onEnd` once either way.
 */
function watched(
  init: Response,
  { read, rest, pending }: {
    read: readonly Uint8Array[];
    rest: ReadableStreamDefaultReader<Uint8Array>;
    pending?: Promise<ReadableStreamReadResult<Uint8Array>>;
  },
  onGone: () => void,
  onEnd: () => void,
): Response {
  let ended = false;
  const end = () => {
    if (!ended) {
      ended = true;
      onEnd();
    }
  };
  let first: Promise<ReadableStreamReadResult<Uint8Array>> | undefined = pending;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of read) controller.enqueue(chunk);
    },
    async pull(controller) {
      try {
        const next = first ?? rest.read();
        first = undefined;
        const { done, value } = await next;
        if (done) {
          end();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        end();
        controller.error(error);
      }
    },
    async cancel(reason) {
      if (!ended) onGone();
      end();
      await rest.cancel(reason);
    },
  });
  return new Response(body, { status: init.status, statusText: init.statusText, headers: init.headers });
}

/**
 * The form a session's POST is answered in, from the SDK transport's `response`: the answers to `ids` as one JSON
 * body when they come at once (see {@linkcode readQuickly}; an array for a `batch`), else the response as it is,
 * its stream watched: `onGone` when its client stops reading before the end, `onEnd` once either way.
 */
export async function answerForm(
  response: Response,
  ids: readonly (string | number)[],
  batch: boolean,
  onGone: () => void,
  onEnd: () => void,
): Promise<Response> {
  if (response.body === null) {
    onEnd();
    return response;
  }
  if (ids.length === 0 || !response.headers.get("content-type")?.startsWith("text/event-stream")) {
    return watched(response, { read: [], rest: response.body.getReader() }, onGone, onEnd);
  }
  const quick = await readQuickly(response.body, ids, QUICK_ANSWER_MS);
  if (!quick.quick) return watched(response, quick, onGone, onEnd);
  onEnd();
  const headers: Record<string, string> = {};
  const sessionId = response.headers.get("mcp-session-id");
  if (sessionId !== null) headers["mcp-session-id"] = sessionId;
  return Response.json(batch ? quick.answers : quick.answers[0], { headers });
}
