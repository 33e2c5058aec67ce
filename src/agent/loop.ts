/**
 * The agent loop: ask the model, answer its tool calls through the executor, until it gives a final answer or the
 * step cap is reached. Each turn takes three passes: check every call in the model's order (lookup, arguments,
 * the approval policy); run them through the scheduler (calls of `concurrent` tools side by side, every other call
 * alone, in the model's order); answer each call with exactly one tool message, in the model's order. On a
 * terminal the stop button (Ctrl-C) ends the calls of the turn in flight: each is answered `killed_by: "user"`, and
 * the loop goes on to the model. A turn's calls are answered in `turn_calls.ts`; the run is the trace's root span.
 *
 * @module
 */
import { type Envelope } from "../contract.ts";
import type { Executor } from "../run/executor.ts";
import { type OpenAITool, toOpenAI } from "../manifest/tool_definitions.ts";
import { AgentError } from "./errors.ts";
import type { EventSink } from "./events.ts";
import type { ChatRequest, StreamedAnswer } from "./chat_client.ts";
import { type AssistantTurn, type ChatMessage, parseCompletion } from "./messages.ts";
import { readStreamedTurn } from "./sse.ts";
import type { LoopSecrets } from "./credential_heal.ts";
import { storeSecretOpenAI } from "../run/store_secret.ts";
import { ToolDisclosure } from "./lazy_tools.ts";
import { answerToolCalls, type TurnOptions } from "./turn_calls.ts";

export { answerToolCalls, DEFAULT_MAX_PARALLEL, type TurnOptions } from "./turn_calls.ts";

/** What the loop needs of a chat client ({@linkcode ChatClient} is one). */
export interface ChatTransport {
  complete(body: ChatRequest): Promise<unknown>;
  stream(body: ChatRequest): Promise<StreamedAnswer>;
}

/** How the loop talks to the model. */
export interface LoopOptions extends TurnOptions {
  readonly client: ChatTransport;
  readonly model: string;
  /** Requests to the model before giving up. */
  readonly maxSteps: number;
  readonly temperature?: number;
  /** Ask for server-sent events and pass the text on as it arrives. */
  readonly stream?: boolean;
  /** A stream that sends nothing for this long fails. */
  readonly streamIdleMs?: number;
  /** Receives the answer's text as it streams (stdout). */
  readonly onText?: (text: string) => Promise<void>;
  /** Receives each streamed event (for `--debug`). */
  readonly debug?: (text: string) => Promise<void>;
  /** Receives what happens: each request, answer, tool call and tool result (for `--output jsonl`, and usage). */
  readonly onEvent?: EventSink;
}

/** How a run ended. */
export type LoopOutcome =
  | {
    readonly kind: "answer";
    /** The final answer's text ("" when the model gave none). */
    readonly text: string;
    /** The text already went to `onText`. */
    readonly streamed: boolean;
    readonly steps: number;
    readonly finishReason?: string;
  }
  | { readonly kind: "step_limit"; readonly steps: number };

/**
 * The chat-completions request for a conversation: the manifest's tools in OpenAI's shape (or the `tools` given,
 * such as stubs) with `tool_choice: "auto"`, or no tools key at all when there are none. A streamed request asks
 * for the token usage in the stream's last chunk (`stream_options.include_usage`).
 *
 * @example
 * ```ts
 * import { chatRequest } from "./loop.ts";
 * // chatRequest(executor, messages, { model: "gpt-4o-mini" })
 * // { model: "gpt-4o-mini", messages, tools: [...], tool_choice: "auto" }
 * ```
 */
export function chatRequest(
  executor: Executor,
  messages: readonly ChatMessage[],
  options: {
    model: string;
    temperature?: number;
    stream?: boolean;
    tools?: readonly OpenAITool[];
    /** Leave out `stream_options` (for an endpoint that refuses it). */
    streamWithoutUsage?: boolean;
    /** The loop's \`store_secret\`: offered beside the tools when one declares a secret. */
    secrets?: LoopSecrets;
  },
): ChatRequest {
  const body: Record<string, unknown> = { model: options.model, messages };
  const tools: unknown[] = [...(options.tools ?? executor.manifest.tools.map(toOpenAI))];
  // store_secret on every request from the first, whole (never a stub): a credential failure heals at once.
  if (options.secrets && executor.declaredSecrets.length > 0) tools.push(storeSecretOpenAI());
  if (tools.length > 0) {
    body.tools = tools;
    body.tool_choice = "auto";
  }
  if (options.temperature !== undefined) body.temperature = options.temperature;
  if (options.stream) {
    body.stream = true;
    if (!options.streamWithoutUsage) body.stream_options = { include_usage: true };
  }
  return body;
}

/**
 * Runs the loop on `messages`, appending every assistant and tool message to it (the caller keeps it, to save it
 * even when the loop fails). Throws an {@linkcode AgentError} when the endpoint fails or answers nonsense.
 *
 * @example
 * ```ts
 * import { runLoop } from "./loop.ts";
 * // const outcome = await runLoop(messages, { executor, policy: new Policy({ yes: true }), client, model: "m", maxSteps: 8 });
 * // if (outcome.kind === "answer") console.log(outcome.text);
 * ```
 */
