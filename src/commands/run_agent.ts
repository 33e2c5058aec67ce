/** The agent loop command's work: settings in, answer out (loaded only when the loop runs). @module */
import denoJson from "../../deno.json" with { type: "json" };
import { EXIT, expectPositionals, type Io, type ParsedArgs, UsageError } from "./cli.ts";
import type { Executor } from "../run/executor.ts";
import { makeRedactor } from "../state/redact.ts";
import { decided, type ReadLine, terminalAsker, terminalReadLine } from "../policy/ask.ts";
import { type ApprovalQuestion, type Ask, Policy } from "../policy/policy.ts";
import { firstAnswer } from "../policy/first_answer.ts";
import type { StartedConsole } from "../console/start.ts";
import { consolePort, openConsole } from "./console_option.ts";
import { AgentError } from "../agent/errors.ts";
import { type AgentEvent, type ErrorEvent, type EventSink, jsonlSink } from "../agent/events.ts";
import { ChatClient } from "../agent/chat_client.ts";
import { calledTools, ToolDisclosure } from "../agent/lazy_tools.ts";
import { ModelMedia } from "../agent/tool_media.ts";
import { type ChatTransport, type LoopOutcome, runLoop } from "../agent/loop.ts";
import type { ChatMessage } from "../agent/messages.ts";
import { Progress, terminalColumns } from "../ui/progress.ts";
import { AGENT_DEFAULTS, type AgentSettings, resolveSettings } from "./run_settings.ts";
import {
  keepTranscript,
  loadTranscript,
  openingMessages,
  saveTranscript,
  TranscriptError,
  transcriptText,
} from "../agent/transcript.ts";
import { join } from "../base/paths.ts";
import { stateRoot } from "../state/state.ts";
import { CredentialHeal } from "../agent/credential_heal.ts";
import { terminalSecretAsker } from "../ui/secret_input.ts";
import { usageLine, UsageMeter } from "../agent/usage.ts";
import { approvalSettings } from "./approval_options.ts";
import { executorFromArgs, executorSettings } from "./executor_options.ts";
import { loadForCommand } from "./load.ts";
import { agentQuestions } from "../agent/questions.ts";
import { loopResources } from "../agent/resource_tools.ts";
import { SignalStop } from "./signal_stop.ts";

/** A transcript the person cannot resume is their mistake: a usage error of `run`. */
async function asUsage<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof TranscriptError) throw new UsageError(error.message, "run");
    throw error;
  }
}

