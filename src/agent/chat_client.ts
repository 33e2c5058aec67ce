/**
 * The chat-completions client: one POST per request, retried on network errors, timeouts, 429 and 5xx with
 * exponential backoff and jitter (or the server's `Retry-After`), one `Idempotency-Key` across a request's retries.
 * The endpoint is not trusted with toolgate's memory: no answer, streamed or not, is read past a size cap, and an
 * answer over it fails at once (a retry would only fetch it again).
 *
 * @module
 */
import { redactDeep } from "../state/redact.ts";
import { AgentError } from "./errors.ts";
import { DEFAULT_MAX_RESPONSE_BYTES } from "./limits.ts";
import { clip, seconds } from "../base/text.ts";
import { after } from "../base/timer.ts";
import { answerTooLarge, byteCap, declaredLength, readText } from "./capped_body.ts";
import { networkReason } from "../base/network_reason.ts";

/** The most characters of an error body carried into the failure message. */
export const ERROR_BODY_LIMIT = 2000;
/** Of an error answer only this much is read: its message keeps {@linkcode ERROR_BODY_LIMIT} characters anyway. */
export const ERROR_BODY_READ_BYTES = 64 * 1024;
/** The first retry waits about this long; each later one twice as long. */
export const BACKOFF_BASE_MS = 500;
/** No computed backoff waits longer. */
export const BACKOFF_CAP_MS = 30_000;
/** A `Retry-After` longer than this is not waited for: the request fails and says so. */
export const RETRY_AFTER_LIMIT_MS = 60_000;

/** What the loop sends: the chat-completions body. */
export type ChatRequest = Readonly<Record<string, unknown>>;

/** How a {@linkcode ChatClient} reaches its endpoint; everything past `baseUrl` has a default. */
export interface ChatClientOptions {
  /** The API's base URL, e.g. `https://api.openai.com/v1` (a trailing slash is fine). */
  readonly baseUrl: string;
  /** Sent as a Bearer token when set. */
  readonly apiKey?: string;
  /** Per attempt: until the whole answer is read (or, when streaming, until the headers arrive). */
  readonly timeoutMs: number;
  /** Retries after the first attempt. */
  readonly retries: number;
  readonly fetch?: typeof fetch;
  readonly sleep?: (ms: number) => Promise<void>;
  /** In [0, 1): the jitter's source. */
  readonly random?: () => number;
  /** Epoch milliseconds: for `Retry-After` dates. */
  readonly now?: () => number;
  /** A fresh idempotency key per request. */
  readonly newKey?: () => string;
  /** Receives each request and response as text, the key already masked. */
  readonly debug?: (text: string) => Promise<void>;
  /**
   * Masks secrets in what `debug` receives: each string of a request before it is serialized (so that a secret's
   * quotes and newlines are still themselves), and each answer's text.
   */
  readonly redact?: (text: string) => string;
  /** The most bytes of one answer, streamed or not (default {@linkcode DEFAULT_MAX_RESPONSE_BYTES}). */
  readonly maxResponseBytes?: number;
  readonly userAgent?: string;
}

/** A successful streamed answer: its body, unread. */
export interface StreamedAnswer {
  /** `text/event-stream`, or whatever else the server sent (some ignore `stream: true`). */
  readonly contentType: string;
  /** Errors with an {@linkcode AgentError} once more bytes than the client's cap came through it. */
  readonly body: ReadableStream<Uint8Array>;
}

type Attempt<T> =
  | { kind: "done"; value: T }
  | { kind: "retry"; reason: string; retryAfterMs?: number }
  | { kind: "fail"; error: AgentError };

const RETRYABLE_STATUS = (status: number) => status === 429 || (status >= 500 && status <= 599);

/**
 * Reads a `Retry-After` value (seconds, or an HTTP date) as milliseconds from `nowMs`, or `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRetryAfter } from "./chat_client.ts";
 * assert.equal(parseRetryAfter("2", 0), 2000);
 * assert.equal(parseRetryAfter("Thu, 01 Jan 1970 00:00:05 GMT", 1000), 4000);
 * ```
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/**
 * The wait before retry number `retry` (0 for the first): exponential, capped, with "equal jitter" (half fixed,
 * half random) so that many clients do not retry in step.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { backoffMs } from "./chat_client.ts";
 * assert.equal(backoffMs(0, () => 0), 250);
 * assert.equal(backoffMs(1, () => 0), 500);
 * assert.equal(backoffMs(1, () => 0.999), 1000); // at most the ceiling, 2 ** retry * 500 ms
 * ```
 */
