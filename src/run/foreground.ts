/**
 * One call run in the foreground: its program launched as its profile says (bubblewrap, cgroups, the egress
 * proxy), run to its end under its limits, a `toolgate/1` tool's channel and questions served as it runs, the
 * launch released, the envelope made and the run audited. Not here: deciding where a call goes
 * (src/run/executor.ts), background jobs (src/run/background_jobs.ts).
 *
 * @module
 */
import { type Envelope, withDenials, withWarnings } from "../contract.ts";
import type { PreparedCall } from "../policy/prepared_call.ts";
import { protocolEnvelope } from "../process/protocol_envelope.ts";
import { runProcess } from "../process/runner.ts";
import type { RunResult } from "../process/run_terms.ts";
import { stderrLines } from "../process/stderr_tail.ts";
import { shutdownCause, stoppedByUser } from "../process/stop.ts";
import { type Launch, PROXY_ENV } from "../sandbox/tool_launch.ts";
import { runRecord } from "./audit.ts";
import type { CallContext } from "./call_context.ts";
import { callDefaults, processLimits } from "./call_limits.ts";
import type { CallOptions } from "./call_options.ts";
import { CHILD_SPANS, denialAttributes, egressAttributes, SPAN_EVENTS } from "./tracing.ts";

const encoder = new TextEncoder();

/**
 * Runs a prepared call's program to its envelope (secret values taken out), and audits it.
 *
 * @example
 * ```ts ignore
 * // The executor's run step, once the call is neither upstream, pooled, a job, nor missing a secret:
 * const envelope = await runForeground(context, call, options);
 * ```
 */
export async function runForeground(
  context: CallContext,
  call: PreparedCall,
  options: CallOptions,
): Promise<Envelope> {
  const { tool } = call;
  const env = context.secrets.toolEnv(tool, context.controlPlane, options.secrets);
  const defaults = callDefaults(options, context.options);
  const { timeoutMs, idleTimeoutMs } = processLimits(tool, defaults.timeoutSec);
  const { maxOutputBytes, graceMs } = defaults;
  const started = context.trail.now();
  let result: RunResult | undefined;
  let envelope: Envelope;
  options.trace?.arguments(call.argsText, (text) => context.secrets.redact(text));
  // The confinement's start (bubblewrap's arguments, the egress proxy, a cgroup slot) is a child of the call's span.
  // It waits at a gate (src/sandbox/gate.ts) only where something may make it ahead of its go: a pool caller's go,
  // or a start made ahead of its call; any other call starts its tool at once (the gate inside a sandbox is one
  // more exec there).
  const atGate = options.goAhead !== undefined || context.options.startsAhead !== undefined;
  const start = () =>
    context.launcher.launch(tool, undefined, context.secrets.credentials(tool, options.secrets), atGate);
  const launch = await (options.trace?.child(CHILD_SPANS.confinement, start) ?? start());
  if (!launch.ok) {
    envelope = launch.envelope;
  } else {
    // A toolgate/1 tool's stdout is its channel: read as it comes, and the tool cut off when it breaks it.
    const cutOff = new AbortController();
    // A tool that may ask keeps its stdin open after the arguments line: its answers come there.
    let write: (bytes: Uint8Array) => Promise<boolean> = () => Promise.resolve(false);
    // The toolgate/1 channel and the question desk load only for a tool that speaks the protocol or asks.
    const desk = tool.asks.length === 0 ? undefined : new (await import("./tool_questions.ts")).QuestionDesk({
      tool,
      handlers: options.questions,
      scrub: context.secrets.scrub,
      write: (bytes) => write(bytes),
      onAnswered: (id) => channel?.answered(id),
    });
    const protocol = tool.protocol === undefined ? undefined : await import("../manifest/tool_protocol.ts");
    const channel = protocol && new protocol.ToolChannel({
      tool: tool.name,
      maxBytes: maxOutputBytes,
      onEvent: options.onToolEvent && protocol.scrubbedEvents(options.onToolEvent, context.secrets.scrub),
      onViolation: () => cutOff.abort(),
      asks: tool.asks,
      onQuestion: desk && ((question) => desk.ask(question)),
    });
    // A call waiting for its go: a start that does nothing before its stdin speaks (held at its gate, or a built-in
    // tool, which reads its arguments first) is made now, its stdin written once the go came; any other waits.
    const held = launch.gate !== undefined || tool.builtin !== undefined;
    if (options.goAhead !== undefined && !held) await options.goAhead;
    result = await runProcess({
      program: launch.program,
      args: launch.args,
      env: launch.unregister ? { ...env, ...PROXY_ENV, ...launch.env } : env,
      cwd: context.workspace,
      // A protocol tool reads its arguments as the first line of stdin; a gated one's gate comes first.
      stdin: gated(launch.gate, encoder.encode(JSON.stringify(call.args) + (channel ? "\n" : ""))),
      goAhead: held ? options.goAhead : undefined,
      replies: desk && ((writer) => write = writer),
      waiting: desk && (() => desk.waiting),
      timeoutMs,
      idleTimeoutMs,
      graceMs,
      maxOutputBytes,
      signal: channel
        ? AbortSignal.any([cutOff.signal, ...(options.signal ? [options.signal] : [])])
        : options.signal,
      sink: channel?.sink,
      onStderr: stderrTaps(
        options.onStderrLine && stderrLines(options.onStderrLine, (text) => context.secrets.redact(text)),
        options.onStderr,
      ),
      registry: context.options.registry,
      endsItsTree: launch.confined,
      tree: launch.tree,
      ahead: launch.startsAhead ? context.options.startsAhead : undefined,
      spawner: context.launcher.spawner,
      launcher: context.launcher.groupLauncher(launch),
    });
    channel?.end();
    desk?.close();
    // The call's tree is gone: its egress token and its cgroup slot are free for the next call.
    context.launcher.release(launch);
    for (const decision of launch.egress ?? []) {
      options.trace?.mark(CHILD_SPANS.egress, egressAttributes(decision));
    }
    envelope = withWarnings(
      channel?.violation ?? protocolEnvelope(channel, result, {
        tool: tool.name,
        program: tool.program,
        timeoutMs,
        maxOutputBytes,
        readOnly: tool.readOnly,
        scrub: context.secrets.scrub,
        idleTimeoutMs,
        killedBy: stoppedByUser(options.signal) ? "user" : undefined,
        shutdown: shutdownCause(options.signal),
        sandbox: launch.view,
        ownDenials: tool.builtin !== undefined,
      }),
      [...launch.envelopeWarnings, ...refusedRequests(launch)],
    );
    // A failure that reads like a refusal of the sandbox's syscall filter says so, for the model.
    const failed = failureText(envelope);
    const note = failed === undefined ? undefined : launch.filterNote?.(failed);
    if (note !== undefined) envelope = withWarnings(envelope, [note]);
    // What toolgate refused the tool, typed: the proxy's refusals, the filter's a failure reports.
    envelope = withDenials(envelope, launch.denials?.(failed) ?? []);
    for (const denial of envelope.denials ?? []) {
      const target = context.secrets.redact(denial.target);
      options.trace?.event(SPAN_EVENTS.denial, denialAttributes({ ...denial, target }));
    }
  }
  await context.trail.write({
    ...runRecord(await context.trail.facts(started, tool.name, call.argsText), {
      argv: [tool.program, ...tool.args],
      result,
      envKeys: Object.keys(env),
      envelope,
      launch: launch.ok ? launch : undefined,
      profile: tool.profile.name,
    }),
    // A pool worker's line carries the caller's call id, as the caller's own line does.
    call_id: options.callId,
    approved_by: options.approvedBy,
  });
  return context.secrets.forCaller(envelope);
}