/** Runs the agent loop for `toolgate run` / `toolgate --prompt`. */
export async function runAgent(parsed: ParsedArgs, io: Io): Promise<number> {
  expectPositionals(parsed, 0, "run");
  const settings = await resolveSettings(parsed, io);
  const consoleAt = consolePort(parsed, "run");
  const messages = await asUsage(async () =>
    openingMessages({
      loaded: settings.loadMessages === undefined ? undefined : await loadTranscript(settings.loadMessages),
      system: settings.system,
      defaultSystem: AGENT_DEFAULTS.system,
      prompt: settings.prompt,
    })
  );
  // The manifest every command uses (--tools, TOOLGATE_TOOLS, the nearest tools.json, else the built-in belt),
  // trusted before any tool can run.
  const manifest = await loadForCommand(parsed, io, { runsTools: "ask" });
  if (!manifest) return EXIT.failure;
  const approval = approvalSettings(parsed, manifest, "run");
  const executorSet = await executorSettings(parsed, io, "run");
  let watching: StartedConsole | undefined;
  // SIGINT, SIGTERM or SIGHUP from here on stops the calls in flight (each ends its tree and writes its line) and
  // ends the run with the signal's exit code; on a terminal the first Ctrl-C is the stop button instead.
  using stop = new SignalStop();
  const { executor, redact: redactSecrets } = await executorFromArgs(
    parsed,
    io,
    manifest,
    "run",
    executorSet,
    // Its signals are this run's (below): the registry must not end the process before the calls' lines.
    { handleSignals: false, onAudit: () => watching?.hub.audited(), onJob: () => watching?.hub.changed() },
  );
  // A key given with --api-key is not in the environment the run's redaction was built from: mask it too.
  const maskKey = makeRedactor(settings.apiKey ? [settings.apiKey] : []);
  const redact = (text: string) => redactSecrets(maskKey(text));
  const stderr = (text: string) => io.stderr(redact(text));
  const jsonl = settings.output === "jsonl";
  // What happened, for scripts (--output jsonl: stdout carries the events and nothing else) and the usage totals.
  const meter = new UsageMeter();
  const write = jsonl ? jsonlSink(io.stdout, redact) : undefined;
  const emit: EventSink = async (event: AgentEvent) => {
    if (event.type === "response") meter.add(event.usage);
    await write?.(event);
  };
  const out: RunOutput = { emit, stderr, stdout: jsonl ? undefined : io.stdout, env: io.env };
  const client = new ChatClient({
    baseUrl: settings.baseUrl,
    apiKey: settings.apiKey,
    timeoutMs: settings.httpTimeoutMs,
    retries: settings.httpRetries,
    maxResponseBytes: settings.httpMaxBytes,
    userAgent: `toolgate/${denoJson.version}`,
    debug: settings.debug ? (text) => stderr(debugLines(text)) : undefined,
    redact,
  });
  const progress = new Progress({
    enabled: io.interactive && !settings.quiet,
    write: io.stderrControl ?? io.stderr,
    columns: terminalColumns(),
  });
  if (consoleAt !== undefined) {
    watching = await openConsole(io, {
      port: consoleAt,
      parsed,
      settings: executorSet,
      executor,
      redact,
      jobs: executor,
    });
    if (watching === undefined) {
      await executor.close();
      return EXIT.failure;
    }
  }
  // One reader of the terminal for every question (approvals, a tool's forms): a read is never raced by another.
  const readLine = io.interactive ? terminalReadLine(io.stderr) : undefined;
  const asking = approvalAskers(readLine, io, watching, progress);
  const policy = new Policy({
    ...approval,
    ask: asking.ask,
    answeredBy: asking.answeredBy,
    redact,
    width: terminalColumns(),
  });
  // On a terminal, the wait for each answer shows: which model, where, how long (a stuck endpoint shows as one).
  const host = endpointHost(settings.baseUrl);
  const watched: ChatTransport = {
    url: client.url,
    complete: async (body) => {
      progress.waiting(settings.model, host);
      try {
        return await client.complete(body);
      } finally {
        progress.doneWaiting();
      }
    },
    stream: async (body) => {
      progress.waiting(settings.model, host);
      try {
        return await client.stream(body);
      } finally {
        progress.doneWaiting();
      }
    },
  };
  let outcome: LoopOutcome | undefined;
  try {
    const loop = runLoop(messages, {
      executor,
      client: watched,
      policy,
      progress,
      // A tool's questions: its form on the terminal, its question to the model to this run's model.
      questions: agentQuestions({
        readLine,
        write: io.stderr,
        policy,
        client,
        model: settings.model,
        hold: (ask) => progress.hold(ask),
      }),
      model: settings.model,
      maxSteps: settings.maxSteps,
      temperature: settings.temperature,
      stream: settings.stream,
      streamIdleMs: settings.httpTimeoutMs,
      onText: out.stdout,
      onEvent: emit,
      media: new ModelMedia({ images: settings.images, audio: settings.audio }),
      disclosure: new ToolDisclosure(executor.manifest, {
        lazy: settings.lazyTools,
        loaded: calledTools(messages),
      }),
      debug: settings.debug ? (text) => stderr(debugLines(text)) : undefined,
      notice: settings.quiet ? undefined : stderr,
      // On a terminal, Ctrl-C stops the calls in flight and the loop goes on; a second one within 2 s quits.
      stopButton: io.interactive ? stop : undefined,
      end: stop.signal,
      watch: watching?.hub,
      // An MCP server's resources, read by the built-in read_resource (the gateway is connected by now).
      resources: await loopResources(executor),
      // One run is one turn: the two store_secret rounds per failing tool hold for the whole run.
      secrets: {
        ask: io.interactive ? terminalSecretAsker(io.stderr) : undefined,
        nobodyToAsk:
          "toolgate runs without a terminal, so nobody can type it (toolgate secrets set NAME stores " +
          "it ahead)",
        heal: new CredentialHeal(),
      },
    });
    // A stop while the model is asked (or a question waits) need not wait for it: once no call runs, every line
    // is written, and the run ends.
    outcome = await Promise.race([loop, stopped(stop.signal, executor)]);
    if (outcome.kind === "stopped") loop.catch(() => {});
  } catch (error) {
    await watching?.serving.close();
    if (!(error instanceof AgentError)) throw error;
    await progress.close();
    await endJobs(executor, stderr, settings.quiet);
    await fail(out, "endpoint", error.message);
    return await finish(settings, messages, redact, out, meter, EXIT.failure);
  }
  await watching?.serving.close();
  await progress.close();
  await endJobs(executor, stderr, settings.quiet);
  if (outcome.kind === "stopped" || stop.exitCode !== undefined) {
    // The calls in flight were stopped and audited; the transcript is not saved (a turn may be half answered).
    await fail(out, "stopped", `stopped by ${stop.received ?? "a signal"}; no final answer`);
    return stop.exitCode ?? EXIT.failure;
  }
  return await finish(settings, messages, redact, out, meter, await report(outcome, settings, out));
}