export function backoffMs(retry: number, random: () => number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** retry);
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

function isPermissionError(error: unknown): boolean {
  return error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied;
}

/**
 * Talks to one OpenAI-compatible chat-completions endpoint.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ChatClient } from "./chat_client.ts";
 * const answer = { choices: [{ message: { role: "assistant", content: "hello" } }] };
 * const client = new ChatClient({
 *   baseUrl: "http://127.0.0.1:8080/v1/",
 *   timeoutMs: 90_000,
 *   retries: 2,
 *   fetch: () => Promise.resolve(Response.json(answer)), // stands in for the endpoint
 * });
 * assert.equal(client.url, "http://127.0.0.1:8080/v1/chat/completions");
 * assert.deepEqual(await client.complete({ model: "m", messages: [{ role: "user", content: "hi" }] }), answer);
 * ```
 */
export class ChatClient {
  /** `{base}/chat/completions`. */
  readonly url: string;
  readonly #options: ChatClientOptions;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  readonly #now: () => number;
  readonly #newKey: () => string;

  constructor(options: ChatClientOptions) {
    this.#options = options;
    this.url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    this.#fetch = options.fetch ?? fetch;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#random = options.random ?? Math.random;
    this.#now = options.now ?? Date.now;
    this.#newKey = options.newKey ?? (() => crypto.randomUUID());
  }

