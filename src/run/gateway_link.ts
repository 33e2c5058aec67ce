/**
 * The executor's link to the manifest's MCP servers: it opens the gateway through the seam a front end gave
 * (src/run/tool_gateway.ts), with the pins the user trusted, starts the servers a run needs, says what cannot be
 * used or is withheld, and runs an upstream tool's call to an audited envelope. Not here: the gateway itself
 * (src/gateway/), the pins (src/manifest/pins.ts).
 *
 * @module
 */
import { type Envelope, failure, type FailureEnvelope, success } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import type { ToolDefinition } from "../manifest/pins.ts";
import { serverOfName } from "../manifest/server_spec.ts";
import type { PreparedCall } from "../policy/prepared_call.ts";
import { EXECUTOR_DEFAULTS } from "../process/executor_defaults.ts";
import type { EgressDecision } from "../sandbox/proxy_settings.ts";
import { ToolLauncher } from "../sandbox/tool_launch.ts";
import { stateRoot } from "../state/state.ts";
import { jobAnswerRecord } from "./audit.ts";
import type { ArgsFacts } from "./audit_trail.ts";
import type { CallContext } from "./call_context.ts";
import { callDefaults, processLimits } from "./call_limits.ts";
import type { CallOptions } from "./call_options.ts";
import type { SamplingFacts, ToolGateway } from "./tool_gateway.ts";
import type { ServerOffers } from "./offer_link.ts";
import type { LogLevel } from "../manifest/tool_messages.ts";

/**
 * The gateway of one executor, opened at the first {@linkcode GatewayLink.connect} that needs a server.
 *
 * @example
 * ```ts ignore
 * // Ignored: a context is the executor's own (src/run/call_context.ts).
 * const link = new GatewayLink(context);
 * const { lines, tools } = await link.connect();
 * ```
 */
export class GatewayLink {
  readonly #context: CallContext;
  readonly #onToolsChanged?: (tools: readonly ToolSpec[]) => void;
  #gateway?: ToolGateway;
  /** The log level a caller asked of the servers before the gateway was opened. */
  #logLevel?: LogLevel;

  /**
   * A link that has opened nothing yet; `onToolsChanged` is told the gateway's exposed tools each time a server's
   * `tools/list_changed` was listed and checked.
   */
  constructor(context: CallContext, onToolsChanged?: (tools: readonly ToolSpec[]) => void) {
    this.#context = context;
    this.#onToolsChanged = onToolsChanged;
  }

