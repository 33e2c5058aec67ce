/**
 * The messages of toolgate's tool protocol, `toolgate/1`: the protocol names and asks a manifest may declare, the
 * channel's limits, the log levels, and each message a tool writes on stdout (content, a result, a log line,
 * progress, a question), checked one line at a time by {@linkcode parseMessage}. The channel that reads them as
 * they arrive is `tool_protocol.ts`, which re-exports every name here.
 *
 * @module
 */
import { type ContentBlock, isRecord } from "../contract.ts";

/** The protocols a manifest may name in a tool's `protocol`. */
export const TOOL_PROTOCOLS: readonly string[] = Object.freeze(["toolgate/1"]);

/**
 * A protocol a tool may speak.
 *
 * @example
 * ```ts
 * import type { ToolProtocol } from "./tool_messages.ts";
 * const protocol: ToolProtocol = "toolgate/1";
 * ```
 */
export type ToolProtocol = "toolgate/1";

/**
 * Whom a tool may ask (a manifest's `asks`): `"user"`, a form (MCP elicitation); `"model"`, the model (MCP
 * sampling); `"roots"`, the client's roots (MCP `roots/list`: the folders the client works in, information only).
 *
 * @example
 * ```ts
 * import type { Asked } from "./tool_messages.ts";
 * const asks: Asked[] = ["user"];
 * ```
 */
export type Asked = "user" | "model" | "roots";

/** The values a manifest's `asks` may hold. */
export const TOOL_ASKS: readonly Asked[] = Object.freeze(["user", "model", "roots"] as Asked[]);

/**
 * The caps of one call's channel: a line longer than `maxLineBytes`, more than `maxMessages` log and progress
 * messages, or more than `maxQuestions` questions cut the tool off (the stream as a whole is capped by the call's
 * output limit).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PROTOCOL_LIMITS } from "./tool_messages.ts";
 * assert.equal(PROTOCOL_LIMITS.maxMessages, 1000);
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
 * import assert from "node:assert/strict";
 * import { LOG_LEVELS } from "./tool_messages.ts";
 * assert.ok(LOG_LEVELS.indexOf("warning") > LOG_LEVELS.indexOf("info"));
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
 * import type { LogLevel } from "./tool_messages.ts";
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
 * import type { ToolEvent } from "./tool_messages.ts";
 * const event: ToolEvent = { kind: "progress", progress: 50, total: 100, message: "half way" };
 * ```
 */
export type ToolEvent =
  | {
    readonly kind: "log";
    readonly level: LogLevel;
    readonly message: string;
    readonly data?: unknown;
    /**
     * Who logged it when not the tool's own program: an MCP server behind the gateway (its name, then `/` and its
     * own logger). Its `data` is then the server's, passed on as it sent it; `message` is that data as text.
     */
    readonly logger?: string;
  }
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
 * import assert from "node:assert/strict";
 * import { parseMessage } from "./tool_messages.ts";
 * assert.deepEqual(parseMessage('{"type":"log","level":"info","message":"started"}'), { ok: true, message: { type: "log", level: "info", message: "started" } });
 * assert.equal(parseMessage("hello").ok, false);
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
    case "roots": {
      const id = value.id;
      if (!isId(id)) return { ok: false, reason: 'a "roots" message needs an "id" (a string or a number)' };
      return { ok: true, message: { type: "roots", id } };
    }
    default:
      return {
        ok: false,
        reason: 'a message\'s "type" must be content, result, log, progress, elicit, sample or roots',
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
 * import type { SamplingRequest } from "./tool_messages.ts";
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
 * import type { ToolQuestion } from "./tool_messages.ts";
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
  | { readonly asks: "model"; readonly id: string | number; readonly request: SamplingRequest }
  | { readonly asks: "roots"; readonly id: string | number };

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
 * import type { ToolMessage } from "./tool_messages.ts";
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
  | { readonly type: "sample"; readonly id: string | number; readonly request: SamplingRequest }
  | { readonly type: "roots"; readonly id: string | number };

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
