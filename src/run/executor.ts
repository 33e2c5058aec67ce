/**
 * The executor: the one pipeline behind every caller (the CLI's `call`, the agent loop, the MCP server), so they
 * cannot drift. lookup -> preflight -> (the caller's approval) -> run -> envelope -> audit; every envelope handed back has the values of secret
 * variables taken out. Two built-in calls take
 * a turn at the run step: `exec` with `background: true` is launched the same way but handed to the job manager
 * (src/run/jobs.ts) instead of being waited for, and the `job` tool is answered from that table, in this process.
 *
 * @module
 */
import { dirname, isWithin, join } from "../base/paths.ts";
import {
  answerJobCall,
  type Job,
  type JobEvent,
  jobLauncher,
  JobManager,
  type JobView,
  readJobArgs,
} from "./jobs.ts";
import type { JobCaps } from "./job_owners.ts";
import {
  AuditLog,
  type AuditRecord,
  type CallFacts,
  jobAnswerRecord,
  jobEndRecord,
  jobStartRecord,
  loadAuditKey,
  refusalRecord,
  runRecord,
} from "./audit.ts";
import { type Envelope, failure, type FailureEnvelope, success, withWarnings } from "../contract.ts";
import { type ControlPlane, controlPlane } from "../sandbox/control_plane.ts";
import type { Manifest, ToolSpec } from "../manifest/manifest.ts";
import type { Prepared, PreparedCall } from "../policy/prepared_call.ts";
import { envelopeFromRun } from "../process/run_envelope.ts";
import { protocolEnvelope } from "../process/protocol_envelope.ts";
import { scrubbedEvents, ToolChannel, type ToolEvent } from "../manifest/tool_protocol.ts";
import { QuestionDesk, type QuestionHandlers } from "./tool_questions.ts";
import { preflight } from "../manifest/preflight.ts";
import { loadSchemaEngine, SchemaCompiler } from "../manifest/schema.ts";
import type { ProcessRegistry } from "../process/process_tree.ts";
import { type ApprovedBy, OWN_COMMAND, type Policy } from "../policy/policy.ts";
import { hasSideEffects } from "../manifest/profiles.ts";
import { redactionFor, type Redactor, scrubEnvelope } from "../state/redact.ts";
import { runProcess, type RunResult } from "../process/runner.ts";
import { findProgram, limitWarnings, type SandboxMode } from "../sandbox/sandbox.ts";
import { ensurePrivateDir, prepareDir } from "../state/private_dir.ts";
import { configRoot, stateRoot, workspaceStateDir } from "../state/state.ts";
import { stoppedByUser, userStopped } from "../process/stop.ts";
import {
  FALLBACK_PATH,
  type Launch,
  type LaunchVerdict,
  PROXY_ENV,
  ToolLauncher,
} from "../sandbox/tool_launch.ts";
import { type CallCredential, newPlaceholder } from "../manifest/credentials.ts";
import { ToolFailure } from "../contract/tool_output.ts";
import type { ToolPool } from "../pool/client.ts";
import type { CallDefaults } from "../pool/protocol.ts";
import type { Gateway } from "../gateway/gateway.ts";
import type { ToolDefinition } from "../gateway/pins.ts";
import { CHILD_SPANS, egressAttributes, NO_TRACING, type TraceSpan, type Tracing } from "./tracing.ts";

export { SANDBOX_MODES, type SandboxMode } from "../sandbox/sandbox.ts";
export type { Prepared, PreparedCall } from "../policy/prepared_call.ts";

export { EXECUTOR_DEFAULTS } from "../process/executor_defaults.ts";
import { EXECUTOR_DEFAULTS, outputCapProblem } from "../process/executor_defaults.ts";

/**
 * How an executor runs its tools.
 *
 * @example
 * ```ts
 * import { Executor } from "./executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * const project = await Deno.makeTempDir();
 * if (loaded.ok) {
 *   new Executor({
 *     manifest: loaded.manifest,
 *     env: { PATH: "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" },
 *     cwd: project,
 *     auditDir: null, // or a folder of your own (mode 0700); the CLI's default is the workspace's state folder
 *     defaultTimeoutSec: 10,
 *     sandbox: "require",
 *   });
 * }
 * ```
 */
export interface ExecutorOptions {
  /** The tools this executor runs. */
  readonly manifest: Manifest;
  /** The parent environment: the source of PATH, HOME, passthrough values, and the secrets to redact. */
  readonly env: Readonly<Record<string, string>>;
  /** The tools' working directory. */
  readonly cwd: string;
  /** Used when a tool has no `timeoutSec`. */
  readonly defaultTimeoutSec?: number;
  /** Time between SIGTERM and SIGKILL when a tool is stopped (default {@linkcode EXECUTOR_DEFAULTS}). */
  readonly graceMs?: number;
  /** The most bytes kept of each of stdout and stderr (at most 256 MiB); past it the tool is stopped. */
  readonly maxOutputBytes?: number;
  /** The audit directory, or `null` for no audit log. */
  readonly auditDir: string | null;
  /**
   * The key of the audit log's argument digests (default: read or made at the first record in
   * `<stateRoot(env)>/audit.key`, see {@linkcode loadAuditKey}).
   */
  readonly auditKey?: Uint8Array;
  /** Where the executor reports its own trouble (a failed audit write), once. */
  readonly onWarning?: (message: string) => void;
  /** Told after each audit line is written (a job's end is audited after the job has ended). */
  readonly onAudit?: () => void;
  /** The clock of the audit log's timestamps (tests hold it). */
  readonly clock?: () => Date;
  /**
   * The trees to end when toolgate itself is stopped (SIGINT, SIGTERM): the CLI's commands pass theirs.
   *
   * @ignore The registry's interface is the runner's, not yet part of the library.
   */
  readonly registry?: ProcessRegistry;
  /**
   * Confinement: `auto` (bubblewrap when it works; unconfined only a tool that can neither write nor reach the
   * network), `require` (unavailable without it), `off` (every tool unconfined, as the user).
   */
  readonly sandbox?: SandboxMode;
  /** The bubblewrap program: a name looked up once on the environment's PATH, or a path (default `bwrap`). */
  readonly bwrap?: string;
  /** The protected paths (default: {@linkcode controlPlane} of the manifest and the environment). */
  readonly controlPlane?: ControlPlane;
  /**
   * Keep background jobs (default true): `exec` with `background: true` starts one, the `job` tool reads them.
   * False for a caller that exits when its call ends (`toolgate call`): both then answer `unavailable`.
   */
  readonly jobs?: boolean;
  /** The most bytes of one job log file before it is rotated (default 1 MiB; one older file is kept). */
  readonly jobLogBytes?: number;
  /** The most jobs running at once, per scope and across scopes (default `JOB_CAPS`, `src/run/job_owners.ts`). */
  readonly jobCaps?: Partial<JobCaps>;
  /** Told when a background job starts and when it ends (`serve` prints a line for its operator). */
  readonly onJob?: (event: JobEvent) => void;
  /**
   * The secrets of toolgate's store, by name: a tool that declares one receives it as a variable (before the
   * environment's value of that name), and every value is redacted like an environment secret.
   */
  readonly secrets?: Readonly<Record<string, string>>;
  /**
   * A pool of workers that runs the calls instead (`--executor nats://...`): lookup, preflight and approval stay
   * here, the run, its sandbox and its own audit line happen on a worker, and the envelope comes back unchanged.
   */
  readonly pool?: ToolPool;
  /** Where the calls' spans go (`openTracing` in `src/run/tracing.ts`); default none. Shut down by `close`. */
  readonly tracing?: Tracing;
}

