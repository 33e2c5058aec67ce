/**
 * One streamed turn of the agent loop: the request sent with `stream: true` (again without `stream_options` when
 * the endpoint refuses them), the text printed as it comes, and the assistant's turn read from the event stream (or
 * from JSON, when the server ignored `stream`).
 *
 * @module
 */
import { AgentError } from "./errors.ts";
import type { ChatRequest, StreamedAnswer } from "./chat_client.ts";
import { type AssistantTurn, parseCompletion } from "./messages.ts";
import { readStreamedTurn } from "./sse.ts";
import type { LoopOptions } from "./loop.ts";

/**
 * What the loop learned about its endpoint during a run.
 *
 * @example
 * ```ts
 * import type { EndpointQuirks } from "./ask_streaming.ts";
 * const quirks: EndpointQuirks = { refusesStreamOptions: false };
 * ```
 */
export interface EndpointQuirks {
  /** It answered 4xx naming `stream_options` (some older servers reject fields they do not know). */
  refusesStreamOptions: boolean;
}

/** Whether an endpoint's refusal is of `stream_options` itself: then the same request goes again without it. */
function refusesStreamOptions(error: unknown): boolean {
  return error instanceof AgentError && error.status !== undefined && error.status >= 400 &&
    error.status < 500 && error.message.includes("stream_options");
}

/**
 * Asks the model for one streamed turn.
 *
 * @example
 * ```ts ignore
 * const { turn, printed } = await askStreaming(body, options, { refusesStreamOptions: false });
 * ```
 */
export async function askStreaming(
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
