/**
 * The answering side of a `toolgate/1` tool's questions: each question (to the user, to the model, or to the client
 * for its roots) goes to the caller's handler for it (`serve`: the MCP client; the agent loop: the terminal and the
 * configured model), with
 * secret values taken out of what leaves toolgate, and its answer, or why there is none, goes back to the tool as
 * one JSON line on its stdin: `{"type":"answer","id":ID,"answer":...}` or `{"type":"answer","id":ID,"error":...}`.
 * A question nobody can answer is answered with an error at once: the tool never waits for an answer that cannot
 * come, and no answer is ever made up on the user's behalf.
 *
 * @module
 */
import type { ContentBlock } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { mapDeep } from "../manifest/tool_protocol.ts";
import { type SamplingRequest, type ToolQuestion } from "../manifest/tool_messages.ts";

/**
 * A person's answer to a form (MCP's `ElicitResult`): accepted with the values, declined, or dismissed.
 *
 * @example
 * ```ts
 * import type { ElicitAnswer } from "./tool_questions.ts";
 * const answer: ElicitAnswer = { action: "accept", content: { branch: "main" } };
 * ```
 */
export type ElicitAnswer =
  | { readonly action: "accept"; readonly content?: Readonly<Record<string, unknown>> }
  | { readonly action: "decline" | "cancel" };

/**
 * The model's answer (MCP's `CreateMessageResult`).
 *
 * @example
 * ```ts
 * import type { SamplingAnswer } from "./tool_questions.ts";
 * const answer: SamplingAnswer = { role: "assistant", content: { type: "text", text: "blue" }, model: "m" };
 * ```
 */
export interface SamplingAnswer {
  /** Always the assistant's. */
  readonly role: "assistant";
  /** What the model answered. */
  readonly content: ContentBlock;
  /** The model that answered. */
  readonly model: string;
  /** Why it stopped (`endTurn`, `maxTokens`, ...), when said. */
  readonly stopReason?: string;
}

/**
 * The client's roots (MCP's `ListRootsResult`): the folders it works in, each a `file:` URI and maybe a name. They
 * are information for the tool: they open nothing to it (its sandbox stays as its profile says).
 *
 * @example
 * ```ts
 * import type { RootsAnswer } from "./tool_questions.ts";
 * const answer: RootsAnswer = { roots: [{ uri: "file:///home/ada/project", name: "project" }] };
 * ```
 */
export interface RootsAnswer {
  /** The roots, as the client listed them. */
  readonly roots: readonly { readonly uri: string; readonly name?: string }[];
}

/**
 * The client's `ListRootsResult` as a tool's answer: each root with a string `uri` (and a string `name`, when it
 * has one); anything else is no answer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rootsAnswer } from "./tool_questions.ts";
 * assert.deepEqual(rootsAnswer({ roots: [{ uri: "file:///w", name: 3 }] }), { roots: [{ uri: "file:///w" }] });
 * assert.throws(() => rootsAnswer({ roots: "file:///w" }));
 * ```
 */
export function rootsAnswer(response: unknown): RootsAnswer {
  const roots = typeof response === "object" && response !== null
    ? (response as { roots?: unknown }).roots
    : undefined;
  if (!Array.isArray(roots)) throw new Error("the client's answer is not a list of roots");
  return {
    roots: roots.map((root) => {
      const { uri, name } = (typeof root === "object" && root !== null ? root : {}) as Record<
        string,
        unknown
      >;
      if (typeof uri !== "string") throw new Error("the client listed a root without a uri");
      return typeof name === "string" ? { uri, name } : { uri };
    }),
  };
}

/**
 * A question that sends the user to a web page (MCP's URL-mode elicitation): what to do there, the page, and the id
 * the server gave the question. The user's answer says only whether they went (accept), refused (decline) or
 * dismissed it (cancel); nothing they type there passes through toolgate.
 *
 * @example
 * ```ts
 * import type { UrlQuestion } from "./tool_questions.ts";
 * const question: UrlQuestion = { message: "Sign in", url: "https://example.com/login", elicitationId: "e1" };
 * ```
 */
export interface UrlQuestion {
  /** Why the server sends the user there. */
  readonly message: string;
  /** The page (an `http:` or `https:` URL). */
  readonly url: string;
  /** The server's id for the question. */
  readonly elicitationId: string;
}

/** What a handler knows of the question's call. */
export interface QuestionContext {
  /** The tool that asks. */
  readonly tool: ToolSpec;
  /** Aborted when the call ends (the tool exited, was cut off, or the call was cancelled). */
  readonly signal: AbortSignal;
  /** The question's id, as the tool wrote it. */
  readonly id?: string | number;
}

/**
 * Who answers a caller's questions: a handler per kind; an absent one means nobody can be asked that. A handler
 * throws (an `Error` whose message the tool reads) when it cannot or may not answer.
 *
 * @example
 * ```ts
 * import type { QuestionHandlers } from "./tool_questions.ts";
 * const handlers: QuestionHandlers = { user: () => Promise.resolve({ action: "decline" }) };
 * ```
 */
