/**
 * The chat-completions message shapes the loop sends and keeps, and the checks that turn an endpoint's answer (or a
 * saved transcript) into them, naming the exact place where it is malformed.
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import { AgentError } from "./errors.ts";
import { readUsage, type Usage } from "./usage.ts";
import { clip } from "../base/text.ts";

/** One function call the model asked for. */
export interface ToolCall {
  readonly id: string;
  readonly type: "function";
  readonly function: { readonly name: string; readonly arguments: string };
}

/** A system or developer instruction. */
export interface InstructionMessage {
  readonly role: "system" | "developer";
  readonly content: string;
}

/**
 * One part of a user message with more than text (chat completions' content parts): text, an image as a URL (a
 * `data:` URL for a tool's image), or audio (base64, `wav` or `mp3`).
 */
export type ContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string } }
  | {
    readonly type: "input_audio";
    readonly input_audio: { readonly data: string; readonly format: string };
  };

/** The user's words; or, after a turn whose tools answered images or audio, those as content parts. */
export interface UserMessage {
  readonly role: "user";
  readonly content: string | readonly ContentPart[];
}

/** The model's turn: text, tool calls, or both. */
export interface AssistantMessage {
  readonly role: "assistant";
  readonly content: string | null;
  readonly tool_calls?: readonly ToolCall[];
}

/** The answer to one tool call: a serialized envelope. */
export interface ToolMessage {
  readonly role: "tool";
  readonly tool_call_id: string;
  readonly content: string;
}

/** Any message of a conversation. */
export type ChatMessage = InstructionMessage | UserMessage | AssistantMessage | ToolMessage;

/** An assistant turn as the endpoint ended it. */
export interface AssistantTurn {
  readonly message: AssistantMessage;
  /** `stop`, `tool_calls`, `length`, ... when the endpoint says. */
  readonly finishReason?: string;
  /** The tokens the endpoint counted for this answer, when it said. */
  readonly usage?: Usage;
}

const quote = (value: string): string => JSON.stringify(value);

/**
 * The tool calls of an assistant message at `where`; throws `fail(message)` naming the broken part.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkToolCalls } from "./messages.ts";
 * assert.deepEqual(checkToolCalls([{ id: "c1", function: { name: "t", arguments: { a: 1 } } }], "tool_calls", (m) => new Error(m)), [{ id: "c1", type: "function", function: { name: "t", arguments: '{"a":1}' } }]);
 * ```
 */
export function checkToolCalls(value: unknown, where: string, fail: (message: string) => Error): ToolCall[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw fail(`${where} is not an array`);
  const seen = new Set<string>();
  return value.map((raw, i) => {
    const at = `${where}[${i}]`;
    if (!isRecord(raw)) throw fail(`${at} is not an object`);
    if (typeof raw.id !== "string" || raw.id === "") throw fail(`${at}.id is missing`);
    if (seen.has(raw.id)) throw fail(`${at}.id ${quote(raw.id)} repeats an earlier call's id`);
    seen.add(raw.id);
    if (raw.type !== undefined && raw.type !== "function") {
      throw fail(`${at}.type is ${quote(String(raw.type))}, not "function"`);
    }
    const fn = raw.function;
    if (!isRecord(fn)) throw fail(`${at}.function is missing`);
    if (typeof fn.name !== "string" || fn.name === "") throw fail(`${at}.function.name is missing`);
    // Some servers send the arguments as an object rather than as JSON text: the same thing, so take it.
    const args = fn.arguments === undefined || fn.arguments === null
      ? ""
      : typeof fn.arguments === "string"
      ? fn.arguments
      : isRecord(fn.arguments)
      ? JSON.stringify(fn.arguments)
      : undefined;
    if (args === undefined) throw fail(`${at}.function.arguments is neither text nor an object`);
    return { id: raw.id, type: "function", function: { name: fn.name, arguments: args } };
  });
}

/**
 * Builds an assistant message, leaving out `tool_calls` when there are none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assistantMessage } from "./messages.ts";
 * assert.deepEqual(assistantMessage("hi", []), { role: "assistant", content: "hi" });
 * ```
 */
export function assistantMessage(content: string | null, toolCalls: readonly ToolCall[]): AssistantMessage {
  return toolCalls.length > 0
    ? { role: "assistant", content, tool_calls: toolCalls }
    : { role: "assistant", content };
}

/**
 * The `error` an endpoint put in a body, as text, when there is one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { endpointError } from "./messages.ts";
 * assert.equal(endpointError({ error: { message: "model not found" } }), "model not found");
 * assert.equal(endpointError({ choices: [] }), undefined);
 * ```
 */
export function endpointError(value: unknown): string | undefined {
  if (!isRecord(value) || value.error === undefined || value.error === null) return undefined;
  const error = value.error;
  if (typeof error === "string") return error;
  if (isRecord(error) && typeof error.message === "string") return error.message;
  return JSON.stringify(error);
}

/**
 * Reads a chat-completions answer body (already JSON-parsed) as the assistant's turn; throws an
 * {@linkcode AgentError} that names what is wrong when it is not one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseCompletion } from "./messages.ts";
 * assert.deepEqual(parseCompletion({ choices: [{ message: { role: "assistant", content: "hi" }, finish_reason: "stop" }] }), { message: { role: "assistant", content: "hi" }, finishReason: "stop" });
 * ```
 */