/** A run's outcome once a stop came first: an answer, or the steps' cap. */
type Finished = Exclude<LoopOutcome, { readonly kind: "stopped" }>;

/** Resolves once `signal` aborts and no call runs any more (each has its envelope and audit line). */
function stopped(signal: AbortSignal, executor: Executor): Promise<LoopOutcome> {
  return new Promise((resolve) => {
    const done = () => resolve(executor.idle().then(() => ({ kind: "stopped", steps: 0 })));
    if (signal.aborted) done();
    else signal.addEventListener("abort", done, { once: true });
  });
}

/** How long a question waits in the console when nobody answers (then the call is refused, as with no one to ask). */
const CONSOLE_ANSWER_MS = 10 * 60 * 1000;

/**
 * Who is asked about a call: the terminal (when there is one), and with `--console` the console too, the first
 * answer winning; one given in the console is said on the terminal, and the audit line says `approved_by: console`.
 */
function approvalAskers(
  readLine: ReadLine | undefined,
  io: Io,
  watching: StartedConsole | undefined,
  progress: Progress,
): { ask?: Ask; answeredBy?: (question: ApprovalQuestion) => "console" | undefined } {
  const asker = readLine && terminalAsker(readLine, io.stderr);
  // The question goes on the terminal once the progress line (the wait for the model, say) is erased: written
  // beside a redraw still in flight, it would share a line with it.
  const terminal: Ask | undefined = asker &&
    ((question, signal) => progress.hold(() => asker(question, signal)));
  if (watching === undefined) return { ask: terminal };
  const race = firstAnswer([
    ...(terminal ? [{ name: "terminal", ask: terminal }] : []),
    { name: "console", ask: (question, signal) => watching.hub.ask(question, signal, CONSOLE_ANSWER_MS) },
  ]);
  const answeredBy = (question: ApprovalQuestion) =>
    race.answeredBy(question) === "console" ? "console" : undefined;
  return {
    ask: async (question, signal) => {
      const answer = await race.ask(question, signal);
      if (terminal && answeredBy(question)) {
        // The terminal's question is withdrawn: its line says what the console decided.
        await io.stderr(
          `\n${decided(question.tool, answer).replace(/^toolgate: /, "toolgate: in the console: ")}`,
        );
      }
      return answer;
    },
    answeredBy,
  };
}

/** Where a run's outcome goes: stdout in text mode (absent with --output jsonl), stderr, the event sink. */
interface RunOutput {
  readonly emit: EventSink;
  readonly stderr: (text: string) => Promise<void>;
  readonly stdout?: (text: string) => Promise<void>;
  /** The environment: where toolgate's state folder is (a transcript that cannot be saved is kept there). */
  readonly env: Readonly<Record<string, string>>;
}

