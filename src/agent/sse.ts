/**
 * Streaming answers: server-sent events read from a byte stream, and the chat-completions chunks they carry
 * assembled into one assistant message (text deltas in order, tool-call deltas joined by index).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import { AgentError } from "./errors.ts";
import { assistantMessage, type AssistantTurn, checkToolCalls, endpointError } from "./messages.ts";
import { readUsage, type Usage } from "./usage.ts";
import { clip, seconds } from "../base/text.ts";
import { after, type CancelTimer } from "../base/timer.ts";

/** One server-sent event: its type (`message` unless named) and its data lines joined by `\n`. */
export interface SseEvent {
  readonly event: string;
  readonly data: string;
}

/** Options of {@linkcode readSse}. */
export interface SseOptions {
  /**
   * Fails the read when no event carrying data arrives for this long. Comments, empty events and bytes that end
   * no event do not count: a server that only keeps the connection alive (`: ping` every second) is as stalled as
   * a silent one.
   */
  readonly idleTimeoutMs?: number;
}

/**
 * Reads server-sent events from a byte stream, whatever the chunking: CRLF, LF or CR line ends, comments, `event:`
 * and multi-line `data:` fields. An event without data is skipped, as the spec says.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readSse } from "./sse.ts";
 * const body = new Response("data: a\n\ndata: b\n\n").body!;
 * const data: string[] = [];
 * for await (const event of readSse(body)) data.push(event.data);
 * assert.deepEqual(data, ["a", "b"]);
 * ```
 */