export interface QuestionHandlers {
  /** Asks the user a form question (MCP elicitation); absent: nobody can answer one here. */
  readonly user?: (
    question: { readonly message: string; readonly requestedSchema: Readonly<Record<string, unknown>> },
    context: QuestionContext,
  ) => Promise<ElicitAnswer>;
  /** Sends the user to a web page (MCP URL-mode elicitation), never opening it itself; absent: nobody can. */
  readonly url?: (question: UrlQuestion, context: QuestionContext) => Promise<ElicitAnswer>;
  /** Told that the page a URL question sent the user to is done (the server said so); absent: nobody is told. */
  readonly urlCompleted?: (elicitationId: string) => void;
  /** Asks the model (MCP sampling), once approved; absent: nobody can answer one here. */
  readonly model?: (request: SamplingRequest, context: QuestionContext) => Promise<SamplingAnswer>;
  /** Asks the client for its roots (MCP `roots/list`); absent: nobody can answer one here. */
  readonly roots?: (context: QuestionContext) => Promise<RootsAnswer>;
  /** Why nobody can be asked here, for the tool (default: "this caller cannot ask the user" / "... the model"). */
  readonly nobody?: string;
}

/** What a {@linkcode QuestionDesk} is given. */
export interface DeskOptions {
  readonly tool: ToolSpec;
  readonly handlers?: QuestionHandlers;
  /** The run's redaction of secret values: nothing a tool asks carries one out. */
  readonly scrub?: (text: string) => string;
  /** Writes to the tool's stdin; false once the pipe is gone. */
  readonly write: (bytes: Uint8Array) => Promise<boolean>;
  /** Told when a question's answer went out (the channel frees its id). */
  readonly onAnswered?: (id: string | number) => void;
}

const encoder = new TextEncoder();

/**
 * One call's questions: takes each as the channel hands it over, answers it through the handlers, and writes the
 * answer line. {@linkcode QuestionDesk.close} aborts the questions still open when the call ends.
 *
 * @example Not run as a doc test: a fragment of the executor, with a tool, its handlers and a running process in scope.
 * ```ts ignore
 * import { QuestionDesk } from "./tool_questions.ts";
 * const desk = new QuestionDesk({ tool, handlers, write });
 * // channel options: { onQuestion: (question) => desk.ask(question) }
 * runProcess({ ..., waiting: () => desk.waiting }); desk.close();
 * ```
 */
export class QuestionDesk {
  readonly #options: DeskOptions;
  readonly #done = new AbortController();
  #open = 0;

  constructor(options: DeskOptions) {
    this.#options = options;
  }

  /** Some question waits for its answer (the idle limit waits with it). */
  get waiting(): boolean {
    return this.#open > 0;
  }

  /** Takes one question; its answer is written when it comes. */
  ask(question: ToolQuestion): void {
    this.#open += 1;
    void this.#answer(question).then(async (line) => {
      this.#open -= 1;
      this.#options.onAnswered?.(question.id);
      if (!this.#done.signal.aborted) await this.#options.write(encoder.encode(JSON.stringify(line) + "\n"));
    });
  }

  /** The call ended: every question still open is abandoned (its handler sees the signal aborted). */
  close(): void {
    this.#done.abort(new Error("the tool's call ended"));
  }

  async #answer(question: ToolQuestion): Promise<Record<string, unknown>> {
    const { handlers, scrub, tool } = this.#options;
    const clean = <T>(value: T): T => scrub === undefined ? value : mapDeep(value, scrub) as T;
    const id = question.id;
    const context: QuestionContext = { tool, signal: this.#done.signal, id };
    try {
      if (question.asks === "user") {
        if (handlers?.user === undefined) return refused(id, nobody(handlers, "the user"));
        const { message, requestedSchema } = clean(question);
        return { type: "answer", id, answer: await handlers.user({ message, requestedSchema }, context) };
      }
      if (question.asks === "roots") {
        // No terminal and no model can stand in for a client's roots: the answer is never made up.
        if (handlers?.roots === undefined) {
          return refused(id, "this caller of toolgate has no MCP client to list roots");
        }
        return { type: "answer", id, answer: await handlers.roots(context) };
      }
      if (handlers?.model === undefined) return refused(id, nobody(handlers, "the model"));
      return { type: "answer", id, answer: await handlers.model(clean(question.request), context) };
    } catch (error) {
      return refused(id, error instanceof Error ? error.message : String(error));
    }
  }
}

function nobody(handlers: QuestionHandlers | undefined, whom: string): string {
  return handlers?.nobody ?? `this caller of toolgate cannot ask ${whom}`;
}

function refused(id: string | number, message: string): Record<string, unknown> {
  return { type: "answer", id, error: { message } };
}
