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
 * One piece: the one wire protocol: its messages and the channel that reads them share their types and
 * checks, and a reader of one needs the other.
 *
 * @module
 */
import { type ContentBlock, failure, type FailureEnvelope, isRecord } from "../contract.ts";

/** The protocols a manifest may name in a tool's `protocol`. */
export const TOOL_PROTOCOLS: readonly string[] = Object.freeze(["toolgate/1"]);

/**
 * A protocol a tool may speak.
 *
 * @example
 * ```ts
 * import type { ToolProtocol } from "./tool_protocol.ts";
 * const protocol: ToolProtocol = "toolgate/1";
 * ```
 */
export type ToolProtocol = "toolgate/1";

/**
 * Whom a tool may ask (a manifest's `asks`): `"user"`, a form (MCP elicitation); `"model"`, the model (MCP
 * sampling).
 *
 * @example
 * ```ts
 * import type { Asked } from "./tool_protocol.ts";
 * const asks: Asked[] = ["user"];
 * ```
 */
export type Asked = "user" | "model";

/** The values a manifest's `asks` may hold. */
export const TOOL_ASKS: readonly Asked[] = Object.freeze(["user", "model"] as Asked[]);

/**
 * The caps of one call's channel: a line longer than `maxLineBytes`, more than `maxMessages` log and progress
 * messages, or more than `maxQuestions` questions cut the tool off (the stream as a whole is capped by the call's
 * output limit).
 *
 * @example
 * ```ts
 * import { PROTOCOL_LIMITS } from "./tool_protocol.ts";
 * PROTOCOL_LIMITS.maxMessages; // 1000
 * ```
 */
export const PROTOCOL_LIMITS = {
  maxLineBytes: 4 * 1024 * 1024,
  maxMessages: 1000,
  maxQuestions: 20,
} as const;

/**
 * The log levels, least severe first (MCP's, from syslog).
 *
 * @example
 * ```ts
 * import { LOG_LEVELS } from "./tool_protocol.ts";
 * LOG_LEVELS.indexOf("warning") > LOG_LEVELS.indexOf("info"); // true
 * ```
 */
export const LOG_LEVELS: readonly LogLevel[] = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
];

/**
 * A log level.
 *
 * @example
 * ```ts
 * import type { LogLevel } from "./tool_protocol.ts";
 * const level: LogLevel = "info";
 * ```
 */
export type LogLevel =
  | "debug"
  | "info"
  | "notice"
  | "warning"
  | "error"
  | "critical"
  | "alert"
  | "emergency";

/**
 * What a running tool tells its caller before its answer: a log message, or its progress.
 *
 * @example
 * ```ts
 * import type { ToolEvent } from "./tool_protocol.ts";
 * const event: ToolEvent = { kind: "progress", progress: 50, total: 100, message: "half way" };
 * ```
 */
export type ToolEvent =
  | { readonly kind: "log"; readonly level: LogLevel; readonly message: string; readonly data?: unknown }
  | {
    readonly kind: "progress";
    readonly progress: number;
    readonly total?: number;
    readonly message?: string;
  };

/**
 * One checked message of a tool, or why the line is not one.
 *
 * @example
 * ```ts
 * import { parseMessage } from "./tool_protocol.ts";
 * parseMessage('{"type":"log","level":"info","message":"started"}');
 * // { ok: true, message: { type: "log", level: "info", message: "started" } }
 * parseMessage("hello").ok; // false
 * ```
 */
