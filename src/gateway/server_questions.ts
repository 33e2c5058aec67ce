/**
 * What an upstream MCP server asks its client, toolgate, while it runs: a form for the user
 * (`elicitation/create`), a model's answer (`sampling/createMessage`) and its roots (`roots/list`). A question goes
 * to whoever can answer for the call that caused it (the caller's handlers, as a `toolgate/1` tool's questions do:
 * `serve`'s MCP client, the agent loop's terminal and endpoint, `toolgate call`'s terminal; a form's message
 * begins with the server and tool that ask, so that none passes for toolgate's own), secret values taken
 * out of what leaves toolgate; a sampling request is approved by the caller's policy, audited, and the model's
 * answer has secret values taken out before the server sees it. Roots are the workspace the server's sandbox shows,
 * nothing else. A call is asked at most `PROTOCOL_LIMITS.maxQuestions` questions. A question nobody can answer (no
 * call in flight, several, a caller without the handler) is refused at once with an MCP error; every wait is
 * bounded by the call's end and {@linkcode QUESTION_TIMEOUT_MS}.
 *
 * Not here: the server's life and its calls (`upstream.ts`), the handlers of each caller (src/mcp/client_asks.ts,
 * src/agent/questions.ts, src/commands/call.ts), the approval itself (src/policy/policy.ts).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import type { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  type ClientCapabilities,
  type CreateMessageRequest,
  CreateMessageRequestSchema,
  type CreateMessageResult,
  ElicitRequestSchema,
  type ElicitResult,
  ErrorCode,
  ListRootsRequestSchema,
  McpError,
  type Root,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { basename } from "node:path";
import { pathToFileURL } from "node:url";
import type { ContentBlock } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest.ts";
import { mapDeep, PROTOCOL_LIMITS, type SamplingRequest } from "../manifest/tool_protocol.ts";
import type { QuestionHandlers } from "../run/tool_questions.ts";
import type { SamplingFacts } from "../run/tool_gateway.ts";
import { after } from "../base/timer.ts";

/**
 * What toolgate's client tells each upstream server it can be asked: forms (not URL mode), sampling, and roots
 * (fixed for the server's life: no `listChanged`).
 */
export const UPSTREAM_CAPABILITIES: ClientCapabilities = Object.freeze({
  sampling: {},
  elicitation: { form: {} },
  roots: {},
});

/** The longest a server's question waits for its answer (shorter when the call that caused it ends first). */
export const QUESTION_TIMEOUT_MS = 10 * 60 * 1000;

/** One call in flight to the server, and who answers for it. */
export interface AskingCall {
  /** The gateway tool called (`mcp__SERVER__TOOL`): the policy decides and the handlers ask by it. */
  readonly tool: ToolSpec;
  /** The caller's handlers; absent: nobody answers. */
  readonly questions?: QuestionHandlers;
  /** Takes secret values out of text leaving toolgate (what the server asks, what the model answers it). */
  readonly scrub?: (text: string) => string;
  /** Told of each sampling request, answered or refused, for its audit line. */
  readonly onSampling?: (facts: SamplingFacts) => void;
  /** The call's own limit: no question outlives it. */
  readonly timeoutMs: number;
}

/** A call's entry while it runs: what it was given, and its end. */
interface Running {
  /** Absent for a request of toolgate's that is no call (a read, a prompt, a completion): nobody answers for it. */
  readonly call?: AskingCall;
  readonly ended: AbortController;
  /** The questions the server asked for it so far. */
  asked: number;
}

/**
 * The answering side of one upstream server's questions: {@linkcode ServerQuestions.install} sets the client's
 * handlers, {@linkcode ServerQuestions.begin} marks a call in flight (its questions go to its caller).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ServerQuestions } from "./server_questions.ts";
 * const questions = new ServerQuestions("/srv/project");
 * assert.deepEqual(questions.roots(), [{ uri: "file:///srv/project", name: "project" }]);
 * ```
 */
export class ServerQuestions {
  readonly #workspace: string;
  readonly #running = new Set<Running>();

  /** The questions of a server that runs in `workspace`. */
  constructor(workspace: string) {
    this.#workspace = workspace;
  }

