/**
 * One request to the model inside its span (`chat {model}`, a child of the agent run's): the span ends with what
 * the answer said of itself (why the model stopped, the tokens the endpoint counted), or with the failure's
 * kind. Nothing of the messages or of the answer's text goes into it.
 *
 * @module
 */
import type { ChatSpan } from "../run/tracing.ts";
import type { AssistantTurn } from "./messages.ts";

/**
 * Runs `ask` (one request to the model, a retry included) and ends `span` with its outcome.
 *
 * @example
 * ```ts
 * import { askInSpan } from "./chat_span.ts";
 * import { NO_TRACING } from "../run/tracing.ts";
 * const turn = { message: { role: "assistant" as const, content: "hi" }, finishReason: "stop" };
 * await askInSpan(NO_TRACING.chat({ model: "m" }), () => Promise.resolve({ turn, printed: "" }));
 * ```
 */
export async function askInSpan<T extends { readonly turn: AssistantTurn }>(
  span: ChatSpan,
  ask: () => Promise<T>,
): Promise<T> {
  let answered: T;
  try {
    answered = await ask();
  } catch (error) {
    // The error's class, never its message (an endpoint's error may quote the request).
    span.end({ errorType: (error as Error)?.name ?? "Error" });
    throw error;
  }
  const { turn } = answered;
  span.end({
    finishReason: turn.finishReason,
    inputTokens: turn.usage?.prompt_tokens,
    outputTokens: turn.usage?.completion_tokens,
  });
  return answered;
}
