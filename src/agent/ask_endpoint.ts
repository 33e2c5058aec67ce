/**
 * One request of the agent loop to its endpoint, and its answer read as the assistant's turn: in one piece, or
 * streamed (text passed on as it arrives), with the endpoint's quirks learned along the run.
 *
 * @module
 */
import { AgentError } from "./errors.ts";
import type { StreamedAnswer } from "./chat_client.ts";
import type { ChatRequest } from "./chat_client.ts";
import { type AssistantTurn, parseCompletion } from "./messages.ts";
import { readStreamedTurn } from "./sse.ts";
import type { LoopOptions } from "./loop.ts";

/** What a request needs of the loop's options. */
export type AskOptions = Pick<LoopOptions, "client" | "notice" | "onText" | "debug" | "streamIdleMs">;

/**
 * One request of the loop, unstreamed: the endpoint's answer as the assistant's turn.
 *
 * @example Not run as a doc test: it needs a chat endpoint (tests/agent/ runs one).
 * ```ts ignore
 * import { askOnce } from "./ask_endpoint.ts";
 * const { turn } = await askOnce(body, { client });
 * ```
 */
export async function askOnce(
  body: ChatRequest,
  options: AskOptions,
): Promise<{ turn: AssistantTurn; printed: string }> {
  return { turn: parseCompletion(await options.client.complete(body)), printed: "" };
}

/** What the loop learned about its endpoint during a run. */
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
 * One request of the loop, streamed: the text passed on as it arrives (`onText`), the turn once it ends. An
 * endpoint that refuses `stream_options` gets the request again without it, and `endpoint` remembers that.
 *
 * @example Not run as a doc test: it needs a streaming chat endpoint (tests/agent/ runs one).
 * ```ts ignore
 * import { askStreaming } from "./ask_endpoint.ts";
 * const { turn, printed } = await askStreaming(body, options, { refusesStreamOptions: false });
 * ```
 */
export async function askStreaming(
  body: ChatRequest,
  options: AskOptions,
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
