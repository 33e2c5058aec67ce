/**
 * What an upstream MCP server asks its client, toolgate, while it runs: a form for the user
 * (`elicitation/create`), a model's answer (`sampling/createMessage`) and its roots (`roots/list`). A question goes
 * to whoever can answer for the call that caused it (the caller's handlers, as a `toolgate/1` tool's questions do:
 * `serve`'s MCP client, the agent loop's terminal and endpoint, `toolgate call`'s terminal; a form's message
 * begins with the server and tool that ask, so that none passes for toolgate's own), secret values taken
 * out of what leaves toolgate; a sampling request is approved by the caller's policy, audited, and the model's
 * answer has secret values taken out before the server sees it. Roots are the workspace and the folders of the
 * server's profile that it may write or that its command line names, nothing else. A call is asked at most
 * `PROTOCOL_LIMITS.maxQuestions` questions. A question nobody can answer (no call in flight, several, a caller
 * without the handler) is refused at once with an MCP error; every wait is
 * bounded by the call's end and {@linkcode QUESTION_TIMEOUT_MS}. A form or a sampling request asked as a task
 * goes the same way; its answer is kept for the server to fetch while the call runs (`question_tasks.ts`).
 *
 * One piece: the three questions share one routing (which call in flight asks, its count, its bounded wait) and
 * one cleaning of what leaves toolgate; each handler is a few lines over that state.
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
  type CreateTaskResult,
  ElicitRequestSchema,
  type ElicitResult,
  ErrorCode,
  ListRootsRequestSchema,
  McpError,
  type Result,
  type Root,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { basename, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { ContentBlock } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { mapDeep } from "../manifest/tool_protocol.ts";
import { PROTOCOL_LIMITS, type SamplingRequest } from "../manifest/tool_messages.ts";
import type { QuestionHandlers } from "../run/tool_questions.ts";
import type { SamplingFacts } from "../run/tool_gateway.ts";
import { after } from "../base/timer.ts";
import { QuestionTasks } from "./question_tasks.ts";

/**
 * What toolgate's client tells each upstream server it can be asked: forms and URLs (elicitation), sampling, and
 * roots (fixed for the server's life: no `listChanged`); a form or a sampling request may be asked as a task
 * (answered at once with the task, its answer then polled: the client must hold {@linkcode ServerQuestions.tasks}).
 */