export function parseMessage(
  line: string,
):
  | { ok: true; message: ToolMessage }
  | { ok: false; reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, reason: "a line is not JSON" };
  }
  if (!isRecord(value)) return { ok: false, reason: "a message is not a JSON object" };
  switch (value.type) {
    case "content": {
      const blocks = Array.isArray(value.content) ? value.content : [value.content];
      for (const [index, block] of blocks.entries()) {
        const problem = blockProblem(block);
        if (problem !== undefined) return { ok: false, reason: `content[${index}] ${problem}` };
      }
      return { ok: true, message: { type: "content", content: blocks as ContentBlock[] } };
    }
    case "result":
      if (!("result" in value)) return { ok: false, reason: 'a "result" message has no "result"' };
      return { ok: true, message: { type: "result", result: value.result } };
    case "log": {
      const level = value.level ?? "info";
      if (!LOG_LEVELS.includes(level as LogLevel)) {
        return { ok: false, reason: `a log level must be one of ${LOG_LEVELS.join(", ")}` };
      }
      if (typeof value.message !== "string") {
        return { ok: false, reason: 'a "log" message needs a "message" string' };
      }
      const message: LogMessage = { type: "log", level: level as LogLevel, message: value.message };
      return { ok: true, message: "data" in value ? { ...message, data: value.data } : message };
    }
    case "progress": {
      const { progress, total, message } = value;
      if (typeof progress !== "number" || !Number.isFinite(progress)) {
        return { ok: false, reason: 'a "progress" message needs a finite number "progress"' };
      }
      if (total !== undefined && (typeof total !== "number" || !Number.isFinite(total))) {
        return { ok: false, reason: '"total" must be a finite number' };
      }
      if (message !== undefined && typeof message !== "string") {
        return { ok: false, reason: '"message" must be a string' };
      }
      return { ok: true, message: { type: "progress", progress, total, message } };
    }
    case "elicit": {
      const id = value.id;
      if (!isId(id)) return { ok: false, reason: 'an "elicit" message needs an "id" (a string or a number)' };
      if (typeof value.message !== "string") {
        return { ok: false, reason: 'an "elicit" message needs a "message" string' };
      }
      const schema = value.requestedSchema;
      if (!isRecord(schema) || schema.type !== "object" || !isRecord(schema.properties)) {
        return {
          ok: false,
          reason: 'an "elicit" message needs a "requestedSchema" of type "object" with "properties"',
        };
      }
      return { ok: true, message: { type: "elicit", id, message: value.message, requestedSchema: schema } };
    }
    case "sample": {
      const id = value.id;
      if (!isId(id)) return { ok: false, reason: 'a "sample" message needs an "id" (a string or a number)' };
      const { messages, maxTokens } = value;
      if (!Array.isArray(messages) || messages.length === 0 || !messages.every(isSamplingMessage)) {
        return {
          ok: false,
          reason:
            'a "sample" message needs "messages": a list of {"role":"user"|"assistant","content":{...}}',
        };
      }
      if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens) || maxTokens < 1) {
        return { ok: false, reason: 'a "sample" message needs "maxTokens", a positive integer' };
      }
      if (value.systemPrompt !== undefined && typeof value.systemPrompt !== "string") {
        return { ok: false, reason: '"systemPrompt" must be a string' };
      }
      const request: SamplingRequest = {
        messages: messages as SamplingRequest["messages"],
        maxTokens,
        ...(typeof value.systemPrompt === "string" ? { systemPrompt: value.systemPrompt } : {}),
        ...(typeof value.temperature === "number" ? { temperature: value.temperature } : {}),
        ...(Array.isArray(value.stopSequences) && value.stopSequences.every(isText)
          ? { stopSequences: value.stopSequences as string[] }
          : {}),
      };
      return { ok: true, message: { type: "sample", id, request } };
    }
    default:
      return {
        ok: false,
        reason: 'a message\'s "type" must be content, result, log, progress, elicit or sample',
      };
  }
}

const isId = (value: unknown): value is string | number =>
  typeof value === "string" || (typeof value === "number" && Number.isFinite(value));

/** A sampling message: a role and one content block (text, image or audio, as MCP's). */
function isSamplingMessage(value: unknown): boolean {
  if (!isRecord(value) || (value.role !== "user" && value.role !== "assistant")) return false;
  const content = value.content;
  return isRecord(content) &&
    (content.type === "text" || content.type === "image" || content.type === "audio") &&
    blockProblem(content) === undefined;
}

/**
 * What a tool asks the model (MCP `sampling/createMessage`'s parameters that a tool may set).
 *
 * @example
 * ```ts
 * import type { SamplingRequest } from "./tool_protocol.ts";
 * const request: SamplingRequest = {
 *   messages: [{ role: "user", content: { type: "text", text: "Name a colour." } }],
 *   maxTokens: 20,
 * };
 * ```
 */
export interface SamplingRequest {
  /** The conversation to continue, oldest first. */
  readonly messages: readonly {
    readonly role: "user" | "assistant";
    readonly content: ContentBlock;
  }[];
  /** The most tokens the answer may take. */
  readonly maxTokens: number;
  /** A system prompt for the model, if the tool gives one. */
  readonly systemPrompt?: string;
  /** The sampling temperature, if the tool asks for one. */
  readonly temperature?: number;
  /** Texts at which the model stops. */
  readonly stopSequences?: readonly string[];
}