export async function runLoop(messages: ChatMessage[], options: LoopOptions): Promise<LoopOutcome> {
  // The run is the trace's root (`invoke_agent`): every tool call's span, here and downstream, is its child.
  const span = options.executor.tracing.agentRun({ model: options.model });
  let failed: string | undefined = "Error";
  try {
    const outcome = await loopSteps(messages, { ...options, trace: span });
    failed = outcome.kind === "step_limit" ? "step_limit" : undefined;
    return outcome;
  } catch (error) {
    failed = error instanceof Error ? error.name : "Error";
    throw error;
  } finally {
    span.end(failed);
  }
}

async function loopSteps(messages: ChatMessage[], options: LoopOptions): Promise<LoopOutcome> {
  const disclosure = options.disclosure ?? new ToolDisclosure(options.executor.manifest, { lazy: false });
  const emit = options.onEvent ?? (() => Promise.resolve());
  const endpoint: EndpointQuirks = { refusesStreamOptions: false };
  for (let step = 1; step <= options.maxSteps; step++) {
    const tools = disclosure.definitions();
    const body = chatRequest(options.executor, messages, {
      ...options,
      tools,
      streamWithoutUsage: endpoint.refusesStreamOptions,
    });
    await emit({
      type: "request",
      step,
      model: options.model,
      messages: messages.length,
      tools: tools.length,
      tool_stubs: disclosure.stubs,
      bytes: new TextEncoder().encode(JSON.stringify(body)).byteLength,
    });
    const { turn, printed } = options.stream
      ? await askStreaming(body, options, endpoint)
      : await askOnce(body, options);
    messages.push(turn.message);
    const calls = turn.message.tool_calls ?? [];
    await emit({
      type: "response",
      step,
      ...(turn.finishReason === undefined ? {} : { finish_reason: turn.finishReason }),
      text: turn.message.content,
      tool_calls: calls.length,
      ...(turn.usage === undefined ? {} : { usage: turn.usage }),
    });
    if (calls.length === 0) {
      const text = turn.message.content ?? "";
      if (printed !== "" && !printed.endsWith("\n")) await options.onText?.("\n");
      return { kind: "answer", text, streamed: printed !== "", steps: step, finishReason: turn.finishReason };
    }
    // Text streamed beside tool calls was the model thinking aloud: end its line before anything else prints.
    if (printed !== "" && !printed.endsWith("\n")) await options.onText?.("\n");
    for (const call of calls) {
      await emit({
        type: "tool_call",
        step,
        id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
      });
    }
    const answers = await answerToolCalls(calls, { ...options, disclosure });
    for (const [index, answer] of answers.entries()) {
      const envelope = JSON.parse(answer.content) as Envelope;
      await emit({
        type: "tool_result",
        step,
        id: answer.tool_call_id,
        name: calls[index].function.name,
        ok: envelope.ok,
        envelope,
      });
    }
    messages.push(...answers);
  }
  return { kind: "step_limit", steps: options.maxSteps };
}

async function askOnce(
  body: ChatRequest,
  options: LoopOptions,
): Promise<{ turn: AssistantTurn; printed: string }> {
  return { turn: parseCompletion(await options.client.complete(body)), printed: "" };
}

/** What the loop learned about its endpoint during a run. */
interface EndpointQuirks {
  /** It answered 4xx naming `stream_options` (some older servers reject fields they do not know). */
  refusesStreamOptions: boolean;
}

/** Whether an endpoint's refusal is of `stream_options` itself: then the same request goes again without it. */
function refusesStreamOptions(error: unknown): boolean {
  return error instanceof AgentError && error.status !== undefined && error.status >= 400 &&
    error.status < 500 && error.message.includes("stream_options");
}

async function askStreaming(
  body: ChatRequest,
  options: LoopOptions,
  endpoint: EndpointQuirks,
): Promise<{ turn: AssistantTurn; printed: string }> {
  let answer: StreamedAnswer;
  try {
    answer = await options.client.stream(body);
  } catch (error) {
    if (!("stream_options" in body) || !refusesStreamOptions(error)) throw error;
    endpoint.refusesStreamOptions = true;
    await options.notice?.("toolgate: the endpoint refused stream_options: streaming without token usage\n");
    const { stream_options: _, ...plain } = body;
    answer = await options.client.stream(plain);
  }
  let printed = "";
  const onText = async (text: string) => {
    printed += text;
    await options.onText?.(text);
  };
  if (!answer.contentType.toLowerCase().includes("text/event-stream")) {
    // The server ignored `stream: true` and answered in one piece.
    const text = await new Response(answer.body).text();
    await options.debug?.(`<- ${text}`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new AgentError(
        `malformed answer from the chat endpoint: neither an event stream nor JSON: ${
          JSON.stringify(text.slice(0, 200))
        }`,
      );
    }
    const turn = parseCompletion(value);
    if (turn.message.content) await onText(turn.message.content);
    return { turn, printed };
  }
  const turn = await readStreamedTurn(answer.body, {
    idleTimeoutMs: options.streamIdleMs,
    onText,
    debug: options.debug,
  });
  return { turn, printed };
}
