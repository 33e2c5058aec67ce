/** The `call` command: runs one tool and prints its envelope. @module */
import { type Command, EXIT, expectPositionals, UsageError } from "./cli.ts";
import { type Envelope, failure, serialize } from "../contract.ts";
import { OWN_COMMAND } from "../policy/policy.ts";
import { Progress, terminalColumns } from "../ui/progress.ts";
import { auditUnrun, EXECUTOR_OPTIONS, executorFromArgs, executorSettings } from "./executor_options.ts";
import { loadForCommand } from "./load.ts";
import { UntrustedManifest } from "./trust_gate.ts";
import { nearestNames } from "../base/text.ts";
import { errorType } from "../run/tracing.ts";
import { checkOutput } from "../run/output_check.ts";
import { SignalStop } from "./signal_stop.ts";
import { ShutdownStop, shutdownStopped, userStopped } from "../process/stop.ts";

/** `toolgate call NAME [ARGS]` */
export const callCommand: Command = {
  name: "call",
  summary: "run one tool and print its result envelope",
  usage: "toolgate call NAME [ARGS | -] [options]",
  options: EXECUTOR_OPTIONS,
  details: [
    "ARGS is the JSON arguments object as text; `-` reads it from stdin; absent means {}.",
    "Prints exactly one envelope line on stdout: exit 0 when it is ok, 1 when not.",
    "The call is your own command, so it needs no further approval (the agent loop and serve ask for it).",
    "On a terminal a running call shows one live line: its time against its limit (`running NAME 3.0s/30s`)",
    "and the last line the tool wrote to stderr (or its toolgate/1 progress message).",
    'Ctrl-C (SIGINT) stops the call: its tree ends, the envelope says killed_by: "user", and the exit is 130.',
    'SIGTERM and SIGHUP stop it the same way: killed_by: "shutdown" with stop_signal, exit 143 or 129. Either',
    "way the envelope is printed and the call's audit line written; a second signal changes nothing.",
    "exec with background: true is refused here: call exits when its call ends, and a job would end with it.",
    'Example: toolgate call get_time \'{"timezone":"Europe/Helsinki"}\'',
  ].join("\n"),
  async run(parsed, io) {
    const [name, argsText] = parsed.positionals;
    if (name === undefined) throw new UsageError("call needs a tool name", "call");
    expectPositionals(parsed, 2, "call");
    const settings = await executorSettings(parsed, io, "call");
    let manifest;
    try {
      manifest = await loadForCommand(parsed, io, { runsTools: "ask" });
    } catch (error) {
      if (!(error instanceof UntrustedManifest)) throw error;
      // stdout stays one envelope line, for whoever reads it; stderr said what is new or changed.
      const kind = error.denied ? "user_denied" : "rejected";
      const message = `${error.message[0].toUpperCase()}${error.message.slice(1)}.`;
      const envelope = failure(kind, message, { tool: name, retryable: false });
      // A refused call has its line, as every refusal does (its arguments as given: stdin is not read for it).
      await auditUnrun(
        settings,
        io,
        name,
        argsText === "-" || argsText === undefined ? "{}" : argsText,
        envelope,
        {
          trust: error.denied ? "denied" : "untrusted",
        },
      );
      await io.stdout(serialize(envelope) + "\n");
      return EXIT.failure;
    }
    if (!manifest) return EXIT.failure;
    // SIGINT (Ctrl-C), SIGTERM or SIGHUP from here on stops the call: its tree ends, its line is written, and stdout
    // still gets its one envelope (killed_by: "user" for SIGINT, "shutdown" for the others): whoever reads it
    // learns what happened. Before the call starts (an MCP server still starting, say), it starts nothing and is
    // answered the same way.
    using stop = new SignalStop();
    // One call and out: a background job could not outlive it, so this executor keeps none. Its signals are this
    // command's: the registry must not end the process before the call's envelope and line.
    const { executor } = await executorFromArgs(parsed, io, manifest, "call", settings, {
      handleSignals: false,
      jobs: false,
      tools: [name],
    });
    // A stop while the arguments are still being read (`-`) ends the call before it began.
    const args = argsText === "-" ? await untilStopped(io.stdin(), stop.signal) : argsText ?? "{}";
    // On a terminal, a slow tool shows that it runs and for how long (on stderr; stdout stays one envelope).
    const progress = new Progress({
      enabled: io.interactive,
      write: io.stderrControl ?? io.stderr,
      columns: terminalColumns(),
    });
    progress.start("call", name);
    let envelope: Envelope;
    // The call is the trace's root: nothing calls `toolgate call` but a person or a script.
    const span = executor.tracing.toolCall({ tool: name });
    const prepared = args === undefined ? undefined : await executor.prepare(name, args);
    if (prepared === undefined) {
      envelope = stoppedEarly(name, stop.signal.reason, manifest.byName.get(name)?.readOnly === true);
    } else if (!prepared.ok) {
      envelope = prepared.envelope;
    } else {
      // Now its limit is known, for the line (`running NAME 3.0s/30s`).
      progress.start("call", name, executor.limits(prepared.call).timeoutSec);
      // The person typed this very call: the policy approves it by definition.
      const verdict = await OWN_COMMAND.decide(prepared.call);
      // A toolgate/1 tool's progress shows in the line; its form is asked on the terminal (none without one);
      // `call` has no model, so a question to one is answered that nobody can take it.
      // The terminal's prompt and form load only where there is a terminal.
      const readLine = io.interactive && argsText !== "-"
        ? (await import("../policy/ask.ts")).terminalReadLine(io.stderr)
        : undefined;
      envelope = verdict.approved
        ? await executor.run(prepared.call, {
          approvedBy: verdict.by,
          signal: stop.signal,
          trace: span,
          ...progress.listeners("call"),
          questions: {
            user: readLine &&
              ((question, { tool }) =>
                progress.hold(async () =>
                  (await import("../ui/terminal_form.ts")).askForm(question, readLine, io.stderr, tool.name)
                )),
            url: readLine &&
              ((question, { tool }) =>
                progress.hold(async () =>
                  (await import("../ui/terminal_form.ts")).askUrl(question, readLine, io.stderr, tool.name)
                )),
            nobody: readLine
              ? "toolgate call has no model to ask: run the tool from the agent loop or an MCP client"
              : "toolgate call runs without a terminal, so nobody can answer the tool's question",
          },
        })
        : await executor.refuse(prepared.call, verdict.envelope);
      // A result is checked against the tool's declared outputSchema, as `serve` checks it.
      envelope = await checkOutput(prepared.call.tool, envelope, executor.schemas);
    }
    progress.end("call", envelope);
    span.end(errorType(envelope));
    await progress.close();
    await executor.close();
    await io.stdout(serialize(envelope) + "\n");
    // A person typed this: say on stderr what a model is not told (near names invite a model to invent tools).
    const hint = envelope.ok || args === undefined
      ? undefined
      : await slipHint(envelope.kind, name, args, manifest.tools);
    if (hint !== undefined) await io.stderr(`toolgate: ${hint}\n`);
    if (stop.exitCode !== undefined) return stop.exitCode;
    return envelope.ok ? EXIT.ok : EXIT.failure;
  },
};