/** A failure: its message on stderr, and an `error` event. */
async function fail(out: RunOutput, reason: ErrorEvent["reason"], message: string): Promise<void> {
  await out.stderr(`toolgate: ${message}\n`);
  await out.emit({ type: "error", reason, message });
}

/** Background jobs outlive a call, never the run: their trees end before toolgate exits, and it says so. */
async function endJobs(
  executor: Executor,
  stderr: (text: string) => Promise<void>,
  quiet: boolean,
): Promise<void> {
  const running = executor.runningJobs;
  if (running > 0 && !quiet) {
    await stderr(`toolgate: ending ${running} background job${running === 1 ? "" : "s"}\n`);
  }
  // The jobs' trees end, and a worker pool's connection is let go of.
  await executor.close();
}

/** Prints how the loop ended and returns the exit code. */
async function report(outcome: Finished, settings: AgentSettings, out: RunOutput): Promise<number> {
  if (outcome.kind === "step_limit") {
    await fail(
      out,
      "step_limit",
      `the model was still calling tools after ${outcome.steps} step${outcome.steps === 1 ? "" : "s"} ` +
        `(--max-steps ${settings.maxSteps}); no final answer. Raise --max-steps, or resume with ` +
        `--save-messages and --load-messages.`,
    );
    return EXIT.failure;
  }
  if (outcome.text.trim() === "") {
    await fail(out, "empty_answer", "the model's final answer is empty");
    return EXIT.failure;
  }
  await out.emit({
    type: "answer",
    step: outcome.steps,
    text: outcome.text,
    ...(outcome.finishReason === undefined ? {} : { finish_reason: outcome.finishReason }),
  });
  if (!outcome.streamed) await out.stdout?.(outcome.text.endsWith("\n") ? outcome.text : outcome.text + "\n");
  if (outcome.finishReason === "length") {
    await out.stderr("toolgate: warning: the endpoint cut the answer off at its length limit\n");
  }
  return EXIT.ok;
}

/**
 * Ends the run: saves the transcript when asked to (a failed save turns success into failure), then the token
 * totals (when the endpoint reported any): a line on stderr, or the `usage` event with --output jsonl.
 */
async function finish(
  settings: AgentSettings,
  messages: readonly ChatMessage[],
  redact: (text: string) => string,
  out: RunOutput,
  meter: UsageMeter,
  code: number,
): Promise<number> {
  let exit = code;
  if (settings.saveMessages !== undefined) {
    try {
      await saveTranscript(settings.saveMessages, messages, redact);
    } catch (error) {
      if (!(error instanceof AgentError)) throw error;
      await fail(out, "transcript", await rescueTranscript(error.message, messages, redact, out));
      exit = EXIT.failure;
    }
  }
  const totals = meter.totals();
  if (totals !== undefined) {
    if (settings.output === "jsonl") await out.emit({ type: "usage", ...totals });
    else if (!settings.quiet) await out.stderr(`toolgate: ${usageLine(totals)}\n`);
  }
  return exit;
}

/**
 * A transcript that could not be saved where asked is never lost: it is kept in toolgate's state folder (which
 * the run may always write), or, failing that too, printed on stderr. Returns the message that says where it went.
 */
async function rescueTranscript(
  why: string,
  messages: readonly ChatMessage[],
  redact: (text: string) => string,
  out: RunOutput,
): Promise<string> {
  try {
    const kept = keepTranscript(join(stateRoot(out.env), "transcripts"), messages, redact);
    return `${why}; the transcript was kept at ${kept}`;
  } catch (error) {
    await out.stderr(
      `toolgate: the transcript, which could not be saved anywhere:\n${transcriptText(messages, redact)}`,
    );
    return `${why}; nor could it be kept in toolgate's state folder (${(error as Error).message}): ` +
      "it was printed above on stderr";
  }
}

function debugLines(text: string): string {
  return text.split("\n").map((line) => `debug: ${line}`).join("\n") + "\n";
}

/** The host (and port) of the endpoint's URL, as the waiting line names it; the URL itself if it has none. */
function endpointHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return baseUrl;
  }
}