export function parseCompletion(value: unknown): AssistantTurn {
  const fail = (message: string) => new AgentError(`malformed answer from the chat endpoint: ${message}`);
  const error = endpointError(value);
  if (error !== undefined) {
    throw new AgentError(`the chat endpoint answered with an error: ${clip(error, 2000)}`);
  }
  if (!isRecord(value)) throw fail("the body is not a JSON object");
  if (!Array.isArray(value.choices) || value.choices.length === 0) throw fail("it has no choices");
  const choice = value.choices[0];
  if (!isRecord(choice) || !isRecord(choice.message)) throw fail("choices[0].message is missing");
  const message = choice.message;
  if (message.role !== undefined && message.role !== "assistant") {
    throw fail(`choices[0].message.role is ${quote(String(message.role))}, not "assistant"`);
  }
  if (message.content !== undefined && message.content !== null && typeof message.content !== "string") {
    throw fail("choices[0].message.content is neither text nor null");
  }
  const toolCalls = checkToolCalls(message.tool_calls, "choices[0].message.tool_calls", fail);
  const content = typeof message.content === "string" ? message.content : null;
  const finishReason = typeof choice.finish_reason === "string" ? choice.finish_reason : undefined;
  const usage = readUsage(value);
  return { message: assistantMessage(content, toolCalls), finishReason, ...(usage ? { usage } : {}) };
}

/**
 * Checks a saved conversation message by message; `fail` builds the error for the first broken one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkMessages } from "./messages.ts";
 * assert.deepEqual(checkMessages([{ role: "user", content: "hi" }], (m) => new Error(m)), [{ role: "user", content: "hi" }]);
 * ```
 */
export function checkMessages(value: unknown, fail: (message: string) => Error): ChatMessage[] {
  if (!Array.isArray(value)) {
    throw fail("expected a JSON array of messages (or an object with one in `messages`)");
  }
  const answered = new Set<string>();
  const asked = new Set<string>();
  // The calls of the last assistant message still waiting for their answer.
  let pending: string[] = [];
  const messages = value.map((raw, i): ChatMessage => {
    const at = `message[${i}]`;
    if (!isRecord(raw)) throw fail(`${at} is not an object`);
    if (raw.role !== "tool" && pending.length > 0) {
      throw fail(`${at}: the tool call ${quote(pending[0])} before it was never answered`);
    }
    switch (raw.role) {
      case "user":
        if (Array.isArray(raw.content)) return { role: "user", content: checkParts(raw.content, at, fail) };
        if (typeof raw.content !== "string") throw fail(`${at} (user): content must be text or parts`);
        return { role: "user", content: raw.content };
      case "system":
      case "developer":
        if (typeof raw.content !== "string") throw fail(`${at} (${raw.role}): content must be text`);
        return { role: raw.role, content: raw.content };
      case "assistant": {
        if (raw.content !== undefined && raw.content !== null && typeof raw.content !== "string") {
          throw fail(`${at} (assistant): content must be text or null`);
        }
        const calls = checkToolCalls(raw.tool_calls, `${at}.tool_calls`, fail);
        for (const call of calls) asked.add(call.id);
        pending = calls.map((call) => call.id);
        return assistantMessage(typeof raw.content === "string" ? raw.content : null, calls);
      }
      case "tool":
        if (typeof raw.tool_call_id !== "string" || !asked.has(raw.tool_call_id)) {
          throw fail(`${at} (tool): tool_call_id does not name a call of an earlier assistant message`);
        }
        if (answered.has(raw.tool_call_id)) {
          throw fail(`${at} (tool): a second answer to call ${quote(raw.tool_call_id)}`);
        }
        answered.add(raw.tool_call_id);
        pending = pending.filter((id) => id !== raw.tool_call_id);
        if (typeof raw.content !== "string") throw fail(`${at} (tool): content must be text`);
        return { role: "tool", tool_call_id: raw.tool_call_id, content: raw.content };
      default:
        throw fail(`${at}: unknown role ${quote(String(raw.role))}`);
    }
  });
  if (pending.length > 0) throw fail(`the tool call ${quote(pending[0])} at the end was never answered`);
  return messages;
}

/** The content parts of a saved user message, each of a kind the loop sends. */
function checkParts(parts: readonly unknown[], at: string, fail: (message: string) => Error): ContentPart[] {
  return parts.map((part, i) => {
    const where = `${at}.content[${i}]`;
    if (!isRecord(part)) throw fail(`${where} is not an object`);
    if (part.type === "text" && typeof part.text === "string") return { type: "text", text: part.text };
    if (part.type === "image_url" && isRecord(part.image_url) && typeof part.image_url.url === "string") {
      return { type: "image_url", image_url: { url: part.image_url.url } };
    }
    const audio = part.input_audio;
    if (
      part.type === "input_audio" && isRecord(audio) && typeof audio.data === "string" &&
      typeof audio.format === "string"
    ) {
      return { type: "input_audio", input_audio: { data: audio.data, format: audio.format } };
    }
    throw fail(`${where} is not a text, image_url or input_audio part`);
  });
}