export const UPSTREAM_CAPABILITIES: ClientCapabilities = Object.freeze({
  sampling: {},
  elicitation: { form: {}, url: {} },
  roots: {},
  tasks: { cancel: {}, requests: { sampling: { createMessage: {} }, elicitation: { create: {} } } },
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
  /** What `tool` stands for, as the user is told: a tool (absent), or a prompt got of the server. */
  readonly kind?: "prompt";
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
 * const questions = new ServerQuestions(
 *   "/srv/project",
 *   { write: ["notes", "/home/u/Desktop"], read: ["/srv/books", "/opt/server"] },
 *   ["/opt/server/index.js", "/home/u/Desktop", "/srv/books"],
 * );
 * assert.deepEqual(questions.roots(), [
 *   { uri: "file:///srv/project", name: "project" },
 *   { uri: "file:///home/u/Desktop", name: "Desktop" },
 *   { uri: "file:///srv/books", name: "books" },
 * ]);
 * ```
 */
export class ServerQuestions {
  readonly #workspace: string;
  readonly #running = new Set<Running>();
  /** The call each URL question forwarded belongs to, by its elicitation id, while the call runs. */
  readonly #pages = new Map<string, Running>();

  readonly #granted: readonly string[];

  /**
   * The tasks of the questions asked as tasks, each held while its call runs: given to the client as its
   * `taskStore`, whose `tasks/get`, `tasks/result` and `tasks/cancel` read it.
   */
  readonly tasks: QuestionTasks = new QuestionTasks();

  /**
   * The questions of a server that runs in `workspace`, with the folders its manifest's profile grants it
   * (`grants`) and its command line's arguments (`args`): a folder it may write is its data, as trust counts it;
   * a folder it may only read is a root where its command line names it (a filesystem server's read-only
   * folder), not otherwise (its code, a package's install).
   */
  constructor(
    workspace: string,
    grants: { readonly read: readonly string[]; readonly write: readonly string[] } = { read: [], write: [] },
    args: readonly string[] = [],
  ) {
    this.#workspace = workspace;
    const named = new Set(args.map((arg) => resolve(workspace, arg)));
    const read = grants.read.map((path) => resolve(workspace, path)).filter((path) => named.has(path));
    this.#granted = [...grants.write.map((path) => resolve(workspace, path)), ...read];
  }

  /**
   * The server's roots: the workspace, the one folder every sandbox shows it, then the folders outside it that
   * its profile lets it write, and those it may read that its command line names, as the manifest declares them
   * (a filesystem server's folders: such a server serves its roots in place of its command line's folders).
   * Nothing else: not what it only reads otherwise (its code, a package's install, the system), never the MCP
   * client's own roots.
   */
  roots(): Root[] {
    const inside = (path: string) => path === this.#workspace || path.startsWith(`${this.#workspace}/`);
    const folders = [this.#workspace, ...this.#granted.filter((path) => !inside(path))];
    return [...new Set(folders)].map((path) => ({ uri: pathToFileURL(path).href, name: basename(path) }));
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
      for (const [id, page] of this.#pages) if (page === running) this.#pages.delete(id);
      running.ended.abort(new Error("the call that asked ended"));
      this.tasks.forget(running);
    };
  }

  /**
   * The server says the page of its URL question `elicitationId` is done (`notifications/elicitation/complete`):
   * the caller of the call it was asked for is told, while that call runs; an id toolgate never forwarded is
   * dropped.
   */
  completed(elicitationId: string): void {
    this.#pages.get(elicitationId)?.call?.questions?.urlCompleted?.(elicitationId);
  }

  /**
   * Answers the server's `roots/list`, `elicitation/create` and `sampling/createMessage` on `client` (built with
   * {@linkcode ServerQuestions.tasks} as its `taskStore`). A question asked as a task is routed and counted as it
   * arrives, like any, then answered with its task; its answer is stored in the task when it comes.
   */
  install(client: Client): void {
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: this.roots() }));
    client.setRequestHandler(ElicitRequestSchema, (request, extra) => {
      const { task, ...params } = request.params;
      const running = this.#asker("question to the user (elicitation)");
      if (task === undefined) return this.#elicit(running, params, extra.signal);
      return this.#asTask(running, task.ttl, (signal) => this.#elicit(running, params, signal));
    });
    client.setRequestHandler(CreateMessageRequestSchema, (request, extra) => {
      const { task, ...params } = request.params;
      const running = this.#asker("request for a model's answer (sampling)");
      if (task === undefined) return this.#sample(running, params, extra.signal);
      return this.#asTask(running, task.ttl, (signal) => this.#sample(running, params, signal));
    });
  }

  /**
   * A question asked as a task: the task, at once; its answer (or why none) stored in it when `answer` settles.
   * The task lives while its call runs, no longer than the call's own bound; the server's `tasks/cancel` stops it.
   */
  #asTask(
    running: Running & { readonly call: AskingCall },
    ttl: number | undefined,
    answer: (signal: AbortSignal) => Promise<Result>,
  ): CreateTaskResult {
    const limit = Math.min(QUESTION_TIMEOUT_MS, running.call.timeoutMs);
    const { task, signal } = this.tasks.open(running, Math.min(ttl ?? limit, limit));
    answer(signal).then(
      (result) => this.tasks.settle(task.taskId, result),
      (error: unknown) =>
        this.tasks.settle(task.taskId, error instanceof Error ? error : new Error(String(error))),
    );
    return { task };
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
      // The entry itself (not a copy): the pages it opened are found by it when its call ends.
      return running as Running & { readonly call: AskingCall };
    }
    const why = this.#running.size === 0
      ? "no call of toolgate's to the server is in flight, so nobody can answer it"
      : `${this.#running.size} calls of toolgate's to the server are in flight and the request does not say ` +
        "which one asks, so toolgate answers none of them (a server's request carries no link to the call " +
        "that caused it over stdio)";
    throw refusal(`toolgate refuses the server's ${what}: ${why}`);
  }

  async #elicit(
    running: Running & { readonly call: AskingCall },
    params: unknown,
    signal: AbortSignal,
  ): Promise<ElicitResult> {
    const { call } = running;
    const form = params as { mode?: string; message: string; requestedSchema: Record<string, unknown> };
    if (form.mode === "url") return await this.#sendTo(running, params, signal);
    if (form.mode !== undefined && form.mode !== "form") {
      throw refusal(`toolgate takes form and URL questions only (the server asked in ${form.mode} mode)`);
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
    const message = `The MCP server ${server} asks, in its ${
      call.kind ?? "tool"
    } ${call.tool.name}: ${form.message}`;
    const question = clean({ message, requestedSchema: form.requestedSchema });
    const answer = await this.#bounded(
      running,
      signal,
      (bound) => user(question, { tool: call.tool, signal: bound }),
    );
    return answer as ElicitResult;
  }

  /** A URL-mode elicitation: the page checked (a web page, nothing else), then the caller's user sent there. */
  async #sendTo(
    running: Running & { readonly call: AskingCall },
    params: unknown,
    signal: AbortSignal,
  ): Promise<ElicitResult> {
    const { call } = running;
    const asked = params as { message?: unknown; url?: unknown; elicitationId?: unknown };
    const page = webPage(asked.url);
    if (
      typeof page !== "string" || typeof asked.message !== "string" || typeof asked.elicitationId !== "string"
    ) {
      throw refusal(
        `toolgate refuses the server's request to send the user to a page: ${
          page instanceof Error ? page.message : "it needs a message, a url and an elicitationId"
        }`,
      );
    }
    const url = call.questions?.url;
    if (url === undefined) {
      throw refusal(
        `toolgate refuses the server's request to send the user to a page: ${
          nobody(call.questions, "the user")
        }`,
      );
    }
    const scrub = call.scrub ?? ((text: string) => text);
    const question = { message: scrub(asked.message), url: scrub(page), elicitationId: asked.elicitationId };
    this.#pages.set(asked.elicitationId, running);
    const answer = await this.#bounded(
      running,
      signal,
      (bound) => url(question, { tool: call.tool, signal: bound }),
    );
    // Nothing the user typed on the page passes through toolgate: the answer is the action alone.
    return { action: answer.action };
  }

  async #sample(
    running: Running & { readonly call: AskingCall },
    params: CreateMessageRequest["params"],
    signal: AbortSignal,
  ): Promise<CreateMessageResult> {
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

/**
 * The page a URL question names, as the user will see it (`URL`'s own form: the host in ASCII), or why it is no
 * web page (only `https:` and `http:` are: never `javascript:`, `file:` or `data:`, nor a URL with credentials).
 */
function webPage(url: unknown): string | Error | undefined {
  if (typeof url !== "string") return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return new Error("its url is not a URL");
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    return new Error(
      `toolgate sends the user to web pages only (http or https), not to ${parsed.protocol} URLs`,
    );
  }
  if (parsed.username !== "" || parsed.password !== "") {
    return new Error("its url carries a user name or password");
  }
  return parsed.href;
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
 * here, are refused rather than passed half (a request asked as a task comes here without its `task`).
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