/**
 * Per-call options.
 *
 * @example
 * ```ts
 * import { Executor } from "./executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const envelope = await executor.call("exec", '{"argv":["sleep","60"]}', { signal: AbortSignal.timeout(500) });
 * // { ok: false, kind: "execution_error", cancelled: true, ... } (or unavailable, where it cannot be confined)
 * ```
 */
export interface CallOptions {
  /** Cancels the call and ends the tool's tree. */
  readonly signal?: AbortSignal;
  /**
   * Decides whether {@linkcode Executor.call} runs the call (default {@linkcode OWN_COMMAND}: the caller's own
   * command, approved by definition, as `toolgate call`). A caller that runs calls a model or a client chose passes
   * its `Policy`, as the agent loop and `serve` do; {@linkcode Executor.run} takes a call already decided.
   */
  readonly policy?: Policy;
  /**
   * What approved the call (the policy's verdict, for {@linkcode Executor.run}): a `job` kill that a person asked
   * for or approved answers `killed_by: "user"`, any other `"model"`.
   */
  readonly approvedBy?: ApprovedBy;
  /** Whose background jobs the call starts and sees (an MCP session's own id; default: one shared scope). */
  readonly jobScope?: string;
  /**
   * The limits of this one call, in place of the executor's own: a pool worker runs each call under those of the
   * caller that sent it.
   */
  readonly defaults?: CallDefaults;
  /** The id the call goes by elsewhere (a pool call's, in both the caller's and the worker's audit log). */
  readonly callId?: string;
  /**
   * Secrets the caller keeps for itself, by name (an MCP session's `store_secret` values): a tool that declares
   * one receives it before the store's value and the environment's.
   */
  readonly secrets?: ReadonlyMap<string, string>;
  /** Gets a `toolgate/1` tool's log and progress messages as they arrive. */
  readonly onToolEvent?: (event: ToolEvent) => void;
  /** Who answers a `toolgate/1` tool's questions (absent: nobody; each question is answered with an error). */
  readonly questions?: QuestionHandlers;
  /** The call's span (the caller's, from {@linkcode Executor.tracing}): the run adds its child spans to it. */
  readonly trace?: TraceSpan;
}

/**
 * The limits of one call as a caller shows them (the heartbeat's `elapsed=Ys/Zs`), in seconds.
 *
 * @example
 * ```ts
 * import type { CallLimits } from "./executor.ts";
 * const limits: CallLimits = { timeoutSec: 30, idleTimeoutSec: undefined };
 * ```
 */
export interface CallLimits {
  /** The wall-clock limit; `undefined` when there is none. */
  readonly timeoutSec?: number;
  /** The idle limit, if any. */
  readonly idleTimeoutSec?: number;
}

const encoder = new TextEncoder();

/** The built-in tools the executor treats apart: a background `exec` becomes a job, `job` reads the jobs. */
const EXEC_TOOL = "exec";
const JOB_TOOL = "job";
/** A built-in tool that is answered in toolgate's own process: it starts no program. */
function inProcess(tool: ToolSpec): boolean {
  return tool.builtin === JOB_TOOL;
}