/** `reading`, or `undefined` once `signal` aborts first. */
function untilStopped<T>(reading: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    reading.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** The answer to a call stopped before its arguments were read: nothing ran, and it says who stopped it. */
function stoppedEarly(name: string, reason: unknown, readOnly: boolean): Envelope {
  return reason instanceof ShutdownStop
    ? shutdownStopped(name, reason.trigger, readOnly)
    : userStopped(name, {}, "The user stopped the call before it started; nothing ran.");
}

/** What a person who typed the call may have slipped on: a tool's name, or the JSON of the arguments. */
async function slipHint(
  kind: string,
  name: string,
  args: string,
  tools: readonly { readonly name: string }[],
): Promise<string | undefined> {
  if (kind === "tool_not_found") {
    const names = tools.map((tool) => tool.name);
    const near = nearestNames(name, names);
    if (near.length > 0) return `no tool is named ${JSON.stringify(name)}; did you mean ${near.join(", ")}?`;
    return names.length <= 12
      ? `no tool is named ${JSON.stringify(name)}; the tools are ${names.join(", ") || "none"}`
      : `no tool is named ${JSON.stringify(name)}; \`toolgate list --format names\` lists them`;
  }
  if (kind === "invalid_args" && args.trim() !== "") {
    const { jsonSyntaxError } = await import("../manifest/jsonc.ts");
    const where = await jsonSyntaxError(args.trim());
    if (where === undefined) return undefined;
    const [line, column, ...message] = where.split(":");
    return `the arguments are not JSON: line ${line}, column ${column}: ${message.join(":").trim()}`;
  }
  return undefined;
}