/** What the model is told of requests the egress proxy refused for a credential's placeholder. */
function refusedRequests(launch: Launch): string[] {
  return (launch.egress ?? []).flatMap((decision) =>
    decision.reason === undefined
      ? []
      : [`toolgate's egress proxy refused a request to ${decision.host}:${decision.port}: ${decision.reason}`]
  );
}

/**
 * What a failed call said: a failure's message and stderr, or the stderr a successful call reports of a program
 * that exited non-zero (`exec`'s `{exit_code, stderr}`); `undefined` for a call that did not fail.
 */
function failureText(envelope: Envelope): string | undefined {
  if (!envelope.ok) return `${envelope.message}\n${envelope.stderr ?? ""}`;
  const result: unknown = envelope.result;
  if (typeof result !== "object" || result === null) return undefined;
  const { exit_code: code, stderr } = result as Record<string, unknown>;
  return typeof stderr === "string" && typeof code === "number" && code !== 0 ? stderr : undefined;
}

/** A gated start's stdin: its gate, then what the tool reads. */
function gated(gate: Uint8Array | undefined, stdin: Uint8Array): Uint8Array {
  if (gate === undefined) return stdin;
  const bytes = new Uint8Array(gate.length + stdin.length);
  bytes.set(gate);
  bytes.set(stdin, gate.length);
  return bytes;
}

/** The runner's one stderr tap, for the progress line's last line and the web console's tail alike. */
function stderrTaps(
  ...taps: (((chunk: Uint8Array) => void) | undefined)[]
): ((chunk: Uint8Array) => void) | undefined {
  const set = taps.filter((tap): tap is (chunk: Uint8Array) => void => tap !== undefined);
  if (set.length <= 1) return set[0];
  return (chunk) => set.forEach((tap) => tap(chunk));
}