function realPathOrUndefined(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Runs a manifest's tools.
 *
 * @example
 * ```ts
 * import { Executor } from "./executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (loaded.ok) {
 *   const executor = new Executor({ manifest: loaded.manifest, env: Deno.env.toObject(), cwd: Deno.cwd(), auditDir: null });
 *   const envelope = await executor.call("get_time", '{"timezone": "UTC"}');
 * }
 * ```
 */
export class Executor {
  #manifest: Manifest;
  /** The MCP servers' gateway, made by {@linkcode Executor.connectGateway}. */
  #gateway?: Gateway;
  readonly #options: ExecutorOptions;
  readonly #audit?: AuditLog;
  #redact!: Redactor;
  /** The secret values alone (no patterns), taken out of every envelope this executor hands back; none: none. */
  #scrub?: Redactor;
  /** The stored secrets, by name: those of the store at start, and those a person gave since (`store_secret`). */
  readonly #stored: Map<string, string>;
  /** Every stored value this executor has held, a replaced one included: a renewed key is still a secret. */
  readonly #storedValues = new Set<string>();
  readonly #clock: () => Date;
  readonly #workspace: string;
  readonly #controlPlane: ControlPlane;
  readonly #launcher: ToolLauncher;
  /**
   * Compiles the tools' schemas on first use, each once (preflight, and the MCP server's output check).
   *
   * @ignore Typed with ajv's own types: not part of the library.
   */
  readonly schemas: SchemaCompiler = new SchemaCompiler();
  #jobs?: JobManager;

  /**
   * Throws a `SyntaxError` when `TOOLGATE_REDACT` holds a pattern that does not compile, and `Deno.errors.NotFound`
   * when the working directory does not exist.
   */
  constructor(options: ExecutorOptions) {
    const capProblem = options.maxOutputBytes === undefined
      ? undefined
      : outputCapProblem(options.maxOutputBytes);
    if (capProblem !== undefined) {
      throw new RangeError(`maxOutputBytes ${options.maxOutputBytes} ${capProblem}`);
    }
    this.#options = options;
    this.#manifest = options.manifest;
    this.#clock = options.clock ?? (() => new Date());
    this.#workspace = Deno.realPathSync(options.cwd);
    if (options.auditDir !== null) prepareDir(options.auditDir);
    if (options.controlPlane === undefined) {
      // The state and config folders (the audit, the secret store) inside the workspace must exist before any tool
      // runs: the sandbox masks what exists, and a tool must not be the one to make them.
      for (const root of [stateRoot, configRoot]) {
        try {
          const dir = root(options.env);
          if (isWithin(dir, this.#workspace)) prepareDir(dir);
        } catch {
          // No HOME: nothing there to hide.
        }
      }
    }
    const plane = options.controlPlane ?? controlPlane(options.manifest, options.env);
    // An audit folder given by hand is hidden from tools as well, wherever it is.
    const audit = options.auditDir === null ? undefined : realPathOrUndefined(options.auditDir);
    this.#controlPlane = audit === undefined || plane.hidden.some((path) => isWithin(audit, path))
      ? plane
      : { readOnly: plane.readOnly, hidden: [...plane.hidden, audit] };
    this.#launcher = new ToolLauncher({
      manifest: options.manifest,
      env: options.env,
      workspace: this.#workspace,
      controlPlane: this.#controlPlane,
      sandbox: options.sandbox,
      bwrap: options.bwrap,
    });
    this.#stored = new Map(Object.entries(options.secrets ?? {}));
    this.#makeRedactors();
    if (options.auditDir !== null) {
      this.#audit = new AuditLog({
        dir: options.auditDir,
        key: options.auditKey ?? (() => loadAuditKey(options.env)),
        // Through the field: a secret stored during the run is redacted from the next line on.
        redact: (text) => this.#redact(text),
        onError: options.onWarning ?? ((message) => console.error(message)),
        onWritten: options.onAudit,
      });
    }
  }

  /** The manifest whose tools this executor runs (with its MCP servers' tools, once connected). */
  get manifest(): Manifest {
    return this.#manifest;
  }

  /**
   * Starts the manifest's MCP servers (those `names` need, `mcp__SERVER__...`; default all), lists their tools and
   * adds the exposed, pinned ones to {@linkcode Executor.manifest}. Returns one line per server that could not be
   * listed and per withheld tool, for the person.
   *
   * @example
   * ```ts ignore
   * for (const line of await executor.connectGateway()) console.error(`toolgate: ${line}`);
   * ```
   */
  async connectGateway(names?: readonly string[]): Promise<string[]> {
    const servers = this.#options.manifest.servers ?? [];
    if (servers.length === 0) return [];
    const { serverOfName } = await import("../gateway/gateway_tools.ts");
    const wanted = names === undefined
      ? servers.map((server) => server.name)
      : names.flatMap((name) => serverOfName(name) ?? []).filter((name) =>
        servers.some((s) => s.name === name)
      );
    if (wanted.length === 0) return [];
    const lines: string[] = [];
    if (this.#gateway === undefined) {
      const [{ Gateway }, { readPins }] = await Promise.all([
        import("../gateway/gateway.ts"),
        import("../gateway/pins.ts"),
      ]);
      let pins = {};
      try {
        pins = readPins(stateRoot(this.#options.env), Deno.realPathSync(this.#options.manifest.path));
      } catch (error) {
        lines.push(`the pinned MCP tool definitions cannot be read: ${(error as Error).message}`);
      }
      this.#gateway = new Gateway({
        servers,
        pins,
        launcher: new ToolLauncher({
          // The gateway pins its servers' tools; the manifest's trust covers the servers' commands.
          manifest: { ...this.#options.manifest, pinned: undefined },
          env: this.#options.env,
          workspace: this.#workspace,
          controlPlane: this.#controlPlane,
          sandbox: this.#options.sandbox,
          bwrap: this.#options.bwrap,
        }),
        env: this.#options.env,
        workspace: this.#workspace,
        secret: (name) => this.#stored.get(name) ?? this.#options.env[name],
        registry: this.#options.registry,
        graceMs: this.#options.graceMs ?? EXECUTOR_DEFAULTS.graceMs,
      });
    }
    const gateway = this.#gateway;
    await gateway.refresh(wanted);
    for (const name of wanted) {
      const problem = gateway.problems.get(name);
      if (problem !== undefined) lines.push(`MCP server ${JSON.stringify(name)} cannot be used: ${problem}`);
    }
    for (const [name, reason] of gateway.withheld) {
      if (!wanted.includes(serverOfName(name) ?? "")) continue;
      lines.push(
        `${name} is withheld: its definition is ${reason === "new" ? "not trusted yet" : "changed"} ` +
          "(toolgate trust shows it)",
      );
    }
    const own = this.#options.manifest.tools;
    const tools = [...own, ...gateway.tools.filter((tool) => !own.some((t) => t.name === tool.name))];
    this.#manifest = Object.freeze({
      ...this.#options.manifest,
      tools: Object.freeze(tools),
      byName: new Map(tools.map((tool) => [tool.name, tool])),
    });
    return lines;
  }

  /**
   * The definitions of the tools MCP server `server` exposes now, as it gives them (`trust` pins them); the
   * gateway must be connected (`connectGateway`).
   */
  serverDefinitions(server: string): Promise<ToolDefinition[]> {
    if (this.#gateway === undefined) throw new Error("the MCP gateway is not connected");
    return this.#gateway.definitions(server);
  }

  /**
   * The redactors from every secret value: the environment's secret variables (by name, or named in
   * `TOOLGATE_REDACT`), the declared secret names' values, and the stored secrets. A passthrough variable is not
   * a secret for being passed (`TZ` shows as it is).
   */
  #makeRedactors(): void {
    const { env, manifest } = this.#options;
    const declared = [
      ...manifest.tools.flatMap((tool) => [...tool.secrets, ...tool.credentials.map((c) => c.secret)]),
      ...(manifest.servers ?? []).flatMap((server) => server.secrets),
    ];
    for (const value of this.#stored.values()) this.#storedValues.add(value);
    ({ redact: this.#redact, scrub: this.#scrub } = redactionFor(env, declared, this.#storedValues));
  }

  /**
   * Redacts text the same way the audit log does, with every secret known so far (one `store_secret` gave in this
   * run included): for debug output, transcripts and `--output jsonl`.
   */
  redact(text: string): string {
    return this.#redact(text);
  }

  /**
   * Takes a secret a person just gave (`store_secret`) for the rest of the run: the tools that declare `name`
   * receive it from the next call on, and its value is redacted everywhere from now on.
   *
   * @example
   * ```ts
   * // executor.useSecret("GITHUB_TOKEN", value); // after the store has it
   * ```
   */
  useSecret(name: string, value: string): void {
    this.#stored.set(name, value);
    this.#makeRedactors();
  }

  /**
   * Masks `value` everywhere from now on, as a secret, without giving it to any tool: a value one MCP session keeps
   * for itself (its calls pass it in {@linkcode CallOptions.secrets}).
   */
  maskSecret(value: string): void {
    this.#storedValues.add(value);
    this.#makeRedactors();
  }

  /** Where this executor's callers open each call's span (nothing is traced without the OTEL variables). */
  get tracing(): Tracing {
    return this.#options.tracing ?? NO_TRACING;
  }

  /** The environment this executor was given (where toolgate's state and secret store are). */
  get environment(): Readonly<Record<string, string>> {
    return this.#options.env;
  }

  /**
   * Audits a call a caller answered in its own process (`store_secret`: no program runs) and returns its envelope
   * as every envelope leaves the executor: with secret values taken out.
   */
  async recordInProcess<E extends Envelope>(
    tool: string,
    argsText: string,
    envelope: E,
    facts: Readonly<Record<string, string | boolean>> = {},
  ): Promise<E> {
    await this.#auditUnrun(tool, argsText, envelope, facts);
    return this.#forCaller(envelope);
  }

  /** The secret names some tool of the manifest declares (bound credentials' included), in manifest order. */
  get declaredSecrets(): string[] {
    return [
      ...new Set(
        this.manifest.tools.flatMap((tool) => [...tool.secrets, ...tool.credentials.map((c) => c.secret)]),
      ),
    ];
  }

  /** The first secret `tool` declares that is neither the caller's, stored, nor in the environment. */
  #missingSecret(tool: ToolSpec, own?: ReadonlyMap<string, string>): string | undefined {
    return [...tool.secrets, ...tool.credentials.map((c) => c.secret)].find((name) =>
      !own?.has(name) && !this.#stored.has(name) && this.#options.env[name] === undefined
    );
  }

  /** The answer to a call whose declared secret is nowhere: nothing starts, and the caller learns which one. */
  #noSecret(call: PreparedCall, name: string): Promise<FailureEnvelope> {
    return this.refuse(
      call,
      failure(
        "unavailable",
        `The tool needs the secret ${name}, which is neither in toolgate's secret store nor in its environment; ` +
          `the tool was not run. The user can store it (toolgate secrets set ${name}, or store_secret), then retry.`,
        { tool: call.tool.name, credential: name },
      ),
    );
  }

  /** Lookup and preflight. A failure is audited and comes back as the envelope to answer with. */
  async prepare(name: string, argsText: string): Promise<Prepared> {
    const tool = this.manifest.byName.get(name);
    const unexposed = tool === undefined ? this.#unexposed(name) : undefined;
    if (unexposed !== undefined) {
      await this.#auditUnrun(name, argsText, unexposed);
      return { ok: false, envelope: this.#forCaller(unexposed) };
    }
    if (!tool) {
      // No "did you mean": a list of near names invites the model to invent tools.
      const envelope = failure("tool_not_found", `There is no tool named ${JSON.stringify(name)}.`, {
        tool: name,
      });
      await this.#auditUnrun(name, argsText, envelope);
      return { ok: false, envelope: this.#forCaller(envelope) };
    }
    // The schema engine loads at the first call that needs it: start-up does not pay for it.
    if (tool.schema !== undefined) await loadSchemaEngine();
    const verdict = preflight(tool, argsText, this.schemas);
    if (!verdict.ok) {
      await this.#auditUnrun(name, argsText, verdict.envelope);
      return { ok: false, envelope: this.#forCaller(verdict.envelope) };
    }
    return { ok: true, call: { tool, args: verdict.args, argsText } };
  }

  /** The answer to a gateway tool that is withheld, or whose server cannot be used; `undefined` otherwise. */
  #unexposed(name: string): FailureEnvelope | undefined {
    return this.#gateway?.refusal(name);
  }

  /** Records that a prepared call was not run (denied, rejected by policy) and returns the envelope. */
  async refuse(call: PreparedCall, envelope: FailureEnvelope): Promise<FailureEnvelope> {
    await this.#auditUnrun(call.tool.name, call.argsText, envelope);
    return this.#forCaller(envelope);
  }

  /** Runs a prepared call to its envelope, and audits it. */
  async run(call: PreparedCall, options: CallOptions = {}): Promise<Envelope> {
    const { tool } = call;
    if (tool.upstream !== undefined) return await this.#runUpstream(call, options);
    if (this.#options.pool !== undefined) return await this.#runInPool(this.#options.pool, call, options);
    if (inProcess(tool)) return await this.#answerJob(call, options);
    const missing = this.#missingSecret(tool, options.secrets);
    if (missing !== undefined) return await this.#noSecret(call, missing);
    if (tool.builtin === EXEC_TOOL && call.args.background === true) {
      return await this.#startJob(call, options);
    }
    const env = this.#toolEnv(tool, options.secrets);
    const defaults = this.#defaults(options);
    const { timeoutMs, idleTimeoutMs } = this.#processLimits(tool, defaults.timeoutSec);
    const { maxOutputBytes, graceMs } = defaults;
    const started = this.#clock();
    let result: RunResult | undefined;
    let envelope: Envelope;
    options.trace?.arguments(call.argsText, (text) => this.#redact(text));
    const launch = await this.#traced(
      options,
      () => this.#launcher.launch(tool, undefined, this.#credentials(tool, options.secrets)),
    );
    if (!launch.ok) {
      envelope = launch.envelope;
    } else {
      // A toolgate/1 tool's stdout is its channel: read as it comes, and the tool cut off when it breaks it.
      const cutOff = new AbortController();
      // A tool that may ask keeps its stdin open after the arguments line: its answers come there.
      let write: (bytes: Uint8Array) => Promise<boolean> = () => Promise.resolve(false);
      const desk = tool.asks.length === 0 ? undefined : new QuestionDesk({
        tool,
        handlers: options.questions,
        scrub: this.#scrub,
        write: (bytes) => write(bytes),
        onAnswered: (id) => channel?.answered(id),
      });
      const channel = tool.protocol === undefined ? undefined : new ToolChannel({
        tool: tool.name,
        maxBytes: maxOutputBytes,
        onEvent: options.onToolEvent && scrubbedEvents(options.onToolEvent, this.#scrub),
        onViolation: () => cutOff.abort(),
        asks: tool.asks,
        onQuestion: desk && ((question) => desk.ask(question)),
      });
      result = await runProcess({
        program: launch.program,
        args: launch.args,
        env: launch.unregister ? { ...env, ...PROXY_ENV, ...launch.env } : env,
        cwd: this.#workspace,
        // A protocol tool reads its arguments as the first line of stdin.
        stdin: encoder.encode(JSON.stringify(call.args) + (channel ? "\n" : "")),
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
        registry: this.#options.registry,
        endsItsTree: launch.confined,
        launcher: this.#launcher.groupLauncher(launch),
      });
      channel?.end();
      desk?.close();
      // The call's tree is gone: its egress token and its cgroup slot are free for the next call.
      this.#launcher.release(launch);
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
          scrub: this.#scrub,
          idleTimeoutMs,
          killedBy: stoppedByUser(options.signal) ? "user" : undefined,
        }),
        [...launch.envelopeWarnings, ...refusedRequests(launch)],
      );
    }
    await this.#write({
      ...runRecord(await this.#facts(started, tool.name, call.argsText), {
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
    return this.#forCaller(envelope);
  }

  /**
   * A call of an MCP server's tool, through the gateway: the server started if need be, cancelled upstream with
   * `signal`, the answer an envelope; the audit line names the server and its tool.
   */
  async #runUpstream(call: PreparedCall, options: CallOptions): Promise<Envelope> {
    const { tool } = call;
    const upstream = tool.upstream!;
    const { timeoutMs } = this.#processLimits(tool, this.#defaults(options).timeoutSec);
    const started = this.#clock();
    const clock = performance.now();
    const envelope = this.#gateway === undefined
      ? failure("unavailable", "The MCP gateway is not connected.", { tool: tool.name })
      : await this.#gateway.call(tool, call.args, {
        signal: options.signal,
        timeoutMs,
        meta: options.trace?.carrier,
      });
    await this.#write({
      ...jobAnswerRecord(await this.#facts(started, tool.name, call.argsText), {
        ms: Math.round(performance.now() - clock),
        envelope,
      }),
      server: upstream.server,
      upstream_tool: upstream.tool,
      profile: tool.profile.name,
      cancelled: options.signal?.aborted ? true : undefined,
      approved_by: options.approvedBy,
    });
    return this.#forCaller(envelope);
  }

  /** The limits of a call: the ones it brings (a pool caller's), else this executor's. */
  #defaults(options: CallOptions): CallDefaults {
    return options.defaults ?? {
      timeoutSec: this.#options.defaultTimeoutSec ?? EXECUTOR_DEFAULTS.timeoutSec,
      graceMs: this.#options.graceMs ?? EXECUTOR_DEFAULTS.graceMs,
      maxOutputBytes: this.#options.maxOutputBytes ?? EXECUTOR_DEFAULTS.maxOutputBytes,
    };
  }

  /**
   * A call run by the pool: handed over with this executor's limits, waited for (a worker must take it within its
   * timeout), and audited here too (the worker's own line holds the run; both carry the call's id). Background jobs
   * stay with the process that starts them, so a pool takes none.
   */
  async #runInPool(pool: ToolPool, call: PreparedCall, options: CallOptions): Promise<Envelope> {
    const { tool } = call;
    if (inProcess(tool) || (tool.builtin === EXEC_TOOL && call.args.background === true)) {
      return await this.refuse(
        call,
        failure(
          "unavailable",
          `Background jobs are not available: this toolgate's calls run on the worker pool at ${pool.shown}, ` +
            "and a job belongs to the process that starts it; run the command in the foreground (timeout_ms up " +
            "to an hour).",
          { tool: tool.name, retryable: false },
        ),
      );
    }
    const defaults = this.#defaults(options);
    const started = this.#clock();
    const clock = performance.now();
    const answer = await pool.run({
      tool: tool.name,
      readOnly: tool.readOnly,
      argsText: call.argsText,
      defaults,
      startWithinMs: (this.limits(call).timeoutSec ?? defaults.timeoutSec) * 1000,
      signal: options.signal,
      trace: options.trace?.carrier,
    });
    const envelope = answer.envelope;
    await this.#write({
      ...jobAnswerRecord(await this.#facts(started, tool.name, call.argsText), {
        ms: Math.round(performance.now() - clock),
        envelope,
      }),
      cancelled: options.signal?.aborted ? true : undefined,
      pool: pool.shown,
      worker: answer.worker,
      call_id: answer.id,
    });
    return this.#forCaller(envelope);
  }

  /** Ends the background jobs and lets go of the pool: a caller calls it before it exits. */
  async close(): Promise<void> {
    await this.#gateway?.close();
    await this.endJobs();
    await this.#options.pool?.close();
    await this.#options.tracing?.shutdown();
  }

  /** A tool's launch (its confinement's start) as a child span of the call's. */
  #traced(options: CallOptions, launch: () => Promise<LaunchVerdict>): Promise<LaunchVerdict> {
    return options.trace ? options.trace.child(CHILD_SPANS.confinement, launch) : launch();
  }

  /**
   * What a person should know before any tool runs, once, at start: tools that run unconfined (and why), limits
   * that cannot hold here, a workspace inside toolgate's own files where a tool could write. Empty when there is
   * nothing to say. `names`: the tools this run may call, when the caller knows (`call`); by default every tool.
   *
   * @example
   * ```ts
   * import { Executor } from "./executor.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
   * for (const note of await executor.startNotes()) console.error(`toolgate: warning: ${note}`);
   * ```
   */
  async startNotes(names?: readonly string[]): Promise<string[]> {
    const notes: string[] = [];
    // The pool's workers run the tools, under their own sandbox: there is nothing to say of this machine's.
    if (this.#options.pool !== undefined) return notes;
    const tools = names === undefined
      ? this.manifest.tools
      : this.manifest.tools.filter((tool) => names.includes(tool.name));
    const inside = this.#controlPlane.readOnly.find((path) => isWithin(this.#workspace, path));
    // Only a tool that could write there loses anything: a read-only one (the README's first call) works as well.
    if (inside !== undefined && tools.some((tool) => tool.profile.write.length > 0)) {
      notes.push(
        `the workspace ${this.#workspace} lies inside ${inside}, which belongs to toolgate: tools cannot change ` +
          `anything there; run toolgate from your project's folder (or give --cwd)`,
      );
    }
    const mode = this.#options.sandbox ?? "auto";
    if (mode === "off") {
      notes.push("the sandbox is off (--sandbox off): every tool runs unconfined, as you");
      return notes;
    }
    // A tool answered in toolgate's own process is never confined or unconfined: it starts nothing.
    const processes = tools.filter((tool) => !inProcess(tool));
    if (processes.length === 0) return notes;
    const support = await this.#launcher.support();
    if (support.ok) return [...notes, ...limitWarnings(support)];
    if (mode === "require") return notes;
    const loose = processes.filter((tool) => !hasSideEffects(tool.profile)).map((tool) => tool.name);
    const strict = processes.length - loose.length;
    notes.push(
      `tools cannot be confined here (${support.reason}): ` +
        (loose.length > 0 ? `${loose.join(", ")} will run unconfined, as you; ` : "") +
        (strict > 0
          ? `${strict} tool${strict === 1 ? "" : "s"} that can write or reach the network will not run; `
          : "") +
        "pass --sandbox require to run nothing unconfined, or --sandbox off to run every tool unconfined",
    );
    return notes;
  }

  /**
   * The whole pipeline: lookup, preflight, the approval policy (`options.policy`, by default the caller's own
   * command), run. A call the policy refuses is audited and answered with its refusal.
   *
   * @example
   * ```ts
   * import { Policy } from "../policy/policy.ts";
   * // const envelope = await executor.call("get_time", '{"timezone":"UTC"}');
   * // const refused = await executor.call("fs_remove", '{"path":"src"}', { policy: new Policy() }); // rejected
   * ```
   */
  async call(name: string, argsText: string, options: CallOptions = {}): Promise<Envelope> {
    const prepared = await this.prepare(name, argsText);
    if (!prepared.ok) return prepared.envelope;
    const verdict = await (options.policy ?? OWN_COMMAND).decide(prepared.call, { signal: options.signal });
    if (!verdict.approved) return await this.refuse(prepared.call, verdict.envelope);
    return await this.run(prepared.call, { ...options, approvedBy: verdict.by });
  }

  /**
   * The limits of a prepared call as a caller shows them: the tool's (for `exec`, the smaller of the tool's and the
   * call's own `timeout_ms`), in seconds; a background `exec` answers at once, and a `job` wait lasts its
   * `timeout_ms`.
   *
   * @example
   * ```ts
   * import { Executor } from "./executor.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
   * const prepared = await executor.prepare("exec", '{"argv":["make"],"timeout_ms":600000}');
   * if (prepared.ok) executor.limits(prepared.call).timeoutSec; // 600
   * ```
   */
  limits(call: PreparedCall): CallLimits {
    const { tool, args } = call;
    const seconds = (value: unknown, fallback: number) =>
      (typeof value === "number" ? value : fallback) / 1000;
    if (tool.builtin === JOB_TOOL) {
      return { timeoutSec: args.action === "wait" ? seconds(args.timeout_ms, 30_000) : undefined };
    }
    if (tool.builtin === EXEC_TOOL && args.background === true) return {};
    const { timeoutMs, idleTimeoutMs } = this.#processLimits(tool);
    let timeoutSec = Number.isFinite(timeoutMs) ? timeoutMs / 1000 : undefined;
    let idleTimeoutSec = idleTimeoutMs === undefined ? undefined : idleTimeoutMs / 1000;
    if (tool.builtin === EXEC_TOOL) {
      timeoutSec = Math.min(timeoutSec ?? Infinity, seconds(args.timeout_ms, 30_000));
      const idle = seconds(args.idle_timeout_ms, 0);
      if (idle > 0) idleTimeoutSec = Math.min(idleTimeoutSec ?? Infinity, idle);
    }
    return { timeoutSec, idleTimeoutSec };
  }

  /** How many background jobs run now. */
  get runningJobs(): number {
    return this.#jobs?.running ?? 0;
  }

  /** Every background job still remembered, of every scope: for the operator (the console), never a model. */
  jobList(): JobView[] {
    return (this.#jobs?.list() ?? []).map((job) => ({
      id: job.id,
      scope: job.scope,
      snapshot: (tailLines: number) => job.snapshot(tailLines),
    }));
  }

  /** Stops the job `id` of `scope` as its user (`killed_by: "user"`); false when there is no such running job. */
  stopJob(id: string, scope: string): boolean {
    const job = this.#jobs?.lookup(id, scope);
    if (job === undefined || job.state !== "running") return false;
    job.kill("user");
    return true;
  }

  /**
   * Ends a scope's background jobs (an MCP session that closed, was deleted or expired): their trees end with
   * `killed_by: "session"`, and no job starts for that scope any more. Resolves once they are gone.
   */
  async endJobScope(scope: string): Promise<void> {
    // Made if need be (nothing on disk): a start under way for this scope then finds it ended.
    await this.#jobTable()?.endScope(scope);
  }

  /**
   * Ends every background job's tree and waits for them: a caller calls it before it exits (jobs outlive a call,
   * never toolgate). A registry's `endAll` (SIGINT, SIGTERM, SIGHUP) ends them too.
   */
  async endJobs(): Promise<void> {
    await this.#jobs?.endAll();
  }

  /** The tool's limits in milliseconds: its `timeoutSec` (0: none) or the caller's default, its `idleTimeoutSec`. */
  #processLimits(
    tool: ToolSpec,
    defaultSec = this.#options.defaultTimeoutSec ?? EXECUTOR_DEFAULTS.timeoutSec,
  ): { timeoutMs: number; idleTimeoutMs?: number } {
    const timeoutSec = tool.timeoutSec ?? defaultSec;
    return {
      timeoutMs: timeoutSec === 0 ? Infinity : timeoutSec * 1000,
      idleTimeoutMs: tool.idleTimeoutSec === undefined ? undefined : tool.idleTimeoutSec * 1000,
    };
  }

  /** The job table of this executor, made at the first job (its log folder is toolgate's own, per workspace). */
  #jobTable(): JobManager | undefined {
    if (this.#options.jobs === false) return undefined;
    if (this.#jobs !== undefined) return this.#jobs;
    let root: string;
    try {
      root = stateRoot(this.#options.env);
    } catch {
      return undefined;
    }
    return this.#jobs = new JobManager({
      dir: join(workspaceStateDir(root, this.#workspace), "jobs"),
      prepareDir: (dir) => ensurePrivateDir(dir, dirname(root)),
      registry: this.#options.registry,
      maxLogBytes: this.#options.jobLogBytes,
      maxRunning: this.#options.jobCaps?.perOwner,
      maxRunningTotal: this.#options.jobCaps?.total,
      onEvent: this.#options.onJob,
    });
  }

  /** Refuses a background `exec` or a `job` call where this executor keeps no jobs, saying why. */
  #noJobs(call: PreparedCall): Promise<FailureEnvelope> {
    const why = this.#options.jobs === false
      ? "this toolgate runs one call and exits (`toolgate call`), so a background job would end with it; run " +
        "the command in the foreground (timeout_ms up to an hour), or from the agent loop or `toolgate serve`, " +
        "which keep their jobs while they run"
      : "toolgate has no state folder for job logs here (neither XDG_STATE_HOME nor HOME is set)";
    return this.refuse(
      call,
      failure("unavailable", `Background jobs are not available: ${why}.`, {
        tool: call.tool.name,
        retryable: false,
      }),
    );
  }

  /** A `job` call, answered from the job table in this process (no program runs), and audited. */
  async #answerJob(call: PreparedCall, options: CallOptions): Promise<Envelope> {
    const jobs = this.#jobTable();
    if (jobs === undefined) return await this.#noJobs(call);
    const started = this.#clock();
    const clock = performance.now();
    const envelope = await answerJobCall(jobs, call.args, {
      scope: options.jobScope ?? "",
      signal: options.signal,
      byPerson: options.approvedBy === "person" || options.approvedBy === "own-command" ||
        options.approvedBy === "console",
      graceMs: this.#options.graceMs ?? EXECUTOR_DEFAULTS.graceMs,
    });
    await this.#write(jobAnswerRecord(await this.#facts(started, call.tool.name, call.argsText), {
      ms: performance.now() - clock,
      envelope,
      job: typeof call.args.job_id === "string" ? call.args.job_id : undefined,
    }));
    return envelope;
  }

  /**
   * A background `exec`: its arguments checked as exec checks them, then its program launched the way any call is
   * (the exec tool's profile: bwrap, cgroups, limits) and handed to the job table, which answers as soon as it
   * runs. The start and the end are audited.
   */
  async #startJob(call: PreparedCall, options: CallOptions): Promise<Envelope> {
    const { tool } = call;
    const jobs = this.#jobTable();
    if (jobs === undefined) return await this.#noJobs(call);
    if (options.signal?.aborted) {
      // Stopped before its turn came: no job starts behind a stop.
      const message = "The call was stopped before the job started; nothing ran.";
      return await this.refuse(
        call,
        stoppedByUser(options.signal)
          ? userStopped(tool.name, {}, message)
          : failure("execution_error", message, { tool: tool.name, metadata: { cancelled: true } }),
      );
    }
    const env = this.#toolEnv(tool, options.secrets);
    delete env.TOOLGATE_PROTECTED;
    let args;
    try {
      args = readJobArgs(call.args, {
        workspace: this.#workspace,
        hidden: this.#controlPlane.hidden,
        path: env.PATH,
      });
    } catch (error) {
      if (!(error instanceof ToolFailure)) throw error;
      return await this.refuse(call, { ...error.toEnvelope(), tool: tool.name });
    }
    const sh = findProgram("sh", "/bin:/usr/bin") ?? "/bin/sh";
    const [program, ...programArgs] = jobLauncher(sh, args.cwdPath, args.argv);
    const started = this.#clock();
    // A job carries the tool's bound credentials as a foreground call does: placeholders, the CA bundle.
    const launch = await this.#traced(options, () =>
      this.#launcher.launch(
        tool,
        { program, args: programArgs, files: [] },
        this.#credentials(tool, options.secrets),
      ));
    let envelope: Envelope;
    let job: Job | undefined;
    let result: RunResult | undefined;
    if (!launch.ok) {
      envelope = launch.envelope;
    } else {
      const release = () => this.#launcher.release(launch);
      const outcome = await jobs.start({
        scope: options.jobScope ?? "",
        command: args.command,
        cwd: args.cwd,
        request: {
          program: launch.program,
          args: launch.args,
          env: { ...env, ...args.env, ...(launch.unregister ? { ...PROXY_ENV, ...launch.env } : {}) },
          cwd: args.cwdPath,
          stdin: encoder.encode(args.stdin),
          timeoutMs: args.timeoutMs,
          idleTimeoutMs: args.idleTimeoutMs,
          graceMs: this.#options.graceMs ?? EXECUTOR_DEFAULTS.graceMs,
          endsItsTree: launch.confined,
          launcher: this.#launcher.groupLauncher(launch),
        },
        onEnd: (ended, run) => {
          release();
          void this.#auditJobEnd(call, ended, run, launch);
        },
      });
      if (outcome.ok) {
        job = outcome.job;
        envelope = success(
          { job_id: job.id, pid: job.pid, log_file: job.logFile, cwd: args.cwd, background: true },
          { tool: tool.name, warnings: [...launch.envelopeWarnings, ...args.warnings] },
        );
      } else {
        release();
        result = outcome.result;
        envelope = outcome.envelope !== undefined
          ? { ...outcome.envelope, tool: tool.name }
          : envelopeFromRun(outcome.result!, {
            tool: tool.name,
            program: args.argv[0],
            timeoutMs: args.timeoutMs,
            maxOutputBytes: 0,
          });
      }
    }
    await this.#write({
      ...jobStartRecord(await this.#facts(started, tool.name, call.argsText), {
        argv: [tool.program, ...tool.args],
        result,
        envKeys: Object.keys(env),
        envelope,
        job,
        launch: launch.ok ? launch : undefined,
        profile: tool.profile.name,
      }),
      approved_by: options.approvedBy,
    });
    return envelope;
  }

  /** The audit line of a job's end: how it ended and how much it printed. */
  async #auditJobEnd(call: PreparedCall, job: Job, run: RunResult, launch: Launch): Promise<void> {
    await this.#write(jobEndRecord(await this.#facts(this.#clock(), call.tool.name, call.argsText), {
      argv: [call.tool.program, ...call.tool.args],
      run,
      job,
      launch,
    }));
  }

  /**
   * The child's whole environment: PATH, HOME, and the tool's passthrough names that are set; a built-in tool
   * also learns the control plane, which its file operations refuse to touch even when it runs unconfined.
   */
  #toolEnv(tool: ToolSpec, own?: ReadonlyMap<string, string>): Record<string, string> {
    const parent = this.#options.env;
    const env: Record<string, string> = { PATH: parent.PATH ?? FALLBACK_PATH };
    if (parent.HOME !== undefined) env.HOME = parent.HOME;
    for (const name of tool.envPassthrough) if (parent[name] !== undefined) env[name] = parent[name];
    // A declared secret: the caller's own first (an MCP session's), the store's, then the environment's (the call
    // was refused when none).
    for (const name of tool.secrets) {
      const value = own?.get(name) ?? this.#stored.get(name) ?? parent[name];
      if (value !== undefined) env[name] = value;
    }
    if (tool.builtin !== undefined) env.TOOLGATE_PROTECTED = JSON.stringify(this.#controlPlane);
    return env;
  }

  /**
   * The call's bound credentials: each secret's value (as `#toolEnv` finds one) with a placeholder new for this
   * call; the tool sees only the placeholder, the egress proxy swaps it.
   */
  #credentials(tool: ToolSpec, own?: ReadonlyMap<string, string>): CallCredential[] {
    return tool.credentials.flatMap((binding) => {
      const value = own?.get(binding.secret) ?? this.#stored.get(binding.secret) ??
        this.#options.env[binding.secret];
      return value === undefined || value === "" ? [] : [{ binding, value, placeholder: newPlaceholder() }];
    });
  }

  /**
   * Every envelope this executor hands back passes here: the values of secret variables (a passthrough variable a
   * tool printed, a key in an error) never reach a model or an MCP client, whichever caller asked.
   */
  #forCaller<E extends Envelope>(envelope: E): E {
    return this.#scrub ? scrubEnvelope(envelope, this.#scrub) : envelope;
  }

  /** What every audit line of a call holds: when, which tool, where (default the workspace), the arguments' facts. */
  async #facts(when: Date, tool: string, argsText: string, cwd = this.#workspace): Promise<CallFacts> {
    const { argsBytes, argsHmac } = await this.#audit?.argsFacts(argsText) ??
      { argsBytes: 0, argsHmac: null };
    return { ts: when.toISOString(), tool, cwd, argsBytes, argsHmac };
  }

  /** The audit line of a call that started no program: refused, or answered in this process. */
  async #auditUnrun(
    name: string,
    argsText: string,
    envelope: Envelope,
    facts: Readonly<Record<string, string | boolean>> = {},
  ): Promise<void> {
    if (!this.#audit) return;
    await this.#write({
      ...refusalRecord(await this.#facts(this.#clock(), name, argsText, this.#options.cwd), envelope),
      ...facts,
    });
  }

  async #write(record: AuditRecord): Promise<void> {
    if (this.#audit) await this.#audit.write(record);
  }
}

/** What the model is told of requests the egress proxy refused for a credential's placeholder. */
function refusedRequests(launch: Launch): string[] {
  return (launch.egress ?? []).flatMap((decision) =>
    decision.reason === undefined
      ? []
      : [`toolgate's egress proxy refused a request to ${decision.host}:${decision.port}: ${decision.reason}`]
  );
}