export async function* readSse(
  stream: ReadableStream<Uint8Array>,
  options: SseOptions = {},
): AsyncGenerator<SseEvent> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  const idle = options.idleTimeoutMs;
  // Moved on only by an event with data (and only once its reader is done with it).
  let deadline = idle === undefined ? Infinity : performance.now() + idle;
  let buffer = "";
  let data: string[] = [];
  let event = "";
  let finished = false;
  /** The buffer ends with a CR that may be half a CRLF. */
  let heldCr = false;
  try {
    while (true) {
      const chunk = await readBefore(reader, deadline, idle);
      let text: string;
      if (chunk.done) {
        text = decoder.decode();
        finished = true;
      } else {
        text = decoder.decode(chunk.value, { stream: true });
      }
      // A piece that ends no line is only kept: splitting the whole buffer again at every piece of one long line
      // would cost time in the square of its length (so would looking at the buffer's end: it is not flat).
      const endsLine = /[\r\n]/.test(text) || heldCr;
      if (text !== "") heldCr = text.endsWith("\r");
      buffer += text;
      if (!finished && !endsLine) continue;
      // A lone CR at the end may be the first half of a CRLF: keep it until more arrives.
      const lines = buffer.split(/\r\n|\n|\r(?!$)/);
      buffer = finished ? "" : lines.pop() ?? "";
      if (finished && lines.length > 0 && lines[lines.length - 1] !== "") lines.push("");
      for (const raw of lines) {
        const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
        if (line === "") {
          if (data.length > 0) {
            yield { event: event || "message", data: data.join("\n") };
            if (idle !== undefined) deadline = performance.now() + idle;
          }
          data = [];
          event = "";
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
      }
      if (finished) return;
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/** The next chunk, or an {@linkcode AgentError} when `deadline` (a `performance.now()` time) passes first. */
async function readBefore(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  deadline: number,
  idleMs: number | undefined,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  if (idleMs === undefined || deadline === Infinity) return await reader.read();
  let cancel: CancelTimer | undefined;
  const idle = new Promise<never>((_, reject) => {
    cancel = after(
      Math.max(0, deadline - performance.now()),
      () =>
        reject(
          new AgentError(`the chat endpoint's stream went quiet: no event data for ${seconds(idleMs)}`),
        ),
    );
  });
  try {
    return await Promise.race([reader.read(), idle]);
  } finally {
    cancel?.();
  }
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
  argumentsObject?: Record<string, unknown>;
}

/**
 * Joins chat-completions stream chunks into the assistant's turn: text deltas in order, and tool-call deltas by
 * `index` (id and name from the first delta that has them, arguments concatenated).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { StreamAssembler } from "./sse.ts";
 * const assembler = new StreamAssembler();
 * assembler.add({ choices: [{ delta: { tool_calls: [{ index: 0, id: "c1", function: { name: "t", arguments: "{\"a\"" } }] } }] });
 * assembler.add({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: ":1}" } }] } }] });
 * assert.equal(assembler.finish().message.tool_calls?.[0].function.arguments, '{"a":1}');
 * ```
 */
export class StreamAssembler {
  #text = "";
  #sawText = false;
  #calls = new Map<number, PartialCall>();
  #lastIndex = -1;
  #finishReason?: string;
  #chunks = 0;
  #usage?: Usage;

  /** Takes one parsed chunk; returns the text it adds (for printing as it arrives). */
  add(chunk: unknown): string {
    const fail = (message: string) => new AgentError(`malformed stream from the chat endpoint: ${message}`);
    const error = endpointError(chunk);
    if (error !== undefined) throw new AgentError(`the chat endpoint's stream carried an error: ${error}`);
    if (!isRecord(chunk)) throw fail("a chunk is not a JSON object");
    this.#chunks++;
    // Asked with `stream_options.include_usage`, the usage comes in a last chunk of its own (some servers repeat
    // it, or send it beside a choice): the last one counts.
    this.#usage = readUsage(chunk) ?? this.#usage;
    // A usage-only chunk has no choices: nothing to add.
    if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) return "";
    const choice = chunk.choices[0];
    if (!isRecord(choice)) throw fail("choices[0] is not an object");
    if (typeof choice.finish_reason === "string") this.#finishReason = choice.finish_reason;
    // Some servers end with a whole `message` instead of a delta.
    const delta = isRecord(choice.delta)
      ? choice.delta
      : isRecord(choice.message)
      ? choice.message
      : undefined;
    if (!delta) return "";
    let added = "";
    if (typeof delta.content === "string") {
      added = delta.content;
      this.#text += added;
      this.#sawText = true;
    }
    if (delta.tool_calls !== undefined && delta.tool_calls !== null) {
      if (!Array.isArray(delta.tool_calls)) throw fail("delta.tool_calls is not an array");
      for (const raw of delta.tool_calls) this.#addCall(raw, fail);
    }
    return added;
  }

  #addCall(raw: unknown, fail: (message: string) => AgentError): void {
    if (!isRecord(raw)) throw fail("a tool-call delta is not an object");
    const id = typeof raw.id === "string" && raw.id !== "" ? raw.id : undefined;
    let index: number;
    if (typeof raw.index === "number" && Number.isInteger(raw.index) && raw.index >= 0) {
      index = raw.index;
    } else {
      // Without an index, a new id starts a new call and anything else continues the last one.
      const known = id !== undefined && [...this.#calls.values()].some((c) => c.id === id);
      index = id !== undefined && !known ? this.#calls.size : this.#lastIndex;
      if (index < 0) throw fail("a tool-call delta has neither an index nor an id");
    }
    this.#lastIndex = index;
    const call = this.#calls.get(index) ?? { id: "", name: "", arguments: "" };
    this.#calls.set(index, call);
    if (id !== undefined && call.id === "") call.id = id;
    const fn = isRecord(raw.function) ? raw.function : undefined;
    if (!fn) return;
    if (typeof fn.name === "string" && fn.name !== "" && call.name === "") call.name = fn.name;
    if (typeof fn.arguments === "string") call.arguments += fn.arguments;
    else if (isRecord(fn.arguments)) call.argumentsObject = fn.arguments;
  }

  /** The assembled turn; throws when the stream carried no answer or a call is missing its id or name. */
  finish(): AssistantTurn {
    const fail = (message: string) => new AgentError(`malformed stream from the chat endpoint: ${message}`);
    if (this.#chunks === 0) throw fail("it ended before any answer");
    const raw = [...this.#calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => ({
      id: call.id,
      type: "function",
      function: {
        name: call.name,
        arguments: call.arguments === "" && call.argumentsObject ? call.argumentsObject : call.arguments,
      },
    }));
    const toolCalls = checkToolCalls(raw, "the streamed tool_calls", fail);
    return {
      message: assistantMessage(this.#sawText ? this.#text : null, toolCalls),
      finishReason: this.#finishReason,
      ...(this.#usage ? { usage: this.#usage } : {}),
    };
  }
}

/** Options of {@linkcode readStreamedTurn}. */
export interface StreamedTurnOptions extends SseOptions {
  /** Receives each piece of text as it arrives. */
  readonly onText?: (text: string) => Promise<void>;
  /** Receives each event's data as it arrives. */
  readonly debug?: (text: string) => Promise<void>;
}

/**
 * Reads a whole streamed chat-completions answer: events until `[DONE]` (or the end of the stream), each chunk
 * fed to a {@linkcode StreamAssembler}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readStreamedTurn } from "./sse.ts";
 * const body = new Response('data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n').body!;
 * assert.equal((await readStreamedTurn(body)).message.content, "hi");
 * ```
 */
export async function readStreamedTurn(
  body: ReadableStream<Uint8Array>,
  options: StreamedTurnOptions = {},
): Promise<AssistantTurn> {
  const assembler = new StreamAssembler();
  for await (const event of readSse(body, options)) {
    if (options.debug) await options.debug(`<- data: ${event.data}`);
    if (event.data.trim() === "[DONE]") break;
    let chunk: unknown;
    try {
      chunk = JSON.parse(event.data);
    } catch {
      const shown = clip(event.data, 200);
      throw new AgentError(
        `malformed stream from the chat endpoint: an event is not JSON: ${JSON.stringify(shown)}`,
      );
    }
    if (event.event === "error") {
      throw new AgentError(`the chat endpoint's stream carried an error: ${event.data}`);
    }
    const text = assembler.add(chunk);
    if (text !== "" && options.onText) await options.onText(text);
  }
  return assembler.finish();
}
