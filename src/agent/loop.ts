/**
 * The agent loop: ask the model, answer its tool calls through the executor, until it gives a final answer or the
 * step cap is reached. Each turn takes three passes: check every call in the model's order (lookup, arguments,
 * the approval policy); run them through the scheduler (calls of `concurrent` tools side by side, every other call
 * alone, in the model's order); answer each call with exactly one tool message, in the model's order. On a
 * terminal the stop button (Ctrl-C) ends the calls of the turn in flight: each is answered `killed_by: "user"`, and
 * the loop goes on to the model.
 *
 * @module
 */
import { answerResourceCall, type LoopResources, READ_RESOURCE } from "./resource_tools.ts";
import { type Envelope } from "../contract.ts";
import type { Executor } from "../run/executor.ts";
import type { PreparedCall } from "../policy/prepared_call.ts";
import type { EventSink } from "./events.ts";
import type { ChatRequest, StreamedAnswer } from "./chat_client.ts";
import type { ChatMessage, ToolCall, ToolMessage } from "./messages.ts";
import type { ApprovedBy, Policy } from "../policy/policy.ts";
import type { Progress } from "../ui/progress.ts";
import { Scheduler } from "../run/scheduler.ts";
import { checkOutput } from "../run/output_check.ts";
import { type StopButton, UserStop } from "../process/stop.ts";
import { askOnce, askStreaming, type EndpointQuirks } from "./ask_endpoint.ts";
import { ModelMedia, type TurnAnswers } from "./tool_media.ts";
import { answerSecretCall, type LoopSecrets } from "./credential_heal.ts";
import { STORE_SECRET } from "../run/store_secret.ts";
import { ToolDisclosure } from "./lazy_tools.ts";
import { decideInSpan, errorType, type TraceSpan } from "../run/tracing.ts";
import type { QuestionHandlers } from "../run/tool_questions.ts";
import type { CallSeen, CallWatch } from "../run/call_watch.ts";
import { runWatched, watchCall } from "./watch_calls.ts";
import { askInSpan } from "./chat_span.ts";
import { chatRequest } from "./chat_request.ts";

/** What the loop needs of a chat client ({@linkcode ChatClient} is one). */
export interface ChatTransport {
  complete(body: ChatRequest): Promise<unknown>;
  stream(body: ChatRequest): Promise<StreamedAnswer>;
  /** Where it sends its requests (the request spans' `server.address`), when it says. */
  readonly url?: string;
}

/** The most calls of one turn that run at the same time. */
export const DEFAULT_MAX_PARALLEL = 64;

