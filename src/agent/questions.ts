/**
 * A `toolgate/1` tool's questions in the agent loop: the user's form on the terminal (one question at a time, the
 * progress line held while it is asked), the model's question to the run's own model once the approval policy
 * let the text go (`--yes` or `--allow-tools` approve sending it; a person is asked otherwise). Without a
 * terminal nobody answers a form: the tool is told so; `--yes` never answers one on the user's behalf.
 *
 * @module
 */
import type { ReadLine } from "../policy/ask.ts";
import type { Policy } from "../policy/policy.ts";
import { askForm, askUrl } from "../ui/terminal_form.ts";
import type { QuestionHandlers, SamplingAnswer } from "../run/tool_questions.ts";
import type { SamplingRequest } from "../manifest/tool_messages.ts";
import { parseCompletion } from "./messages.ts";
import type { ChatTransport } from "./loop.ts";

/** What the loop's question handlers use. */
export interface AgentQuestionOptions {
  /** Reads a line from the terminal after writing a prompt; absent: no terminal, nobody to ask. */
  readonly readLine?: ReadLine;
  /** Writes to the terminal (stderr). */
  readonly write: (text: string) => Promise<void>;
  /** The run's approval policy (it asks the person on the terminal where it can). */
  readonly policy: Policy;
  /** The run's model and its endpoint. */
  readonly client: ChatTransport;
  readonly model: string;
  /** Runs a terminal question with the progress line held (see `Progress.hold`). */
  readonly hold?: <T>(ask: () => Promise<T>) => Promise<T>;
}

/**
 * A sampling request as chat-completions messages: a text block as text, an image as an `image_url` part of a
 * user message (a data URL); audio, which the endpoint takes in no standard form, as a note naming it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { samplingMessages } from "./questions.ts";
 * assert.deepEqual(samplingMessages({ messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 }), [{ role: "user", content: "hi" }]);
 * ```
 */
export function samplingMessages(request: SamplingRequest): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [];
  if (request.systemPrompt !== undefined) messages.push({ role: "system", content: request.systemPrompt });
  for (const { role, content } of request.messages) {
    if (content.type === "text") messages.push({ role, content: String(content.text) });
    else if (content.type === "image" && role === "user") {
      messages.push({
        role,
        content: [{
          type: "image_url",
          image_url: { url: `data:${content.mimeType};base64,${content.data}` },
        }],
      });
    } else {
      messages.push({
        role,
        content: `[${content.type} (${String(content.mimeType)}) left out: not sent to the model]`,
      });
    }
  }
  return messages;
}

/**
 * The loop's question handlers.
 *
 * @example Not run as a doc test: it needs an executor, a terminal and a chat endpoint.
 * ```ts ignore
 * import { agentQuestions } from "./questions.ts";
 * executor.run(call, { questions: agentQuestions({ readLine, write, policy, client, model }) });
 * ```
 */
export function agentQuestions(options: AgentQuestionOptions): QuestionHandlers {
  // One question on the terminal at a time, whichever call asks it.
  let turn: Promise<unknown> = Promise.resolve();
  const onTerminal = <T>(ask: () => Promise<T>): Promise<T> => {
    const hold = options.hold ?? ((run: () => Promise<T>) => run());
    const next = turn.then(() => hold(ask));
    turn = next.catch(() => {});
    return next;
  };
  const readLine = options.readLine;
  return {
    user: readLine === undefined ? undefined : (question, { tool, signal }) =>
      onTerminal(() => {
        if (signal.aborted) return Promise.resolve({ action: "cancel" as const });
        return askForm(question, readLine, options.write, tool.name);
      }),
    url: readLine === undefined ? undefined : (question, { tool, signal }) =>
      onTerminal(() => {
        if (signal.aborted) return Promise.resolve({ action: "cancel" as const });
        return askUrl(question, readLine, options.write, tool.name);
      }),
    model: async (request, { tool, signal }) => {
      const verdict = await onTerminal(() => options.policy.decideSampling(tool, request, { signal }));
      if (!verdict.approved) throw new Error(verdict.envelope.message);
      const body: Record<string, unknown> = {
        model: options.model,
        messages: samplingMessages(request),
        max_tokens: request.maxTokens,
      };
      if (request.temperature !== undefined) body.temperature = request.temperature;
      if (request.stopSequences !== undefined) body.stop = request.stopSequences;
      const turn = parseCompletion(await options.client.complete(body));
      const answer: SamplingAnswer = {
        role: "assistant",
        content: { type: "text", text: turn.message.content ?? "" },
        model: options.model,
        ...(turn.finishReason === undefined ? {} : {
          stopReason: turn.finishReason === "length"
            ? "maxTokens"
            : turn.finishReason === "stop"
            ? "endTurn"
            : turn.finishReason,
        }),
      };
      return answer;
    },
    nobody: "toolgate runs without a terminal, so nobody can answer the tool's question (--yes answers none)",
  };
}
