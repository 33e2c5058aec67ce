/**
 * The chat endpoint's answer read under a size cap: the endpoint is not trusted with toolgate's memory, so no
 * answer, streamed or not, is read past the cap, and one over it fails at once with {@linkcode answerTooLarge}
 * (or, for an error's body, is cut). The client (`chat_client.ts`) re-exports `answerTooLarge`.
 *
 * @module
 */
import { AgentError } from "./errors.ts";
import { after, type CancelTimer } from "../base/timer.ts";

/**
 * The error of an answer past the size cap. Not a network failure: it is never retried, and it does not say that
 * the endpoint cannot be reached.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answerTooLarge } from "./capped_body.ts";
 * assert.match(answerTooLarge(1024).message, /^the chat endpoint's answer is larger than 1024 bytes \(raise /);
 * ```
 */
export function answerTooLarge(maxBytes: number): AgentError {
  return new AgentError(
    `the chat endpoint's answer is larger than ${maxBytes} bytes (raise --http-max-bytes or ` +
      `OAI_HTTP_MAX_BYTES if such answers are expected)`,
  );
}

/**
 * The answer's `Content-Length`, or 0 when it declares none (or nonsense): then the bytes themselves are counted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { declaredLength } from "./capped_body.ts";
 * assert.ok([0, 5].includes(declaredLength(new Response("hello")))); // as the runtime declares it
 * ```
 */
export function declaredLength(response: Response): number {
  const length = Number(response.headers.get("content-length") ?? "");
  return Number.isSafeInteger(length) && length > 0 ? length : 0;
}

/**
 * A pass-through stream that errors with {@linkcode answerTooLarge} once more than `maxBytes` came through, and,
 * given a deadline, with its error when the body has not ended within that many milliseconds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { byteCap } from "./capped_body.ts";
 * const body = new Response("hello").body!.pipeThrough(byteCap(3));
 * await assert.rejects(new Response(body).text(), /larger than 3 bytes/);
 * ```
 */
export function byteCap(
  maxBytes: number,
  deadline?: { ms: number; error: () => AgentError },
): TransformStream<Uint8Array, Uint8Array> {
  let total = 0;
  let cancel: CancelTimer | undefined;
  const stop = () => cancel?.();
  return new TransformStream({
    start(controller) {
      if (deadline === undefined) return;
      // The body's own read keeps the process alive while it is wanted; an abandoned one must not. Not
      // `setTimeout`: its first use loads Node's timers (base/timer.ts).
      cancel = after(deadline.ms, () => controller.error(deadline.error()), { keepAlive: false });
    },
    transform(chunk, controller) {
      total += chunk.byteLength;
      if (total <= maxBytes) return controller.enqueue(chunk);
      stop();
      controller.error(answerTooLarge(maxBytes));
    },
    flush: stop,
    cancel: stop,
  });
}

const decoder = new TextDecoder();

/**
 * Reads a body to text, at most `maxBytes` of it: past that, `fail` throws {@linkcode answerTooLarge} and `cut`
 * keeps what came first. Gives up when `signal` aborts (a body that stalls must not hang the timeout). The bytes are
 * read one chunk at a time, so an oversized answer costs no more memory than the cap.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readText } from "./capped_body.ts";
 * assert.equal(await readText(new Response("hello"), new AbortController().signal, 3, "cut"), "hel");
 * ```
 */
export async function readText(
  response: Response,
  signal: AbortSignal,
  maxBytes: number,
  over: "fail" | "cut",
): Promise<string> {
  if (signal.aborted) throw new DOMException("timed out", "AbortError");
  const body = response.body;
  if (body === null) return "";
  if (over === "fail" && declaredLength(response) > maxBytes) {
    await body.cancel().catch(() => {});
    throw answerTooLarge(maxBytes);
  }
  const reader = body.getReader();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new DOMException("timed out", "AbortError"));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (true) {
      const { done, value } = await Promise.race([reader.read(), aborted]);
      if (done) break;
      if (total + value.byteLength > maxBytes) {
        if (over === "fail") throw answerTooLarge(maxBytes);
        chunks.push(value.subarray(0, maxBytes - total));
        total = maxBytes;
        break;
      }
      chunks.push(value);
      total += value.byteLength;
    }
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
    // The rest of an oversized or abandoned body is not wanted: let the connection go.
    reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return decoder.decode(bytes);
}