/** How the calls of one turn are checked and run. */
export interface TurnOptions {
  readonly executor: Executor;
  /** Decides whether each call runs (asking the person when it may). */
  readonly policy: Policy;
  readonly progress?: Progress;
  /** The size limit of each tool message (default: the contract's model text limit). */
  readonly maxToolChars?: number;
  /** The most calls running at once (default {@linkcode DEFAULT_MAX_PARALLEL}). */
  readonly maxParallel?: number;
  /** Notes for the user (stderr): calls refused for want of approval, a stop. */
  readonly notice?: (text: string) => Promise<void>;
  /**
   * A person's stop (Ctrl-C on a terminal): armed while the turn's calls run; a press ends every call in flight
   * (and every call still waiting for its turn), each answered `killed_by: "user"`.
   */
  readonly stopButton?: StopButton;
  /**
   * toolgate's end (a stop signal, or a second Ctrl-C): aborts every call not answered yet with its reason (each
   * ends its tree and writes its audit line), and the loop asks the model no more (`stopped`).
   */
  readonly end?: AbortSignal;
  /** The in-process `store_secret` tool and the turn's credential auto-heal (offered when a tool declares a secret). */
  readonly secrets?: LoopSecrets;
  /** The built-in `read_resource`, when an MCP server offers resources (resource_tools.ts). */
  readonly resources?: LoopResources;
  /**
   * Which tools are sent in full (`--lazy-tools` starts with stubs; default: every tool in full): the first call
   * of a stub is answered with its definition, not run.
   */
  readonly disclosure?: ToolDisclosure;
  /** Who answers a `toolgate/1` tool's questions (the terminal, the run's model; see `questions.ts`). */
  readonly questions?: QuestionHandlers;
  /** Which of a tool's images and audio go to the model (default: none, each named in a note). */
  readonly media?: ModelMedia;
  /** Who watches each call (`--console`): its start, its messages and stderr, its end. */
  readonly watch?: CallWatch;
  /** The agent run's span: each tool call's span is its child (`runLoop` opens it). */
  readonly trace?: TraceSpan;
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
  | { readonly kind: "step_limit"; readonly steps: number }
  /** toolgate's end ({@linkcode TurnOptions.end}) came first. */
  | { readonly kind: "stopped"; readonly steps: number };

/**
 * Runs the loop on `messages`, appending every assistant and tool message to it (the caller keeps it, to save it
 * even when the loop fails). Throws an `AgentError` when the endpoint fails or answers nonsense.
 *
 * @example Not run as a doc test: it needs an executor, a policy and a chat endpoint (tests/agent/ runs them).
 * ```ts ignore
 * import { runLoop } from "./loop.ts";
 * const outcome = await runLoop(messages, { executor, policy: new Policy({ yes: true }), client, model: "m", maxSteps: 8 });
 * if (outcome.kind === "answer") console.log(outcome.text);
 * ```
 */
export async function runLoop(messages: ChatMessage[], options: LoopOptions): Promise<LoopOutcome> {
  // The run is the trace's root (`invoke_agent`): every tool call's span, here and downstream, is its child.
  const trace = options.executor.tracing.agentRun({ model: options.model });
  let failed: string | undefined = "Error";
  try {
    const outcome = await loopSteps(messages, { ...options, trace });
    failed = outcome.kind === "step_limit" ? "step_limit" : undefined;
    return outcome;
  } catch (error) {
    failed = error instanceof Error ? error.name : "Error";
    throw error;
  } finally {
    trace.end(failed);
  }
}

async function loopSteps(messages: ChatMessage[], options: LoopOptions): Promise<LoopOutcome> {
  const disclosure = options.disclosure ?? new ToolDisclosure(options.executor.manifest, { lazy: false });
  const emit = options.onEvent ?? (() => Promise.resolve());
  const endpoint: EndpointQuirks = { refusesStreamOptions: false };
  const media = options.media ?? new ModelMedia({ images: false, audio: false });
  for (let step = 1; step <= options.maxSteps; step++) {
    if (options.end?.aborted) return { kind: "stopped", steps: step - 1 };
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
    // One span for the step's request (`chat {model}`), a retry with notes included.
    const span = options.executor.tracing.chat({
      model: options.model,
      url: options.client.url,
      parent: options.trace,
    });
    // An endpoint that refuses the tools' images or audio gets the conversation again with notes in their place.
    const { turn, printed } = await askInSpan(span, () =>
      media.send(body, messages, {
        ask: (body) => options.stream ? askStreaming(body, options, endpoint) : askOnce(body, options),
        again: () =>
          chatRequest(options.executor, messages, {
            ...options,
            tools,
            streamWithoutUsage: endpoint.refusesStreamOptions,
          }),
        notice: options.notice,
      }));
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
    const { tools: answers, media: attached } = await answerTurn(calls, { ...options, disclosure, media });
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
    if (attached !== undefined) messages.push(attached);
    if (options.end?.aborted) return { kind: "stopped", steps: step };
  }
  return { kind: "step_limit", steps: options.maxSteps };
}

interface Runnable {
  readonly index: number;
  readonly id: string;
  readonly call: PreparedCall;
  /** What approved it (a person, `--yes`, ...): a `job` kill a person approved says `killed_by: "user"`. */
  readonly approvedBy: ApprovedBy;
  readonly seen?: CallSeen;
  /** Stops this call: Ctrl-C (every call not answered yet), or the console's Stop (this one). */
  readonly stop: AbortController;
}

/**
 * Answers one turn's tool calls: checks them in the model's order, runs the approved ones, and returns one tool
 * message per call, in the model's order, each holding its envelope cut to fit.
 *
 * @example Not run as a doc test: it needs an executor, a policy and a model's tool calls.
 * ```ts ignore
 * import { answerToolCalls } from "./loop.ts";
 * const toolMessages = await answerToolCalls(assistant.tool_calls, { executor, policy });
 * ```
 */
export async function answerToolCalls(
  calls: readonly ToolCall[],
  options: TurnOptions,
): Promise<ToolMessage[]> {
  return (await answerTurn(calls, options)).tools;
}

/**
 * Answers one turn's tool calls as {@linkcode answerToolCalls} does, and gives the user message that carries
 * their images and audio, where `options.media` sends them (it follows the tool messages).
 *
 * @example Not run as a doc test: it needs an executor, a policy and a model's tool calls.
 * ```ts ignore
 * import { answerTurn } from "./loop.ts";
 * const { tools, media } = await answerTurn(assistant.tool_calls, { executor, policy, media });
 * ```
 */
export async function answerTurn(calls: readonly ToolCall[], options: TurnOptions): Promise<TurnAnswers> {
  // One span per call (`execute_tool`), ended with its envelope however the turn ends.
  const { executor, trace: parent } = options;
  const spans = calls.map((c) => executor.tracing.toolCall({ tool: c.function.name, callId: c.id, parent }));
  const envelopes: Envelope[] = new Array(calls.length);
  try {
    return await answerInSpans(calls, options, spans, envelopes);
  } finally {
    spans.forEach((span, index) => span.end(errorType(envelopes[index])));
  }
}

async function answerInSpans(
  calls: readonly ToolCall[],
  options: TurnOptions,
  spans: readonly TraceSpan[],
  envelopes: Envelope[],
): Promise<TurnAnswers> {
  const { executor } = options;
  const runnable: Runnable[] = [];
  // Pass 1: lookup, arguments, approval, one call at a time so that questions come in the model's order.
  for (const [index, toolCall] of calls.entries()) {
    if (options.disclosure?.isStub(toolCall.function.name)) {
      // The first call of a stub runs nothing: it is answered with the tool's definition, to call again.
      envelopes[index] = options.disclosure.disclose(toolCall);
      continue;
    }
    if (options.resources && toolCall.function.name === READ_RESOURCE) {
      // Answered here: it reads through the executor's offers (confined, pinned, audited), and changes nothing.
      envelopes[index] = await answerResourceCall(toolCall.function.arguments, executor, options.resources);
      continue;
    }
    if (options.secrets && toolCall.function.name === STORE_SECRET) {
      // Answered here, in the model's order: the person's answer is its approval.
      envelopes[index] = await answerSecretCall(toolCall.function.arguments, executor, options.secrets);
      continue;
    }
    const stop = new AbortController();
    const seen = watchCall(options.watch, toolCall, () => stop.abort(new UserStop("the console")));
    const prepared = await executor.prepare(toolCall.function.name, toolCall.function.arguments);
    if (!prepared.ok) {
      envelopes[index] = prepared.envelope;
      seen?.ended(prepared.envelope);
      continue;
    }
    const verdict = await decideInSpan(options.policy, prepared.call, spans[index]);
    if (!verdict.approved) {
      envelopes[index] = await executor.refuse(prepared.call, verdict.envelope);
      seen?.ended(envelopes[index]);
      if (verdict.envelope.kind === "rejected") {
        await options.notice?.(
          `toolgate: did not run ${prepared.call.tool.name}: ${verdict.envelope.message}\n`,
        );
      }
      continue;
    }
    runnable.push({ index, id: toolCall.id, call: prepared.call, approvedBy: verdict.by, seen, stop });
  }
  // Pass 2: in the model's order through the scheduler: runs of consecutive concurrent calls side by side, any
  // other call alone. Every call is waited for, even when one throws (a bug), before the error goes on. A stop
  // aborts every call not yet answered: one in flight ends its tree, one still waiting runs nothing; the executor
  // answers both (and audits them).
  const scheduler = new Scheduler({ maxInFlight: options.maxParallel ?? DEFAULT_MAX_PARALLEL });
  const stops = runnable.map((item) => item.stop);
  const answered = new Set<number>();
  const disarm = runnable.length === 0 ? undefined : options.stopButton?.arm(() => {
    const open = runnable.filter((_, i) => !answered.has(i) && !stops[i].signal.aborted);
    if (open.length === 0) return false;
    for (const [i, stop] of stops.entries()) if (!answered.has(i)) stop.abort(new UserStop("Ctrl-C"));
    void options.notice?.(
      `toolgate: stopping ${open.length} call${
        open.length === 1 ? "" : "s"
      } (Ctrl-C again within 2 s quits)\n`,
    );
    return true;
  });
  let results: PromiseSettledResult<unknown>[];
  try {
    results = await Promise.allSettled(
      runnable.map((item, i) =>
        scheduler.run(item.call.tool.concurrent, undefined, async () => {
          options.progress?.start(item.id, item.call.tool.name, executor.limits(item.call).timeoutSec);
          const ran = await runWatched(item.seen, options.progress?.listeners(item.id), (watched) =>
            executor.run(item.call, {
              signal: options.end ? AbortSignal.any([stops[i].signal, options.end]) : stops[i].signal,
              approvedBy: item.approvedBy,
              ...watched,
              questions: options.questions,
              trace: spans[item.index],
            }));
          // A result is checked against the tool's declared outputSchema, as `serve` checks it: a mismatch is a
          // failure the model can act on.
          const envelope = await checkOutput(item.call.tool, ran, executor.schemas);
          answered.add(i);
          options.progress?.end(item.id, envelope);
          envelopes[item.index] = envelope;
        })
      ),
    );
  } finally {
    disarm?.();
  }
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  // A failure for want of a secret tells the model to renew it with store_secret (within the turn's cap).
  const heal = options.secrets?.heal;
  if (heal) {
    calls.forEach((toolCall, index) => {
      envelopes[index] = heal.annotate(
        envelopes[index],
        executor.manifest.byName.get(toolCall.function.name),
      );
    });
  }
  // Pass 3: one answer per call, in the model's order. A tool message holds text only: a tool's images and
  // other bytes are named there, and sent after them where the endpoint takes them.
  const media = options.media ?? new ModelMedia({ images: false, audio: false });
  return media.answers(calls, envelopes, options.maxToolChars);
}