  /**
   * Sends a request and returns the answer's body parsed as JSON; throws an {@linkcode AgentError} when every
   * attempt failed or the answer is not JSON.
   */
  complete(body: ChatRequest): Promise<unknown> {
    return this.#send(body, "application/json", async (response, signal) => {
      const text = await readText(response, signal, this.#maxBytes, "fail");
      await this.#debug(`<- ${this.#redact(text)}`);
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new AgentError(
          `malformed answer from the chat endpoint: the body is not JSON: ${JSON.stringify(clip(text, 200))}`,
        );
      }
    });
  }

  /**
   * Sends a streaming request and returns the answer's body once its headers are in; the caller reads it (and
   * times it). Nothing is retried once the body has started.
   */
  stream(body: ChatRequest): Promise<StreamedAnswer> {
    return this.#send(body, "text/event-stream", (response) => {
      if (response.body === null) throw new AgentError("malformed answer from the chat endpoint: no body");
      const max = this.#maxBytes;
      if (declaredLength(response) > max) {
        response.body.cancel().catch(() => {});
        throw answerTooLarge(max);
      }
      const contentType = response.headers.get("content-type") ?? "";
      // An event stream is timed by its reader (no event data for the timeout: see readSse). A server that
      // ignored `stream: true` sends one answer, read whole: it gets the same deadline as `complete`'s.
      const whole = !contentType.toLowerCase().includes("text/event-stream");
      const deadline = whole
        ? { ms: this.#options.timeoutMs, error: () => this.#noWholeAnswer() }
        : undefined;
      return Promise.resolve({ contentType, body: response.body.pipeThrough(byteCap(max, deadline)) });
    });
  }

  get #maxBytes(): number {
    return this.#options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  }

  #noWholeAnswer(): AgentError {
    return new AgentError(`no whole answer from ${this.url} within ${seconds(this.#options.timeoutMs)}`);
  }

  #redact(text: string): string {
    return this.#options.redact ? this.#options.redact(text) : text;
  }

  async #send<T>(
    body: ChatRequest,
    accept: string,
    read: (response: Response, signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const { retries } = this.#options;
    const key = this.#newKey();
    const text = JSON.stringify(body);
    // Redacted before it is serialized: in the JSON text a secret's quotes and newlines are escapes.
    const redact = this.#options.redact;
    const shown = this.#options.debug && redact ? JSON.stringify(redactDeep(body, redact)) : text;
    let last = "";
    for (let attempt = 0; attempt <= retries; attempt++) {
      const outcome = await this.#attempt(text, shown, key, accept, attempt, read);
      if (outcome.kind === "done") return outcome.value;
      if (outcome.kind === "fail") throw this.#explained(outcome.error, body.model);
      last = outcome.reason;
      if (attempt === retries) break;
      let wait = backoffMs(attempt, this.#random);
      if (outcome.retryAfterMs !== undefined) {
        if (outcome.retryAfterMs > RETRY_AFTER_LIMIT_MS) {
          throw new AgentError(
            `${last}; it asks to retry after ${seconds(outcome.retryAfterMs)}, longer than toolgate waits (${
              seconds(RETRY_AFTER_LIMIT_MS)
            })`,
          );
        }
        wait = outcome.retryAfterMs;
      }
      await this.#debug(`retrying in ${seconds(wait)} (${last})`);
      await this.#sleep(wait);
    }
    // The reason says what failed (a timeout names its limit itself): nothing unrelated is added to it.
    const attempts = retries + 1;
    throw new AgentError(`${last} (${attempts} attempt${attempts === 1 ? "" : "s"})`);
  }

  /**
   * A refusal a person can act on: a 401 or 403 names the key's variables, a 404 the model and the base URL (a
   * model the endpoint does not serve and a wrong base URL both answer 404).
   */
  #explained(error: AgentError, model: unknown): AgentError {
    if (error.status === 401 || error.status === 403) {
      const hint = this.#options.apiKey
        ? "the API key was refused: check --api-key, OAI_API_KEY or OPENAI_API_KEY"
        : "no API key was sent: set OAI_API_KEY (or OPENAI_API_KEY), or pass --api-key";
      return new AgentError(`${error.message} (${hint})`, { status: error.status });
    }
    if (error.status === 404) {
      return new AgentError(
        `${error.message} (is the model ${JSON.stringify(model)} served there? --model, OAI_MODEL; ` +
          `is the base URL ${this.#options.baseUrl} right? --base-url, OAI_BASE_URL)`,
        { status: error.status },
      );
    }
    return error;
  }

  async #attempt<T>(
    body: string,
    shownBody: string,
    key: string,
    accept: string,
    attempt: number,
    read: (response: Response, signal: AbortSignal) => Promise<T>,
  ): Promise<Attempt<T>> {
    const headers: Record<string, string> = {
      "Content-Type": "application/json",
      "Accept": accept,
      "Idempotency-Key": key,
    };
    if (this.#options.userAgent) headers["User-Agent"] = this.#options.userAgent;
    if (this.#options.apiKey) headers["Authorization"] = `Bearer ${this.#options.apiKey}`;
    const shown = { ...headers, ...(this.#options.apiKey ? { Authorization: "Bearer [REDACTED]" } : {}) };
    await this.#debug(
      `-> POST ${this.url} (attempt ${attempt + 1}) ${JSON.stringify(shown)}\n-> ${shownBody}`,
    );
    const controller = new AbortController();
    // Not `setTimeout`: its first use loads Node's timers (base/timer.ts).
    const cancelTimer = after(this.#options.timeoutMs, () => controller.abort());
    const timedOut = () => controller.signal.aborted;
    try {
      let response: Response;
      try {
        response = await this.#fetch(this.url, { method: "POST", headers, body, signal: controller.signal });
      } catch (error) {
        return this.#networkFailure(error, timedOut());
      }
      await this.#debug(`<- ${response.status} ${response.statusText}`.trimEnd());
      if (!response.ok) {
        // An error body is read only so far: its message keeps ERROR_BODY_LIMIT characters.
        const text = await readText(response, controller.signal, ERROR_BODY_READ_BYTES, "cut").catch(() =>
          ""
        );
        if (text !== "") await this.#debug(`<- ${this.#redact(text)}`);
        const reason = `the chat endpoint answered ${response.status} ${response.statusText}`.trimEnd() +
          (text.trim() === "" ? "" : `: ${clip(text.trim(), ERROR_BODY_LIMIT)}`);
        if (!RETRYABLE_STATUS(response.status)) {
          return { kind: "fail", error: new AgentError(reason, { status: response.status }) };
        }
        const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"), this.#now());
        return { kind: "retry", reason, retryAfterMs };
      }
      try {
        return { kind: "done", value: await read(response, controller.signal) };
      } catch (error) {
        if (error instanceof AgentError) return { kind: "fail", error };
        return this.#networkFailure(error, timedOut());
      }
    } finally {
      cancelTimer();
    }
  }

  #networkFailure(error: unknown, timedOut: boolean): Attempt<never> {
    if (isPermissionError(error)) {
      return {
        kind: "fail",
        error: new AgentError(
          `no permission to connect to ${new URL(this.url).host}: run toolgate with --allow-net (${
            (error as Error).message
          })`,
        ),
      };
    }
    if (timedOut) {
      return {
        kind: "retry",
        reason: `no answer from ${this.url} within ${seconds(this.#options.timeoutMs)}`,
      };
    }
    return { kind: "retry", reason: `cannot reach ${this.url}: ${networkReason(error)}` };
  }

  async #debug(text: string): Promise<void> {
    if (this.#options.debug) await this.#options.debug(text);
  }
}