  /**
   * Starts the manifest's MCP servers (those `names` need, `mcp__SERVER__...`; default all) and lists their
   * tools: one line per server that could not be listed and per withheld tool, and the gateway's exposed tools
   * (`undefined` when no server was wanted).
   */
  async connect(names?: readonly string[]): Promise<{ lines: string[]; tools?: readonly ToolSpec[] }> {
    const { options, workspace, controlPlane, secrets } = this.#context;
    const servers = options.manifest.servers ?? [];
    if (servers.length === 0) return { lines: [] };
    const wanted = names === undefined
      ? servers.map((server) => server.name)
      : names.flatMap((name) => serverOfName(name) ?? []).filter((name) =>
        servers.some((s) => s.name === name)
      );
    if (wanted.length === 0) return { lines: [] };
    const lines: string[] = [];
    if (this.#gateway === undefined) {
      const open = options.openGateway;
      if (open === undefined) {
        return { lines: ["the MCP servers cannot be used: this executor was given no gateway to open"] };
      }
      const { readPins } = await import("../manifest/pins.ts");
      let pins = {};
      let manifest: string | undefined;
      try {
        manifest = Deno.realPathSync(options.manifest.path);
        pins = readPins(stateRoot(options.env), manifest);
      } catch (error) {
        lines.push(`the pinned MCP tool definitions cannot be read: ${(error as Error).message}`);
      }
      this.#gateway = await open({
        servers,
        pins,
        launcher: new ToolLauncher({
          // The gateway pins its servers' tools; the manifest's trust covers the servers' commands.
          manifest: { ...options.manifest, pinned: undefined },
          env: options.env,
          workspace,
          controlPlane,
          sandbox: options.sandbox,
          bwrap: options.bwrap,
        }),
        env: options.env,
        workspace,
        manifest,
        secret: (name) => secrets.value(name),
        registry: options.registry,
        graceMs: options.graceMs ?? EXECUTOR_DEFAULTS.graceMs,
        onToolsChanged: () => this.#gateway && this.#onToolsChanged?.(this.#gateway.tools),
      });
      if (this.#logLevel !== undefined) this.#gateway.setLogLevel?.(this.#logLevel);
    }
    const gateway = this.#gateway;
    await gateway.refresh(wanted);
    for (const name of wanted) {
      const problem = gateway.problems.get(name);
      if (problem !== undefined) lines.push(`MCP server ${JSON.stringify(name)} cannot be used: ${problem}`);
    }
    for (const [name, reason] of gateway.withheld) {
      if (!wanted.includes(serverOfName(name) ?? "")) continue;
      const changes = reason === "changed" ? gateway.changes?.(name) : undefined;
      const why = changes ?? `its definition is ${reason === "new" ? "not trusted yet" : "changed"}`;
      lines.push(`${name} is withheld: ${why} (toolgate trust shows it)`);
    }
    return { lines, tools: gateway.tools };
  }

  /** The definitions of the tools MCP server `server` exposes now; throws when the gateway is not connected. */
  definitions(server: string): Promise<ToolDefinition[]> {
    if (this.#gateway === undefined) throw new Error("the MCP gateway is not connected");
    return this.#gateway.definitions(server);
  }

  /** The servers' resources, prompts and completions, once the gateway is connected (src/run/offer_link.ts). */
  get offers(): ServerOffers | undefined {
    return this.#gateway?.offers;
  }

  /** A caller asks for the servers' log messages from `level` up: passed on now, or when the gateway opens. */
  setLogLevel(level: LogLevel): void {
    this.#logLevel = level;
    this.#gateway?.setLogLevel?.(level);
  }

  /** The answer to a gateway tool that is withheld, or whose server cannot be used; `undefined` otherwise. */
  refusal(name: string): FailureEnvelope | undefined {
    return this.#gateway?.refusal(name);
  }

  /**
   * A call of an MCP server's tool, through the gateway: the server started if need be, cancelled upstream with
   * `signal`, the answer an envelope; the audit line names the server and its tool, and is written before the
   * answer, together with those of the calls answering in the same turn (`AuditTrail.before`,
   * src/run/audit_trail.ts).
   */
  async call(call: PreparedCall, options: CallOptions): Promise<Envelope> {
    const { trail, secrets } = this.#context;
    const { tool } = call;
    const upstream = tool.upstream!;
    const { timeoutMs } = processLimits(tool, callDefaults(options, this.#context.options).timeoutSec);
    const started = trail.now();
    const clock = performance.now();
    let egress: readonly EgressDecision[] = [];
    // The arguments' size and digest for the audit line, made while the server works rather than after it answered.
    let args: ArgsFacts | undefined;
    // The server's progress and logs reach the caller as a tool's messages do: redacted as its answer is.
    const onEvent = options.onToolEvent &&
      (await import("../manifest/tool_protocol.ts")).scrubbedEvents(options.onToolEvent, secrets.scrub);
    const envelope = this.#gateway === undefined
      ? failure("unavailable", "The MCP gateway is not connected.", { tool: tool.name })
      : await this.#gateway.call(tool, call.args, {
        signal: options.signal,
        timeoutMs,
        onEgress: (decisions) => egress = decisions,
        // The call's trace context, for the server's `params._meta` (MCP semantic conventions).
        meta: options.trace?.carrier,
        // What the server asks while the call runs goes to the call's caller, secret values taken out.
        questions: options.questions,
        scrub: secrets.scrub ?? ((text) => text),
        onSampling: (facts) => this.#sampled(call, facts),
        onEvent,
        whileWaiting: () => args = trail.argsFacts(call.argsText),
      });
    const ms = Math.round(performance.now() - clock);
    const cancelled = options.signal?.aborted ? true : undefined;
    // Before the answer, with the lines of the calls that answer in the same turn (docs/audit_log.md, "When a
    // line is written").
    await trail.before(started, tool.name, args ?? call.argsText, (facts) => ({
      ...jobAnswerRecord(facts, { ms, envelope }),
      server: upstream.server,
      upstream_tool: upstream.tool,
      // What the egress proxy decided for the server's requests while the call ran.
      egress: egress.length > 0 ? egress : undefined,
      profile: tool.profile.name,
      cancelled,
      approved_by: options.approvedBy,
    }));
    return secrets.forCaller(envelope);
  }

  /**
   * The audit line of a server's request for a model's answer during `call`: its own line, `question:
   * "sampling"`, naming the server and the tool whose call it came in, how it ended (`ok`, or why it was not
   * answered), the model; the request's size and digest, never its text.
   */
  #sampled(call: PreparedCall, facts: SamplingFacts): void {
    const { tool } = call;
    const envelope = facts.outcome === "ok"
      ? success({})
      : failure(facts.outcome, "The server's request for a model's answer was not answered.");
    this.#context.trail.behind(this.#context.trail.now(), tool.name, facts.argsText, (line) => ({
      ...jobAnswerRecord(line, { ms: facts.ms, envelope }),
      question: "sampling",
      server: tool.upstream?.server,
      upstream_tool: tool.upstream?.tool,
      model: facts.model,
      profile: tool.profile.name,
    }));
  }

  /** Ends every server's tree. */
  async close(): Promise<void> {
    await this.#gateway?.close();
  }
}
