/**
 * toolgate's tool protocol, `toolgate/1`: a tool that declares it in the manifest writes JSON messages on stdout,
 * one a line (content blocks, a result, log messages, progress), instead of one JSON answer. This module reads
 * that channel as it arrives, checks each message, hands log and progress to the caller at once, and keeps the
 * answer for the envelope. A tool that breaks the protocol (a line that is not a message, a line or a stream too
 * long, too many messages) is cut off: the caller stops it and answers {@linkcode ToolChannel.violation}.
 *
 * Why stdout, not a file descriptor of its own: `Deno.Command` passes only stdin, stdout and stderr, and a socket
 * or FIFO would be one more host object to bind into the sandbox. A tool declares the protocol, so its stdout is
 * never misread, and a tool that does not declare it works as before.
 *
 * The messages and their checks are `tool_messages.ts`'s; this module re-exports them.
 *
 * @module
 */
import { type ContentBlock, failure, type FailureEnvelope, isRecord } from "../contract.ts";
import {
  type Asked,
  parseMessage,
  PROTOCOL_LIMITS,
  type ToolEvent,
  type ToolMessage,
  type ToolQuestion,
} from "./tool_messages.ts";

/** What a {@linkcode ToolChannel} is told and held to. */
export interface ChannelOptions {
  /** The tool's name, for the envelope of a violation. */
  readonly tool: string;
  /** The most bytes of stdout, and of stderr (the call's output limit). */
  readonly maxBytes: number;
  /** Gets each log and progress message as it arrives. */
  readonly onEvent?: (event: ToolEvent) => void;
  /** Called once, at the first violation: stop the tool. */
  readonly onViolation: () => void;
  /** The channel's caps (default {@linkcode PROTOCOL_LIMITS}). */
  readonly limits?: {
    readonly maxLineBytes: number;
    readonly maxMessages: number;
    readonly maxQuestions?: number;
  };
  /** Whom the tool may ask (its manifest's `asks`); a question to anyone else cuts it off. */
  readonly asks?: readonly Asked[];
  /** Gets each question as it arrives; whoever gets it answers on the tool's stdin. */
  readonly onQuestion?: (question: ToolQuestion) => void;
}

/**
 * One call's channel: the runner's sink feeds it stdout and stderr as they arrive.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ToolChannel } from "./tool_protocol.ts";
 * const channel = new ToolChannel({ tool: "t", maxBytes: 1 << 20, onViolation: () => {} });
 * const bytes = new TextEncoder().encode('{"type":"content","content":[{"type":"text","text":"hi"}]}\n');
 * channel.sink(bytes, "stdout");
 * channel.end();
 * assert.deepEqual(channel.content, [{ type: "text", text: "hi" }]);
 * ```
 */
export class ToolChannel {
  readonly #options: ChannelOptions;
  readonly #decoder = new TextDecoder();
  readonly #stderr: Uint8Array[] = [];
  #stderrBytes = 0;
  #stdoutBytes = 0;
  #pending = "";
  #messages = 0;
  #questions = 0;
  /** The ids of questions asked and not yet answered: an id asked twice at once would get two answers. */
  readonly #open = new Set<string | number>();
  #violation: FailureEnvelope | undefined;
  readonly content: ContentBlock[] = [];
  /** The last `result` message's value; absent when the tool sent none. */
  result: unknown = undefined;

  constructor(options: ChannelOptions) {
    this.#options = options;
  }

  /** Why the tool was cut off, as the call's envelope; undefined while it keeps to the protocol. */
  get violation(): FailureEnvelope | undefined {
    return this.#violation;
  }