  /**
   * The server's roots: the workspace, the one folder every sandbox shows it (what its profile adds inside the
   * workspace lies within it; what it adds outside, the system or a package's install, is no root of the user's).
   */
  roots(): Root[] {
    return [{ uri: pathToFileURL(this.#workspace).href, name: basename(this.#workspace) }];
  }

  /**
   * Marks `call` in flight; the returned function ends it (its open questions are abandoned). Without `call`, a
   * request of toolgate's that is no call is in flight (a read of a resource, a prompt, a completion): a question the
   * server asks meanwhile cannot be told to be another's, and is refused.
   */
  begin(call?: AskingCall): () => void {
    const running: Running = { call, ended: new AbortController(), asked: 0 };
    this.#running.add(running);
    return () => {
      this.#running.delete(running);
      running.ended.abort(new Error("the call that asked ended"));
    };
  }

  /** Answers the server's `roots/list`, `elicitation/create` and `sampling/createMessage` on `client`. */
  install(client: Client): void {
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: this.roots() }));
    client.setRequestHandler(
      ElicitRequestSchema,
      (request, extra) => this.#elicit(request.params, extra.signal),
    );
    client.setRequestHandler(
      CreateMessageRequestSchema,
      (request, extra) => this.#sample(request.params, extra.signal),
    );
  }

