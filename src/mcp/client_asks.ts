/**
 * What the MCP server asks of its client for a call: a person's approval, a secret to keep, a tool's question to
 * the user (elicitation) or to the model (sampling), each bound to the request it serves; and a `toolgate/1`
 * tool's log and progress as the call's notifications. The server (`server.ts`) wires these into each call.
 *
 * @module
 */
// The SDK's "./*" export points `x.js` at types in `x.js.d.ts`, which do not exist: name the types beside each import.
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/index"
import type { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { LoggingLevel } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import type { Ask, Policy } from "../policy/policy.ts";
import type { AskSecret, SecretRequest } from "../run/store_secret.ts";
import { LOG_LEVELS, type ToolEvent } from "../manifest/tool_messages.ts";
import {
  type ElicitAnswer,
  type QuestionHandlers,
  rootsAnswer,
  type SamplingAnswer,
} from "../run/tool_questions.ts";
import type { CallWatch } from "../run/call_watch.ts";
import { approvalForm } from "./approval_form.ts";

/**
 * What a call asks the client through: the session's `Server`, or a task's channel (`session_tasks.ts`), whose
 * questions go out on the task's `tasks/result`.
 */
export type ClientChannel = Pick<
  Server,
  "elicitInput" | "createMessage" | "listRoots" | "notification" | "getClientCapabilities"
>;

/** How long a person has to answer an approval question sent through the client (elicitation). */
export const ELICITATION_TIMEOUT_MS = 10 * 60 * 1000;

/**
 * Asks the client's user for a secret through MCP elicitation: a form with one text field, on the stream of the
 * `store_secret` call. Only an accepted form with a value gives one; decline and cancel give none.
 *
 * @example Not run as a doc test: it needs an MCP client's request in flight.
 * ```ts ignore
 * import { elicitingSecret } from "./client_asks.ts";
 * const askSecret = elicitingSecret(server, request.id); // for store_secret's call
 * ```
 */
export function elicitingSecret(server: ClientChannel, requestId: string | number): AskSecret {
  return async (request, signal) => {
    const tools = request.tools.join(", ");
    let result;
    try {
      result = await server.elicitInput({
        message: `The model asks for the secret ${request.name}, which ${tools} receive. Its reason: ` +
          `${JSON.stringify(request.reason)}. ${keepingText(request)}`,
        requestedSchema: {
          type: "object",
          properties: {
            value: {
              type: "string",
              title: request.name,
              description: `The value of ${request.name}`,
              minLength: 1,
            },
          },
          required: ["value"],
        },
      }, { relatedRequestId: requestId, signal, timeout: ELICITATION_TIMEOUT_MS });
    } catch {
      // No answer (a timeout, the client failed or went away): no value.
      return null;
    }
    const value = result.action === "accept" ? result.content?.value : undefined;
    return typeof value === "string" && value !== "" ? value : null;
  };
}

/** What the form says becomes of the value: where it is kept, and whether it replaces a stored one. */
function keepingText(request: SecretRequest): string {
  if (request.keep === "session") {
    return "toolgate keeps the value in this MCP session's memory only (not in its secret store) and gives it " +
      "to those tools for this session's calls; the model never sees it.";
  }
  const replaces = request.replaces
    ? ` This REPLACES the value of ${request.name} already in toolgate's secret store, which every later run ` +
      "uses."
    : "";
  return "toolgate stores the value encrypted and gives it to those tools only; the model never sees it." +
    replaces;
}

/**
 * Asks the client's user through MCP elicitation (a form with one "always" checkbox), on the stream of the call
 * that needs approval: accept is yes (or always), decline and cancel are no.
 *
 * @example Not run as a doc test: it needs an MCP client's request in flight.
 * ```ts ignore
 * import { elicitingAsk } from "./client_asks.ts";
 * const ask = elicitingAsk(server, request.id); // policy.decide(call, { ask })
 * ```
 */
export function elicitingAsk(server: ClientChannel, requestId: string | number): Ask {
  return async (question, signal) => {
    const result = await server.elicitInput(approvalForm(question, "in this session"), {
      relatedRequestId: requestId,
      signal,
      timeout: ELICITATION_TIMEOUT_MS,
    });
    if (result.action !== "accept") return "no";
    return result.content?.always === true ? "always" : "yes";
  };
}

/**
 * A `toolgate/1` tool's questions, sent to the MCP client on the stream of the call that asks: the user's form as
 * `elicitation/create` (the schema as the tool wrote it: defaults, enums and titled choices pass unchanged), an
 * upstream server's page for the user as a URL-mode `elicitation/create` (to a client that declared it), the
 * model's as `sampling/createMessage` once the session's policy approved sending the text (an approval question
 * goes to the client's user where it can be asked), a request for the client's roots as `roots/list`. A client
 * without the capability gets no request: the tool is answered why.
 *
 * @example Not run as a doc test: it needs an MCP client's request in flight.
 * ```ts ignore
 * import { clientQuestions } from "./client_asks.ts";
 * const questions = clientQuestions(server, request.id, session, ask); // executor.call(..., { questions })
 * ```
 */
export function clientQuestions(
  server: ClientChannel,
  requestId: string | number,
  session: { readonly policy: Policy },
  ask: Ask | undefined,
): QuestionHandlers {
  const options = (signal: AbortSignal) => ({
    relatedRequestId: requestId,
    signal,
    timeout: ELICITATION_TIMEOUT_MS,
  });
  return {
    user: async (question, { signal }) => {
      if (server.getClientCapabilities()?.elicitation === undefined) {
        throw new Error(
          "this MCP client cannot ask its user (it did not declare the elicitation capability)",
        );
      }
      const result = await server.elicitInput(
        { message: question.message, requestedSchema: question.requestedSchema } as Parameters<
          Server["elicitInput"]
        >[0],
        options(signal),
      );
      return (result.action === "accept"
        ? { action: "accept", ...(result.content ? { content: result.content } : {}) }
        : { action: result.action }) as ElicitAnswer;
    },
    url: async (question, { signal }) => {
      if (server.getClientCapabilities()?.elicitation?.url === undefined) {
        throw new Error(
          "this MCP client cannot send its user to a page (it did not declare URL-mode elicitation)",
        );
      }
      const result = await server.elicitInput({ mode: "url", ...question }, options(signal));
      return { action: result.action };
    },
    urlCompleted: (elicitationId) => {
      if (server.getClientCapabilities()?.elicitation?.url === undefined) return;
      server.notification(
        { method: "notifications/elicitation/complete", params: { elicitationId } },
        { relatedRequestId: requestId },
      ).catch(() => {});
    },
    model: async (request, { tool, signal }) => {
      if (server.getClientCapabilities()?.sampling === undefined) {
        throw new Error("this MCP client cannot be asked for a model's answer (it did not declare sampling)");
      }
      const verdict = await session.policy.decideSampling(tool, request, { ask, signal });
      if (!verdict.approved) throw new Error(verdict.envelope.message);
      const result = await server.createMessage(
        request as Parameters<Server["createMessage"]>[0],
        options(signal),
      );
      const answer: SamplingAnswer = {
        role: "assistant",
        content:
          (Array.isArray(result.content) ? result.content[0] : result.content) as SamplingAnswer["content"],
        model: result.model,
        ...(result.stopReason === undefined ? {} : { stopReason: result.stopReason }),
      };
      return answer;
    },
    // The client's folders, as it lists them: information for the tool, which opens none of them to it.
    roots: async ({ signal }) => {
      if (server.getClientCapabilities()?.roots === undefined) {
        throw new Error("this MCP client cannot list its roots (it did not declare the roots capability)");
      }
      return rootsAnswer(await server.listRoots(undefined, options(signal)));
    },
  };
}

/**
 * `handlers` whose forms for the user (a `toolgate/1` tool's, an MCP server's) are also asked in the console
 * (`serve --console`): the first answer wins and the other question is withdrawn; a side that cannot answer (a
 * client without elicitation) leaves it to the other. Without a console that asks forms, `handlers` unchanged.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withConsoleForms } from "./client_asks.ts";
 * const handlers = { nobody: "no one" };
 * assert.equal(withConsoleForms(handlers, undefined, 1000), handlers);
 * ```
 */
export function withConsoleForms(
  handlers: QuestionHandlers,
  watch: CallWatch | undefined,
  timeoutMs: number,
): QuestionHandlers {
  const form = watch?.form?.bind(watch);
  if (form === undefined) return handlers;
  const client = handlers.user;
  return {
    ...handlers,
    user: async (question, context) => {
      const withdraw = new AbortController();
      const signal = AbortSignal.any([context.signal, withdraw.signal]);
      const viaConsole = form({ ...question, tool: context.tool.name }, signal, timeoutMs);
      const sides = client === undefined
        ? [viaConsole]
        : [client(question, { ...context, signal }), viaConsole];
      try {
        return await Promise.any(sides);
      } catch (error) {
        throw error instanceof AggregateError ? error.errors[0] : error;
      } finally {
        withdraw.abort();
      }
    },
  };
}

/** A notification on a call's stream. */
export type CallNotification =
  | { method: "notifications/message"; params: { level: LoggingLevel; logger: string; data: unknown } }
  | {
    method: "notifications/progress";
    params: { progressToken: string | number; progress: number; total?: number; message?: string };
  };

/**
 * A `toolgate/1` tool's messages as MCP notifications: a log message at or above the session's level (its `data`
 * the message, or `{message, data}`), and progress when the client sent a token, only where it grows (MCP requires
 * progress to increase with each notification).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolEvents } from "./client_asks.ts";
 * const sent: unknown[] = [];
 * const onEvent = toolEvents("t", "token-1", {}, (notification) => sent.push(notification));
 * onEvent({ kind: "progress", progress: 1 });
 * assert.equal(sent.length, 1); // a notifications/progress
 * ```
 */
export function toolEvents(
  tool: string,
  token: string | number | undefined,
  session: { readonly logLevel?: LoggingLevel },
  send: (notification: CallNotification) => void,
): (event: ToolEvent) => void {
  let last = -Infinity;
  return (event) => {
    if (event.kind === "log") {
      const least = LOG_LEVELS.indexOf(session.logLevel ?? "debug");
      if (LOG_LEVELS.indexOf(event.level) < least) return;
      // An MCP server's own log message goes on as it sent it, its logger prefixed with the server's name.
      const data = event.logger !== undefined
        ? event.data ?? event.message
        : event.data === undefined
        ? event.message
        : { message: event.message, data: event.data };
      send({
        method: "notifications/message",
        params: { level: event.level, logger: event.logger ?? tool, data },
      });
      return;
    }
    if (token === undefined || !(event.progress > last)) return;
    last = event.progress;
    const params: CallNotification["params"] & { progressToken: string | number } = {
      progressToken: token,
      progress: event.progress,
    };
    if (event.total !== undefined) params.total = event.total;
    if (event.message !== undefined) params.message = event.message;
    send({ method: "notifications/progress", params });
  };
}