  /** The stderr the tool wrote (capped), for the envelope of a failure. */
  stderr(): Uint8Array {
    const out = new Uint8Array(this.#stderrBytes);
    let at = 0;
    for (const chunk of this.#stderr) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }

  /** The runner's sink. */
  readonly sink = (chunk: Uint8Array, stream: "stdout" | "stderr"): void => {
    if (stream === "stderr") {
      const room = this.#options.maxBytes - this.#stderrBytes;
      if (room > 0) {
        const kept = chunk.subarray(0, room);
        this.#stderr.push(kept.slice());
        this.#stderrBytes += kept.length;
      }
      return;
    }
    if (this.#violation) return;
    this.#stdoutBytes += chunk.length;
    if (this.#stdoutBytes > this.#options.maxBytes) {
      return this.#cut(`it wrote more than ${this.#options.maxBytes} bytes on its protocol channel (stdout)`);
    }
    this.#pending += this.#decoder.decode(chunk, { stream: true });
    let newline: number;
    while (!this.#violation && (newline = this.#pending.indexOf("\n")) >= 0) {
      const line = this.#pending.slice(0, newline);
      this.#pending = this.#pending.slice(newline + 1);
      this.#line(line);
    }
    const limit = this.#options.limits?.maxLineBytes ?? PROTOCOL_LIMITS.maxLineBytes;
    if (!this.#violation && this.#pending.length > limit) {
      this.#cut(`it wrote a line longer than ${limit} bytes`);
    }
  };

  /** The end of stdout: a last line without its newline still counts. */
  end(): void {
    this.#pending += this.#decoder.decode();
    if (!this.#violation && this.#pending.trim() !== "") this.#line(this.#pending);
    this.#pending = "";
  }

  #line(line: string): void {
    if (line.trim() === "") return;
    const limit = this.#options.limits?.maxLineBytes ?? PROTOCOL_LIMITS.maxLineBytes;
    if (line.length > limit) return this.#cut(`it wrote a line longer than ${limit} bytes`);
    const parsed = parseMessage(line);
    if (!parsed.ok) return this.#cut(parsed.reason);
    const message = parsed.message;
    if (message.type === "content") this.content.push(...message.content);
    else if (message.type === "result") this.result = message.result;
    else if (message.type === "elicit" || message.type === "sample" || message.type === "roots") {
      this.#question(message);
    } else {
      this.#messages += 1;
      const max = this.#options.limits?.maxMessages ?? PROTOCOL_LIMITS.maxMessages;
      if (this.#messages > max) return this.#cut(`it sent more than ${max} log and progress messages`);
      if (message.type === "log") {
        const { level, message: text } = message;
        this.#options.onEvent?.(
          "data" in message ? { kind: "log", level, message: text, data: message.data } : {
            kind: "log",
            level,
            message: text,
          },
        );
      } else {
        this.#options.onEvent?.({
          kind: "progress",
          progress: message.progress,
          total: message.total,
          message: message.message,
        });
      }
    }
  }

  /** The question's answer went out: its id may be asked again. */
  answered(id: string | number): void {
    this.#open.delete(id);
  }

  #question(message: Extract<ToolMessage, { type: "elicit" | "sample" | "roots" }>): void {
    const asks: Asked = message.type === "elicit" ? "user" : message.type === "sample" ? "model" : "roots";
    if (!(this.#options.asks ?? []).includes(asks)) {
      return this.#cut(
        `it asked ${
          asks === "roots" ? "the client for its roots" : `the ${asks} a question`
        } (${message.type}), ` +
          `and its manifest entry does not declare "asks": ["${asks}"]`,
      );
    }
    this.#questions += 1;
    const max = this.#options.limits?.maxQuestions ?? PROTOCOL_LIMITS.maxQuestions;
    if (this.#questions > max) return this.#cut(`it asked more than ${max} questions in one call`);
    if (this.#open.has(message.id)) {
      return this.#cut(`it asked question ${JSON.stringify(message.id)} again before its answer came`);
    }
    this.#open.add(message.id);
    this.#options.onQuestion?.(
      message.type === "elicit"
        ? { asks: "user", id: message.id, message: message.message, requestedSchema: message.requestedSchema }
        : message.type === "sample"
        ? { asks: "model", id: message.id, request: message.request }
        : { asks: "roots", id: message.id },
    );
  }

  #cut(reason: string): void {
    if (this.#violation) return;
    this.#violation = failure(
      "execution_error",
      `The tool broke toolgate's tool protocol (toolgate/1): ${reason}; it was stopped.`,
      { tool: this.#options.tool, retryable: false, metadata: { protocol_error: true } },
    );
    this.#options.onViolation();
  }
}

/**
 * Every string in `value`, at any depth (keys too), through `map`: the run's redaction of what a tool sends out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mapDeep } from "./tool_protocol.ts";
 * assert.deepEqual(mapDeep({ text: "token s3cret" }, (t) => t.replaceAll("s3cret", "[REDACTED]")), { text: "token [REDACTED]" });
 * ```
 */
export function mapDeep(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === "string") return map(value);
  if (Array.isArray(value)) return value.map((item) => mapDeep(item, map));
  if (isRecord(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [map(k), mapDeep(v, map)]));
  }
  return value;
}

/**
 * `onEvent` behind the run's redaction of secrets: a log or progress message never carries a secret's value to a
 * client, as an envelope never does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scrubbedEvents } from "./tool_protocol.ts";
 * const seen: unknown[] = [];
 * const onEvent = scrubbedEvents((event) => seen.push(event), (text) => text.replaceAll("s3cret", "[REDACTED]"));
 * onEvent({ kind: "log", level: "info", message: "token s3cret" });
 * assert.deepEqual(seen, [{ kind: "log", level: "info", message: "token [REDACTED]" }]);
 * ```
 */
export function scrubbedEvents(
  onEvent: (event: ToolEvent) => void,
  scrub: ((text: string) => string) | undefined,
): (event: ToolEvent) => void {
  if (scrub === undefined) return onEvent;
  return (event) => onEvent(mapDeep(event, scrub) as ToolEvent);
}