  /**
   * The one call in flight the question is for; throws a refusal when there is none, or several, or when the call
   * had its fill of questions (as many as a `toolgate/1` tool may ask: each may cost the user a prompt or money).
   */
  #asker(what: string): Running & { readonly call: AskingCall } {
    if (this.#running.size === 1) {
      const [running] = this.#running;
      const { call } = running;
      if (call === undefined) {
        throw refusal(
          `toolgate refuses the server's ${what}: it came while toolgate's request in flight is no call (a read ` +
            "of a resource, a prompt or a completion), whose asker nobody answers for",
        );
      }
      running.asked += 1;
      if (running.asked > PROTOCOL_LIMITS.maxQuestions) {
        throw refusal(
          `toolgate refuses the server's ${what}: it asked ${running.asked} questions in one call; ` +
            `a call may ask ${PROTOCOL_LIMITS.maxQuestions}`,
        );
      }
      return { ...running, call };
    }
    const why = this.#running.size === 0
      ? "no call of toolgate's to the server is in flight, so nobody can answer it"
      : `${this.#running.size} calls of toolgate's to the server are in flight and the request does not say ` +
        "which one asks, so toolgate answers none of them";
    throw refusal(`toolgate refuses the server's ${what}: ${why}`);
  }

  async #elicit(params: unknown, signal: AbortSignal): Promise<ElicitResult> {
    const running = this.#asker("question to the user (elicitation)");
    const { call } = running;
    const form = params as { mode?: string; message: string; requestedSchema: Record<string, unknown> };
    if (form.mode !== undefined && form.mode !== "form") {
      throw refusal(`toolgate takes form questions only (the server asked in ${form.mode} mode)`);
    }
    const user = call.questions?.user;
    if (user === undefined) {
      throw refusal(
        `toolgate refuses the server's question to the user: ${nobody(call.questions, "the user")}`,
      );
    }
    const clean = <T>(value: T): T => call.scrub === undefined ? value : mapDeep(value, call.scrub) as T;
    // Said to be the server's: a form in toolgate's own words (its request for a secret) is then no longer one.
    const server = JSON.stringify(call.tool.upstream?.server ?? call.tool.name);
    const message = `The MCP server ${server} asks, in its tool ${call.tool.name}: ${form.message}`;
    const question = clean({ message, requestedSchema: form.requestedSchema });
    const answer = await this.#bounded(
      running,
      signal,
      (bound) => user(question, { tool: call.tool, signal: bound }),
    );
    return answer as ElicitResult;
  }

  async #sample(params: CreateMessageRequest["params"], signal: AbortSignal): Promise<CreateMessageResult> {
    const running = this.#asker("request for a model's answer (sampling)");
    const { call } = running;
    const request = samplingRequest(params);
    const argsText = JSON.stringify(params);
    const started = performance.now();
    const told = (outcome: SamplingFacts["outcome"], model?: string) =>
      call.onSampling?.({ argsText, outcome, ms: Math.round(performance.now() - started), model });
    if (typeof request === "string") {
      told("invalid_args");
      throw refusal(`toolgate refuses the server's request for a model's answer: ${request}`);
    }
    const model = call.questions?.model;
    if (model === undefined) {
      told("unavailable");
      throw refusal(
        `toolgate refuses the server's request for a model's answer: ${nobody(call.questions, "the model")}`,
      );
    }
    const scrub = call.scrub;
    const clean = <T>(value: T): T => scrub === undefined ? value : mapDeep(value, scrub) as T;
    let answer;
    try {
      // The caller's handler asks the one policy first (src/policy/policy.ts, decideSampling), then its model.
      answer = await this.#bounded(
        running,
        signal,
        (bound) => model(clean(request), { tool: call.tool, signal: bound }),
      );
    } catch (error) {
      told(error instanceof McpError && error.code === ErrorCode.RequestTimeout ? "timeout" : "rejected");
      throw error instanceof McpError ? error : refusal(
        `toolgate refuses the server's request for a model's answer: ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
    }
    told("ok", answer.model);
    // The model may repeat a secret it was shown elsewhere: its value never reaches the server.
    return clean({
      role: answer.role,
      content: answer.content,
      model: answer.model,
      ...(answer.stopReason === undefined ? {} : { stopReason: answer.stopReason }),
    }) as CreateMessageResult;
  }

  /**
   * `ask` with a signal aborted when the call ends, the server cancels its request, or the wait reaches its
   * bound; whichever comes first also ends the wait itself (a handler that ignores its signal holds nothing).
   */
  async #bounded<T>(
    running: Running & { readonly call: AskingCall },
    signal: AbortSignal,
    ask: (bound: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const limit = Math.min(QUESTION_TIMEOUT_MS, running.call.timeoutMs);
    const timedOut = new AbortController();
    const cancel = after(limit, () => timedOut.abort(new Error("timeout")));
    const bound = AbortSignal.any([running.ended.signal, signal, timedOut.signal]);
    try {
      return await Promise.race([
        ask(bound),
        new Promise<never>((_, reject) => {
          const stop = () =>
            reject(
              timedOut.signal.aborted
                ? new McpError(ErrorCode.RequestTimeout, `the question got no answer within ${limit} ms`)
                : refusal("the call that caused the question ended before it was answered"),
            );
          if (bound.aborted) stop();
          else bound.addEventListener("abort", stop, { once: true });
        }),
      ]);
    } finally {
      cancel();
    }
  }
}

/** A refusal to the server: an MCP error with a message saying why. */
function refusal(message: string): McpError {
  return new McpError(ErrorCode.InvalidRequest, message);
}

function nobody(handlers: QuestionHandlers | undefined, whom: string): string {
  return handlers?.nobody ?? `this caller of toolgate cannot ask ${whom}`;
}

/**
 * A server's `sampling/createMessage` as toolgate's sampling request, or why toolgate does not pass it: a message
 * whose content is a list becomes one message per block; tool use and tasks, which no caller's model answers
 * here, are refused rather than passed half.
 */
function samplingRequest(params: CreateMessageRequest["params"]): SamplingRequest | string {
  const p = params as Record<string, unknown>;
  if (p.tools !== undefined || p.toolChoice !== undefined) {
    return "toolgate does not pass sampling with tools";
  }
  if (p.task !== undefined) return "toolgate does not take sampling as a task";
  const messages: { role: "user" | "assistant"; content: ContentBlock }[] = [];
  for (const message of params.messages) {
    const blocks = Array.isArray(message.content) ? message.content : [message.content];
    for (const block of blocks) {
      const type = (block as { type: string }).type;
      if (type !== "text" && type !== "image" && type !== "audio") {
        return `a message's ${type} content cannot be passed to the model`;
      }
      messages.push({ role: message.role, content: block as ContentBlock });
    }
  }
  if (messages.length === 0) return "it holds no message";
  return {
    messages,
    maxTokens: params.maxTokens,
    ...(params.systemPrompt === undefined ? {} : { systemPrompt: params.systemPrompt }),
    ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
    ...(params.stopSequences === undefined ? {} : { stopSequences: params.stopSequences }),
  };
}