/**
 * A question a running tool asks: the user (a form: MCP elicitation's `message` and `requestedSchema`), or the
 * model (MCP sampling). `id` is the tool's own, echoed in the answer.
 *
 * @example
 * ```ts
 * import type { ToolQuestion } from "./tool_protocol.ts";
 * const question: ToolQuestion = {
 *   asks: "user",
 *   id: 1,
 *   message: "Which branch?",
 *   requestedSchema: { type: "object", properties: { branch: { type: "string", default: "main" } } },
 * };
 * ```
 */
export type ToolQuestion =
  | {
    readonly asks: "user";
    readonly id: string | number;
    readonly message: string;
    readonly requestedSchema: Readonly<Record<string, unknown>>;
  }
  | { readonly asks: "model"; readonly id: string | number; readonly request: SamplingRequest };

interface LogMessage {
  readonly type: "log";
  readonly level: LogLevel;
  readonly message: string;
  readonly data?: unknown;
}

/**
 * A checked message of `toolgate/1`.
 *
 * @example
 * ```ts
 * import type { ToolMessage } from "./tool_protocol.ts";
 * const message: ToolMessage = { type: "result", result: { n: 1 } };
 * ```
 */
export type ToolMessage =
  | { readonly type: "content"; readonly content: readonly ContentBlock[] }
  | { readonly type: "result"; readonly result: unknown }
  | LogMessage
  | {
    readonly type: "progress";
    readonly progress: number;
    readonly total?: number;
    readonly message?: string;
  }
  | {
    readonly type: "elicit";
    readonly id: string | number;
    readonly message: string;
    readonly requestedSchema: Readonly<Record<string, unknown>>;
  }
  | { readonly type: "sample"; readonly id: string | number; readonly request: SamplingRequest };

const isText = (value: unknown): value is string => typeof value === "string";

/** What is wrong with a content block (MCP's required fields), or undefined. */
function blockProblem(block: unknown): string | undefined {
  if (!isRecord(block)) return "is not an object";
  switch (block.type) {
    case "text":
      return isText(block.text) ? undefined : 'needs a "text" string';
    case "image":
    case "audio":
      return isText(block.data) && isText(block.mimeType)
        ? undefined
        : 'needs "data" (base64) and "mimeType" strings';
    case "resource": {
      const resource = block.resource;
      return isRecord(resource) && isText(resource.uri) && (isText(resource.text) || isText(resource.blob))
        ? undefined
        : 'needs a "resource" with a "uri" and a "text" or "blob" string';
    }
    case "resource_link":
      return isText(block.uri) && isText(block.name) ? undefined : 'needs "uri" and "name" strings';
    default:
      return 'has a "type" that is not text, image, audio, resource or resource_link';
  }
}

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
 * import { ToolChannel } from "./tool_protocol.ts";
 * const channel = new ToolChannel({ tool: "t", maxBytes: 1 << 20, onViolation: () => {} });
 * const bytes = new TextEncoder().encode('{"type":"content","content":[{"type":"text","text":"hi"}]}\n');
 * channel.sink(bytes, "stdout");
 * channel.end();
 * channel.content; // [{ type: "text", text: "hi" }]
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
    else if (message.type === "elicit" || message.type === "sample") this.#question(message);
    else {
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

  #question(message: Extract<ToolMessage, { type: "elicit" | "sample" }>): void {
    const asks: Asked = message.type === "elicit" ? "user" : "model";
    if (!(this.#options.asks ?? []).includes(asks)) {
      return this.#cut(
        `it asked the ${asks} a question (${message.type}), and its manifest entry does not declare "asks": ["${asks}"]`,
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
        : { asks: "model", id: message.id, request: message.request },
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
 * import { mapDeep } from "./tool_protocol.ts";
 * mapDeep({ text: "token s3cret" }, (t) => t.replaceAll("s3cret", "[REDACTED]")); // { text: "token [REDACTED]" }
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
 * import { scrubbedEvents } from "./tool_protocol.ts";
 * const onEvent = scrubbedEvents((event) => console.log(event), (text) => text.replaceAll("s3cret", "[REDACTED]"));
 * onEvent({ kind: "log", level: "info", message: "token s3cret" }); // logs "token [REDACTED]"
 * ```
 */
export function scrubbedEvents(
  onEvent: (event: ToolEvent) => void,
  scrub: ((text: string) => string) | undefined,
): (event: ToolEvent) => void {
  if (scrub === undefined) return onEvent;
  return (event) => onEvent(mapDeep(event, scrub) as ToolEvent);
}
