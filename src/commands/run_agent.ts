/** The agent loop command's work: settings in, answer out (loaded only when the loop runs). @module */
import { resolve } from "node:path";
import denoJson from "../../deno.json" with { type: "json" };
import { EXIT, expectPositionals, type Io, type ParsedArgs, stringOption } from "../cli.ts";
import type { Executor } from "../executor.ts";
import { type Manifest, validateManifest } from "../manifest.ts";
import { makeRedactor } from "../redact.ts";
import { terminalAsker, terminalReadLine } from "../ask.ts";
import { Policy } from "../policy.ts";
import { AgentError } from "../agent/errors.ts";
import { ChatClient } from "../agent/http.ts";
import { type LoopOutcome, runLoop } from "../agent/loop.ts";
import type { ChatMessage } from "../agent/messages.ts";
import { heartbeatMsFrom, Progress, terminalColumns } from "../progress.ts";
import { AGENT_DEFAULTS, type AgentSettings, resolveSettings } from "../agent/settings.ts";
import { loadTranscript, openingMessages, saveTranscript } from "../agent/transcript.ts";
import { approvalSettings } from "./approval_options.ts";
import { executorFromArgs } from "./executor_options.ts";
import { loadForCommand, manifestPath } from "./load.ts";

/** Runs the agent loop for `toolgate run` / `toolgate --prompt`. */
export async function runAgent(parsed: ParsedArgs, io: Io): Promise<number> {
  expectPositionals(parsed, 0, "run");
  const settings = await resolveSettings(parsed, io);
  const loaded = settings.loadMessages === undefined
    ? undefined
    : await loadTranscript(settings.loadMessages);
  const messages = openingMessages({
    loaded,
    system: settings.system,
    defaultSystem: AGENT_DEFAULTS.system,
    prompt: settings.prompt,
  });
  const manifest = await manifestFor(parsed, io);
  if (!manifest) return EXIT.failure;
  const approval = approvalSettings(parsed, manifest, "run");
  const { executor, registry } = await executorFromArgs(parsed, io, manifest, "run");
  // A key given with --api-key is not in the environment the executor redacts: mask it too.
  const maskKey = makeRedactor(settings.apiKey ? [settings.apiKey] : []);
  const redact = (text: string) => executor.redact(maskKey(text));
  const stderr = (text: string) => io.stderr(redact(text));
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
    heartbeatMs: heartbeatMsFrom(io.env),
  });
  let outcome: LoopOutcome | undefined;
  try {
    outcome = await runLoop(messages, {
      executor,
      client,
      policy: new Policy({
        ...approval,
        ask: io.interactive ? terminalAsker(terminalReadLine(io.stderr)) : undefined,
        redact,
        width: terminalColumns(),
      }),
      progress,
      model: settings.model,
      maxSteps: settings.maxSteps,
      temperature: settings.temperature,
      stream: settings.stream,
      streamIdleMs: settings.httpTimeoutMs,
      onText: io.stdout,
      debug: settings.debug ? (text) => stderr(debugLines(text)) : undefined,
      notice: settings.quiet ? undefined : stderr,
      // On a terminal, Ctrl-C stops the calls in flight and the loop goes on; a second one within 2 s quits.
      stopButton: io.interactive ? { arm: (stop) => registry.interceptInterrupt(stop) } : undefined,
    });
  } catch (error) {
    if (!(error instanceof AgentError)) throw error;
    await progress.close();
    await endJobs(executor, stderr, settings.quiet);
    await stderr(`toolgate: ${error.message}\n`);
    return await finish(settings, messages, redact, io, EXIT.failure);
  }
  await progress.close();
  await endJobs(executor, stderr, settings.quiet);
  return await finish(settings, messages, redact, io, await report(outcome, settings, io, stderr));
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
async function report(
  outcome: LoopOutcome,
  settings: AgentSettings,
  io: Io,
  stderr: (text: string) => Promise<void>,
): Promise<number> {
  if (outcome.kind === "step_limit") {
    await stderr(
      `toolgate: the model was still calling tools after ${outcome.steps} step${
        outcome.steps === 1 ? "" : "s"
      } ` +
        `(--max-steps ${settings.maxSteps}); no final answer. Raise --max-steps, or resume with ` +
        `--save-messages and --load-messages.\n`,
    );
    return EXIT.failure;
  }
  if (outcome.text.trim() === "") {
    await stderr("toolgate: the model's final answer is empty\n");
    return EXIT.failure;
  }
  if (!outcome.streamed) await io.stdout(outcome.text.endsWith("\n") ? outcome.text : outcome.text + "\n");
  if (outcome.finishReason === "length") {
    await stderr("toolgate: warning: the endpoint cut the answer off at its length limit\n");
  }
  return EXIT.ok;
}

/** Saves the transcript when asked to; a failed save turns success into failure. */
async function finish(
  settings: AgentSettings,
  messages: readonly ChatMessage[],
  redact: (text: string) => string,
  io: Io,
  code: number,
): Promise<number> {
  if (settings.saveMessages === undefined) return code;
  try {
    await saveTranscript(settings.saveMessages, messages, redact);
    return code;
  } catch (error) {
    if (!(error instanceof AgentError)) throw error;
    await io.stderr(`toolgate: ${error.message}\n`);
    return EXIT.failure;
  }
}

/** The manifest named, or an empty one when none was named and `./tools.json` does not exist (as agentcli). */
async function manifestFor(parsed: ParsedArgs, io: Io): Promise<Manifest | undefined> {
  const named = stringOption(parsed, "tools") !== undefined || (io.env.TOOLGATE_TOOLS ?? "") !== "";
  const path = manifestPath(parsed, io);
  if (!named && !(await exists(path))) {
    const empty = validateManifest({ tools: [] }, resolve(io.cwd, "tools.json"));
    if (empty.ok) return empty.manifest;
  }
  return await loadForCommand(parsed, io);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    // Anything but absence is for the manifest loader to report.
    return !(error instanceof Deno.errors.NotFound);
  }
}

function debugLines(text: string): string {
  return text.split("\n").map((line) => `debug: ${line}`).join("\n") + "\n";
}
