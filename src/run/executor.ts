/**
 * The executor: the one pipeline behind every caller (the CLI's `call`, the agent loop, the MCP server), so they
 * cannot drift. lookup -> preflight -> (the caller's approval) -> run -> envelope -> audit; every envelope handed
 * back has the values of secret variables taken out. This module is the orchestrator: it wires the shared state
 * (src/run/call_context.ts) and sends each call to the step that runs it. The run step goes, in this order, to
 * the gateway (an MCP server's tool, src/run/gateway_link.ts), the pool (src/run/pool_call.ts), the job table (a
 * `job` call or a background `exec`, src/run/background_jobs.ts), or the foreground (src/run/foreground.ts).
 * Not here: the options' types (src/run/call_options.ts), secrets (src/run/call_secrets.ts), the audit lines
 * (src/run/audit_trail.ts), limits (src/run/call_limits.ts), the start notes (src/run/start_notes.ts).
 *
 * One piece: the pipeline's steps, in their order, are this module; each step's work lives in the module it names.
 *
 * @module
 */
import { type Envelope, failure, type FailureEnvelope } from "../contract.ts";
import type { Manifest, ToolSpec } from "../manifest/manifest_types.ts";
import type { ToolDefinition } from "../manifest/pins.ts";
import type { LogLevel } from "../manifest/tool_messages.ts";
import { preflight } from "../manifest/preflight.ts";
import { SchemaCompiler } from "../manifest/schema.ts";
import { OWN_COMMAND } from "../policy/policy.ts";
import type { Prepared, PreparedCall } from "../policy/prepared_call.ts";
import { EXECUTOR_DEFAULTS, outputCapProblem } from "../process/executor_defaults.ts";
import { BackgroundJobs } from "./background_jobs.ts";
import { inProcess, isBackgroundExec } from "./builtins.ts";
import { type CallContext, callContext } from "./call_context.ts";
import type { AuditTrail } from "./audit_trail.ts";
import type { CallSecrets } from "./call_secrets.ts";
import { shownLimits } from "./call_limits.ts";
import type { CallLimits, CallOptions, ExecutorOptions } from "./call_options.ts";
import { runForeground } from "./foreground.ts";
import { GatewayLink } from "./gateway_link.ts";
import { OfferLink } from "./offer_link.ts";
import type { JobView } from "./jobs.ts";
import type { Job } from "./job.ts";
import { runInPool } from "./pool_call.ts";
import { startNotes } from "./start_notes.ts";
import { NO_TRACING, type Tracing } from "./tracing.ts";

// The executor's face, as it stood before the split: its importers take these from here.

/**
 * Runs a manifest's tools.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Executor } from "./executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: Deno.env.toObject(), cwd: Deno.cwd(), auditDir: null });
 * const envelope = await executor.call("get_time", '{"timezone": "UTC"}');
 * assert.ok(envelope.ok);
 * assert.equal(envelope.tool, "get_time");
 * ```
 */
