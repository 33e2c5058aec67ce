/**
 * One turn's tool calls, answered: each checked in the model's order (lookup, arguments, the approval policy), the
 * approved ones run through the scheduler, and one tool message per call in the model's order. Each call has its
 * span (`execute_tool`), a child of the agent run's. Not here: the loop that asks the model (`loop.ts`).
 *
 * @module
 */
import { type Envelope } from "../contract.ts";
import type { Executor, PreparedCall } from "../run/executor.ts";
import type { ToolCall, ToolMessage } from "./messages.ts";
import type { ApprovedBy, Policy } from "../policy/policy.ts";
import type { Progress } from "../ui/progress.ts";
import { Scheduler } from "../run/scheduler.ts";
import { type StopButton, UserStop } from "../process/stop.ts";
import { forModel, toolMessageContent } from "./tool_message.ts";
import { answerSecretCall, type LoopSecrets } from "./credential_heal.ts";
import { STORE_SECRET } from "../run/store_secret.ts";
import type { ToolDisclosure } from "./lazy_tools.ts";
import type { QuestionHandlers } from "../run/tool_questions.ts";
import { decideInSpan, errorType, type TraceSpan } from "../run/tracing.ts";

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
  /** The in-process `store_secret` tool and the turn's credential auto-heal (offered when a tool declares a secret). */
  readonly secrets?: LoopSecrets;
  /**
   * Which tools are sent in full (`--lazy-tools` starts with stubs; default: every tool in full): the first call
   * of a stub is answered with its definition, not run.
   */
  readonly disclosure?: ToolDisclosure;
  /** Who answers a `toolgate/1` tool's questions (the terminal, the run's model; see `questions.ts`). */
  readonly questions?: QuestionHandlers;
  /** The agent run's span: each tool call's span is its child (`runLoop` opens it). */
  readonly trace?: TraceSpan;
}

interface Runnable {
  readonly index: number;
  readonly id: string;
  readonly call: PreparedCall;
  /** What approved it (a person, `--yes`, ...): a `job` kill a person approved says `killed_by: "user"`. */
  readonly approvedBy: ApprovedBy;
}

/**
 * Answers one turn's tool calls: checks them in the model's order, runs the approved ones, and returns one tool
 * message per call, in the model's order, each holding its envelope cut to fit.
 *
 * @example
 * ```ts
 * import { answerToolCalls } from "./loop.ts";
 * // const toolMessages = await answerToolCalls(assistant.tool_calls, { executor, policy });
 * ```
 */
export async function answerToolCalls(
  calls: readonly ToolCall[],
  options: TurnOptions,
): Promise<ToolMessage[]> {
  // One span per call, each ended with its envelope however the turn ends.
  const spans = calls.map((toolCall) =>
    options.executor.tracing.toolCall({
      tool: toolCall.function.name,
      callId: toolCall.id,
      parent: options.trace,
    })
  );
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
): Promise<ToolMessage[]> {
  const { executor } = options;
  const runnable: Runnable[] = [];
  // Pass 1: lookup, arguments, approval, one call at a time so that questions come in the model's order.
  for (const [index, toolCall] of calls.entries()) {
    if (options.disclosure?.isStub(toolCall.function.name)) {
      // The first call of a stub runs nothing: it is answered with the tool's definition, to call again.
      envelopes[index] = options.disclosure.disclose(toolCall);
      continue;
    }
    if (options.secrets && toolCall.function.name === STORE_SECRET) {
      // Answered here, in the model's order: the person's answer is its approval.
      envelopes[index] = await answerSecretCall(toolCall.function.arguments, executor, options.secrets);
      continue;
    }
    const prepared = await executor.prepare(toolCall.function.name, toolCall.function.arguments);
    if (!prepared.ok) {
      envelopes[index] = prepared.envelope;
      continue;
    }
    const verdict = await decideInSpan(options.policy, prepared.call, spans[index]);
    if (!verdict.approved) {
      envelopes[index] = await executor.refuse(prepared.call, verdict.envelope);
      if (verdict.envelope.kind === "rejected") {
        await options.notice?.(
          `toolgate: did not run ${prepared.call.tool.name}: ${verdict.envelope.message}\n`,
        );
      }
      continue;
    }
    runnable.push({ index, id: toolCall.id, call: prepared.call, approvedBy: verdict.by });
  }
  // Pass 2: in the model's order through the scheduler: runs of consecutive concurrent calls side by side, any
  // other call alone. Every call is waited for, even when one throws (a bug), before the error goes on. A stop
  // aborts every call not yet answered: one in flight ends its tree, one still waiting runs nothing; the executor
  // answers both (and audits them).
  const scheduler = new Scheduler({ maxInFlight: options.maxParallel ?? DEFAULT_MAX_PARALLEL });
  const stops = runnable.map(() => new AbortController());
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
          const envelope = await executor.run(item.call, {
            signal: stops[i].signal,
            approvedBy: item.approvedBy,
            onToolEvent: options.progress && ((event) => options.progress?.toolEvent(item.id, event)),
            questions: options.questions,
            trace: spans[item.index],
          });
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
  // Pass 3: one answer per call, in the model's order.
  return calls.map((toolCall, index) => ({
    role: "tool",
    tool_call_id: toolCall.id,
    // A tool's images and other bytes are named, not sent: a tool message holds text only.
    content: toolMessageContent(forModel(envelopes[index]), options.maxToolChars),
  }));
}