export class Executor {
  #manifest: Manifest;
  /** The manifest's own tools' manifest: the one given, or the one a re-trust put in its place. */
  #own: Manifest;
  /** The gateway's exposed tools, as last listed (kept when the own tools are replaced). */
  #upstream: readonly ToolSpec[] = [];
  readonly #options: ExecutorOptions;
  readonly #context: CallContext;
  readonly #secrets: CallSecrets;
  readonly #trail: AuditTrail;
  /** The MCP servers' gateway, opened by {@linkcode Executor.connectGateway}. */
  readonly #gateway: GatewayLink;
  /**
   * What the manifest's MCP servers offer besides their tools (resources, prompts, completions), each read audited
   * and cleared of secrets as a call is; answered once the gateway is connected.
   */
  readonly offers: OfferLink;
  readonly #jobs: BackgroundJobs;
  /** The runs under way, each until its envelope is made and its line written. */
  readonly #running = new Set<Promise<Envelope>>();
  /**
   * Compiles the tools' schemas on first use, each once (preflight, and the MCP server's output check).
   *
   * @ignore Typed with ajv's own types: not part of the library.
   */
  readonly schemas: SchemaCompiler = new SchemaCompiler();

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
    this.#own = options.manifest;
    this.#context = callContext(options, (call, envelope) => this.refuse(call, envelope));
    ({ secrets: this.#secrets, trail: this.#trail } = this.#context);
    this.#gateway = new GatewayLink(this.#context, (tools) => {
      this.#addUpstream(tools);
      this.#options.onToolsChanged?.();
    });
    this.#jobs = new BackgroundJobs(this.#context);
    this.offers = new OfferLink(this.#context, () => this.#gateway.offers);
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
   * @example Not run as a doc test: it starts the manifest's MCP servers.
   * ```ts ignore
   * for (const line of await executor.connectGateway()) console.error(`toolgate: ${line}`);
   * ```
   */
  async connectGateway(names?: readonly string[]): Promise<string[]> {
    const { lines, tools: upstream } = await this.#gateway.connect(names);
    if (upstream !== undefined) this.#addUpstream(upstream);
    return lines;
  }

  /** The manifest's own tools and the gateway's exposed ones, as {@linkcode Executor.manifest}. */
  #addUpstream(upstream: readonly ToolSpec[]): void {
    this.#upstream = upstream;
    const own = this.#own.tools;
    const tools = [...own, ...upstream.filter((tool) => !own.some((t) => t.name === tool.name))];
    this.#manifest = Object.freeze({
      ...this.#own,
      tools: Object.freeze(tools),
      byName: new Map(tools.map((tool) => [tool.name, tool])),
    });
  }

  /**
   * Puts `next`'s own tools in place of this executor's (`serve`, once the user trusted its manifest again and it
   * needs nothing this process was not granted): the next lookup finds them, the MCP servers' tools stay, and the
   * launcher holds `next`'s pins. A call already prepared runs with the tool it was prepared with, and a background
   * job goes on. The manifest must be the same file with the same MCP servers (the caller checks both).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Executor } from "./executor.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
   * const tools = loaded.manifest.tools.filter((tool) => tool.name !== "get_time");
   * executor.replaceOwnTools({ ...loaded.manifest, tools, byName: new Map(tools.map((t) => [t.name, t])) });
   * assert.equal(executor.manifest.byName.has("get_time"), false);
   * ```
   */
  replaceOwnTools(next: Manifest): void {
    this.#own = next;
    this.#context.launcher.useManifest(next);
    this.#addUpstream(this.#upstream);
  }

  /**
   * The definitions of the tools MCP server `server` exposes now, as it gives them (`trust` pins them); the
   * gateway must be connected (`connectGateway`).
   */
  serverDefinitions(server: string): Promise<ToolDefinition[]> {
    return this.#gateway.definitions(server);
  }

  /**
   * A caller (an MCP client's `logging/setLevel`) asks for log messages from `level` up: the MCP servers behind the
   * gateway are asked for the least severe level any caller asked, now and at each start; each caller filters the
   * rest.
   */
  serverLogLevel(level: LogLevel): void {
    this.#gateway.setLogLevel(level);
  }

  /**
   * Redacts text the same way the audit log does, with every secret known so far (one `store_secret` gave in this
   * run included): for debug output, transcripts and `--output jsonl`.
   */
  redact(text: string): string {
    return this.#secrets.redact(text);
  }

  /**
   * Takes a secret a person just gave (`store_secret`) for the rest of the run: the tools that declare `name`
   * receive it from the next call on, and its value is redacted everywhere from now on.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Executor } from "./executor.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
   * executor.useSecret("GITHUB_TOKEN", "ghp_0123456789abcdef"); // after the store has it
   * assert.equal(executor.redact("token ghp_0123456789abcdef"), "token [REDACTED]"); // the value no longer shows
   * ```
   */
  useSecret(name: string, value: string): void {
    this.#secrets.use(name, value);
  }

  /**
   * Masks `value` everywhere from now on, as a secret, without giving it to any tool: a value one MCP session keeps
   * for itself (its calls pass it in {@linkcode CallOptions.secrets}).
   */
  maskSecret(value: string): void {
    this.#secrets.mask(value);
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
    await this.#trail.unrun(tool, argsText, envelope, facts);
    return this.#secrets.forCaller(envelope);
  }

  /** The secret names some tool of the manifest declares (bound credentials' included), in manifest order. */
  get declaredSecrets(): string[] {
    return [
      ...new Set(
        this.manifest.tools.flatMap((tool) => [...tool.secrets, ...tool.credentials.map((c) => c.secret)]),
      ),
    ];
  }

  /** Lookup and preflight. A failure is audited and comes back as the envelope to answer with. */
  async prepare(name: string, argsText: string): Promise<Prepared> {
    const tool = this.manifest.byName.get(name);
    // A gateway tool that is withheld, or whose server cannot be used.
    const unexposed = tool === undefined ? this.#gateway.refusal(name) : undefined;
    if (unexposed !== undefined) {
      await this.#trail.unrun(name, argsText, unexposed);
      return { ok: false, envelope: this.#secrets.forCaller(unexposed) };
    }
    if (!tool) {
      // No "did you mean": a list of near names invites the model to invent tools.
      const envelope = failure("tool_not_found", `There is no tool named ${JSON.stringify(name)}.`, {
        tool: name,
      });
      await this.#trail.unrun(name, argsText, envelope);
      return { ok: false, envelope: this.#secrets.forCaller(envelope) };
    }
    // The schema engine loads at the first call that needs it: start-up does not pay for it.
    if (tool.schema !== undefined) await this.schemas.ready(tool.schema as Record<string, unknown>);
    const verdict = preflight(tool, argsText, this.schemas);
    if (!verdict.ok) {
      await this.#trail.unrun(name, argsText, verdict.envelope);
      return { ok: false, envelope: this.#secrets.forCaller(verdict.envelope) };
    }
    return { ok: true, call: { tool, args: verdict.args, argsText } };
  }

  /** Records that a prepared call was not run (denied, rejected by policy) and returns the envelope. */
  async refuse(call: PreparedCall, envelope: FailureEnvelope): Promise<FailureEnvelope> {
    await this.#trail.unrun(call.tool.name, call.argsText, envelope);
    return this.#secrets.forCaller(envelope);
  }

  /** Runs a prepared call to its envelope, and audits it (where it goes: see the module's doc). */
  async run(call: PreparedCall, options: CallOptions = {}): Promise<Envelope> {
    const running = this.#runStep(call, options);
    this.#running.add(running);
    try {
      return await running;
    } finally {
      this.#running.delete(running);
    }
  }

  /**
   * Resolves once no call is running, each with its envelope and audit line: a front end that a signal stops
   * aborts its calls, then waits here before it exits.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Executor } from "./executor.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
   * assert.equal(await executor.idle(), undefined); // nothing runs: at once
   * ```
   */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  async #runStep(call: PreparedCall, options: CallOptions): Promise<Envelope> {
    const { tool } = call;
    // A call waiting for its go (a pool worker's): only a start in the foreground is made before it (held, see
    // src/run/foreground.ts); every other step waits for it.
    const afterGo = (step: () => Promise<Envelope>) => this.#afterGo(call, options, step);
    // 1. An MCP server's tool: through the gateway.
    if (tool.upstream !== undefined) return await afterGo(() => this.#gateway.call(call, options));
    // 2. A pool of workers runs every other call.
    const pool = this.#options.pool;
    if (pool !== undefined) return await afterGo(() => runInPool(this.#context, pool, call, options));
    // 3. `job`: answered from the job table, in this process.
    if (inProcess(tool)) return await afterGo(() => this.#jobs.answer(call, options));
    // 4. A declared secret that is nowhere: nothing starts.
    const missing = this.#secrets.missing(tool, options.secrets);
    if (missing !== undefined) return await afterGo(() => this.#noSecret(call, missing));
    // 5. A background `exec` becomes a job; anything else runs in the foreground.
    if (isBackgroundExec(call)) return await afterGo(() => this.#jobs.start(call, options));
    return await runForeground(this.#context, call, options);
  }

  /** Takes `step` once the call's go (if it waits for one) says yes; without it, nothing is done. */
  async #afterGo(call: PreparedCall, options: CallOptions, step: () => Promise<Envelope>): Promise<Envelope> {
    if (options.goAhead === undefined || await options.goAhead) return await step();
    return failure("unavailable", "The call was not given the go: it did not run.", {
      tool: call.tool.name,
      retryable: false,
    });
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

  /** Ends the background jobs and lets go of the pool: a caller calls it before it exits. */
  async close(): Promise<void> {
    await this.#gateway.close();
    await this.endJobs();
    await this.#options.pool?.close();
    await this.#context.launcher.close();
    this.#trail.close();
    await this.#options.tracing?.shutdown();
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
    const tools = names === undefined
      ? this.manifest.tools
      : this.manifest.tools.filter((tool) => names.includes(tool.name));
    return await startNotes(this.#context, tools);
  }

  /**
   * The whole pipeline: lookup, preflight, the approval policy (`options.policy`, by default the caller's own
   * command), run. A call the policy refuses is audited and answered with its refusal.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Executor } from "./executor.ts";
   * import { Policy } from "../policy/policy.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
   * const refused = await executor.call("no_such_tool", "{}", { policy: new Policy() });
   * assert.equal(refused.ok, false); // there is no such tool
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
   * import assert from "node:assert/strict";
   * import { Executor } from "./executor.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
   * const prepared = await executor.prepare("exec", '{"argv":["make"],"timeout_ms":600000}');
   * assert.ok(prepared.ok);
   * assert.equal(executor.limits(prepared.call).timeoutSec, 600);
   * ```
   */
  limits(call: PreparedCall): CallLimits {
    return shownLimits(call, this.#options.defaultTimeoutSec ?? EXECUTOR_DEFAULTS.timeoutSec);
  }

  /** How many background jobs run now. */
  get runningJobs(): number {
    return this.#jobs.running;
  }

  /** Every background job still remembered, of every scope: for the operator (the console), never a model. */
  jobList(): JobView[] {
    return this.#jobs.list();
  }

  /**
   * The background job `id` of `scope` (an MCP session's id, a stateless caller's), running or ended, while the
   * job table remembers it; `undefined` for another scope's job, as the `job` tool sees it. For `serve`'s job tasks
   * (`mcp/job_tasks.ts`), not the library's users.
   *
   * @internal
   */
  job(id: string, scope: string): Job | undefined {
    return this.#jobs.lookup(id, scope);
  }

  /** Stops the job `id` of `scope` as its user (`killed_by: "user"`); false when there is no such running job. */
  stopJob(id: string, scope: string): boolean {
    return this.#jobs.stop(id, scope);
  }

  /**
   * Ends a scope's background jobs (an MCP session that closed, was deleted or expired): their trees end with
   * `killed_by: "session"`, and no job starts for that scope any more. Resolves once they are gone.
   */
  async endJobScope(scope: string): Promise<void> {
    await this.#jobs.endScope(scope);
  }

  /**
   * Ends every background job's tree and waits for them: a caller calls it before it exits (jobs outlive a call,
   * never toolgate). A registry's `endAll` (SIGINT, SIGTERM, SIGHUP) ends them too.
   */
  async endJobs(): Promise<void> {
    await this.#jobs.endAll();
  }
}
