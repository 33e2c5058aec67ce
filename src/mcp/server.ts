/**
 * The MCP face of a manifest: `tools/list` from the MCP export, `tools/call` through the shared executor
 * (prepare -> the one approval policy, asking the client's user by elicitation where it can -> the session's
 * scheduler -> run with the request's AbortSignal), envelopes mapped to MCP results, and progress notifications
 * while a tool runs (`running NAME elapsed=Ys/Zs`, the heartbeat's words). A client's cancellation is a person's
 * stop: the tree ends and the call's envelope (which MCP never sends back for a cancelled request; the audit line
 * keeps it) says `killed_by: "user"`. Each session has its own background jobs, which no other session sees and
 * which end with it (`killed_by: "session"`). A tool's result that breaks the `outputSchema` it declares is
 * answered as a failure (`results.ts`).
 *
 * One piece: `ToolService` is one class whose handlers share one session's state (its scheduler, its policy and
 * "always" answers, its jobs and secrets, its log level) and the server's shutdown; each handler is a few lines
 * over that state. What it asks of the client (approval, secrets, questions) and the notifications a tool's
 * messages become are `client_asks.ts`'s; what it is given (its options, each call's context) is
 * `service_options.ts`'s.
 *
 * @module
 */
// The SDK's "./*" export points `x.js` at types in `x.js.d.ts`, which do not exist: name the types beside each import.
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/index"
import { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/validation/ajv-provider"
import { AjvJsonSchemaValidator } from "npm:@modelcontextprotocol/sdk@1.32.2/validation/ajv-provider.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/validation/types"
import type { jsonSchemaValidator } from "npm:@modelcontextprotocol/sdk@1.32.2/validation/types.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  type LoggingLevel,
  McpError,
  SetLevelRequestSchema,
  type Tool,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { type Envelope, failure, type FailureEnvelope, isRecord } from "../contract.ts";
import { EXEC_TOOL } from "../run/builtins.ts";
import type { Job } from "../run/job.ts";
import type { CallSeen } from "../run/call_watch.ts";
import { carrierFromMeta, decideInSpan, errorType } from "../run/tracing.ts";
import { toMcp } from "../manifest/tool_definitions.ts";
import type { TaskSupport } from "../manifest/manifest_types.ts";
import { type Ask, Policy } from "../policy/policy.ts";
import { heartbeatText } from "../ui/progress.ts";
import { toCallResult } from "./results.ts";
import { checkOutput } from "../run/output_check.ts";
import {
  clientQuestions,
  ELICITATION_TIMEOUT_MS,
  elicitingAsk,
  elicitingSecret,
  toolEvents,
  withConsoleForms,
} from "./client_asks.ts";

import { CallLimit, Scheduler } from "../run/scheduler.ts";
import { UserStop } from "../process/stop.ts";
import {
  answerStoreSecret,
  type AskSecret,
  inStore,
  STORE_SECRET,
  storeSecretMcp,
} from "../run/store_secret.ts";

import { CALL_LIMITS } from "./limits.ts";
import { type CallContext, PROGRESS_INTERVAL_MS, type ToolServiceOptions } from "./service_options.ts";
import { serveOffers } from "./upstream_offers.ts";
import type { OfferServing } from "./offer_requests.ts";
import { type CallRoute, SESSION_TASKS_CAPABILITY, SessionTasks } from "./session_tasks.ts";

/**
 * The most callers without a session (2026-07-28) whose state is kept at once: each client name on each connection
 * is one, and a client names itself, so the number is capped; past it, the one seen longest ago is forgotten.
 */
const MAX_CALLERS = 256;

/** What the server tells a host about its tools' results (the host may pass it to its model). */
const INSTRUCTIONS = "A tool's success is its result as JSON (structuredContent; a result that is not an " +
  'object comes as {"result":...}). A failure (isError) says what went wrong in its text; its structuredContent ' +
  'is the envelope {"ok":false,"kind":...,"message":...,"retryable":...}: read `kind`, `field` and `expected` ' +
  "to correct a failed call, and `retryable` before calling again.";

/**
 * What one MCP session (one connection, or one HTTP session) owns: its turn-taking, its "always" answers and its
 * background jobs (no other session can poll or kill them; they end when the session does).
 */
interface Session {
  readonly scheduler: Scheduler;
  readonly policy: Policy;
  readonly id: string;
  /** The values `store_secret` gave this session, by name: its calls only receive them. */
  readonly secrets: Map<string, string>;
  /** The least severe log level the client wants (`logging/setLevel`); absent: every level. */
  logLevel?: LoggingLevel;
}

/**
 * The answer to a call that the server's shutdown stopped, or that came after it (`started`: false). A retry
 * elsewhere is safe only when the tool never started, or when it only reads: one that may have acted says so.
 */
function shuttingDown(tool: string, started = false, readOnly = false): FailureEnvelope {
  const mayHaveActed = started && !readOnly;
  return failure(
    "unavailable",
    mayHaveActed
      ? "The MCP server is shutting down; the tool was stopped before its end and may have acted: check before calling it again."
      : "The MCP server is shutting down; the tool was not run to its end.",
    { tool, retryable: !mayHaveActed, metadata: { cancelled: true } },
  );
}

/**
 * The tools of one executor as an MCP service, shared by every connection (the stdio one, or each HTTP session).
 * Each session gets its own scheduler (so that one session's long call that is not concurrent never holds up
 * another's) and its own memory of "always" answers; a cap on calls in flight holds across all of them.
 *
 * @example Not run as a doc test: it serves MCP on a transport (tests/mcp/ connects one).
 * ```ts ignore
 * import { ToolService } from "./server.ts";
 * const service = new ToolService({
 *   executor,
 *   redact, // the run's redaction, as the executor's
 *   approval: { yes: false, allowTools: [], approveHosts: [] },
 *   version: "0.1.0",
 * });
 * await service.server().connect(transport);
 * ```
 */
export class ToolService {
  readonly #options: ToolServiceOptions;
  #tools: Tool[];
  /** A tool listed by its server's own name -> its toolgate name (`ownNames`). */
  readonly #fullNames = new Map<string, string>();
  /** The servers of the sessions open now: told when the tools change. */
  readonly #servers = new Set<Server>();
  /** The state of the sessions open now (their remembered approvals). */
  readonly #sessions = new Set<Session>();
  /** A closed session's server, and the end of its background jobs (every process of them gone). */
  readonly #jobsEnded = new WeakMap<Server, Promise<void>>();
  readonly #limit: CallLimit;
  readonly #inFlight = new Set<Promise<unknown>>();
  /** What a session would hold, for each caller of the 2026-07-28 revision (which has no session), by key. */
  readonly #callers = new Map<string, Session>();
  /** The tasks of the sessions (2025-11-25), each its session's. */
  readonly #sessionTasks = new SessionTasks();
  /** Aborted by {@linkcode ToolService.stop}: every call in flight, and every call after it, ends. */
  readonly #stopping = new AbortController();

  constructor(options: ToolServiceOptions) {
    this.#options = options;
    this.#tools = this.#listed();
    this.#limit = new CallLimit(options.maxCalls ?? CALL_LIMITS.maxCalls);
  }

  #listed(): Tool[] {
    const { executor, server } = this.#options;
    const storeSecret = executor.declaredSecrets.length > 0;
    this.#fullNames.clear();
    // toMcp writes an object inputSchema (type "object" added when absent), which is what MCP's Tool requires.
    const tools = executor.manifest.tools.map((tool) => {
      const listed = toMcp(tool) as Tool;
      const own = tool.upstream?.tool;
      // A server's own name, where asked for and where it names no other tool listed here.
      if (
        server !== undefined && own !== undefined && !(storeSecret && own === STORE_SECRET) &&
        !this.#fullNames.has(own)
      ) {
        this.#fullNames.set(own, tool.name);
        return { ...listed, name: own };
      }
      return listed;
    });
    // store_secret beside them whenever a tool declares a secret: the person types it into the client's form.
    if (storeSecret) tools.push(storeSecretMcp() as Tool);
    return tools;
  }

  /**
   * The toolgate name of a tool the client calls by the name it was listed under. With one server served, a name
   * not listed is that server's all the same (a server that cannot start lists nothing, and its calls answer why).
   */
  #fullName(name: string): string {
    const { server } = this.#options;
    const listed = this.#fullNames.get(name);
    if (listed !== undefined || server === undefined) return listed ?? name;
    const prefix = `mcp__${server}__`;
    return name.startsWith(prefix) ? name : prefix + name;
  }

  /**
   * The executor's tools changed (an MCP server behind the gateway said so, and its new listing was checked
   * against the pins): `tools/list` answers the new list, and every open session is sent `tools/list_changed`.
   */
  toolsChanged(): void {
    this.#tools = this.#listed();
    for (const listener of this.#listeners) listener();
    for (const server of this.#servers) {
      server.sendToolListChanged().catch((error) =>
        this.#options.onError?.(
          `toolgate: mcp: telling a client its tools changed: ${(error as Error).message}`,
        )
      );
    }
  }

  /**
   * Forgets every session's and stateless caller's "always" for `tools`, whose definitions changed (`serve` took a
   * manifest trusted again): their next call that needs approval asks again.
   */
  forgetApprovals(tools: readonly string[]): void {
    for (const session of [...this.#sessions, ...this.#callers.values()]) session.policy.forget(tools);
  }

  /** Who serves: the name, version and instructions a client is told (at `initialize`, or by `server/discover`). */
  get about(): { readonly name: string; readonly version: string; readonly instructions: string } {
    return { name: "toolgate", version: this.#options.version, instructions: INSTRUCTIONS };
  }

  /**
   * Calls `listener` whenever the tools change (after `tools/list` answers the new list): how a stateless
   * client's `subscriptions/listen` stream hears of it. Returns the function that stops it.
   */
  onToolsChanged(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }
  readonly #listeners = new Set<() => void>();

  /**
   * What the manifest's MCP servers offer besides their tools, as both revisions serve it (`offer_requests.ts`);
   * absent where the manifest names no server.
   */
  get offerServing(): OfferServing | undefined {
    const servers = (this.#options.executor.manifest.servers ?? []).map((spec) => spec.name);
    if (servers.length === 0) return undefined;
    return {
      offers: this.#options.executor.offers,
      servers,
      own: this.#options.server,
      onError: this.#options.onError,
    };
  }

  /** The `tools/list` entries. */
  list(): Tool[] {
    return this.#tools.map((tool) => structuredClone(tool));
  }

  /** A listed tool's input schema, not copied (read it, never change it); undefined for a name not listed. */
  inputSchema(name: string): Readonly<Record<string, unknown>> | undefined {
    return this.#tools.find((tool) => tool.name === name)?.inputSchema;
  }

  /**
   * Runs one `tools/call` of `session`. An unknown tool is a JSON-RPC error (`McpError` with `InvalidParams`);
   * everything else, refusals included, is a result holding an envelope.
   */
  #track(name: string, args: unknown, context: CallContext, session: Session): Promise<CallToolResult> {
    const stop = new AbortController();
    const seen = this.#options.watch?.started({
      tool: name,
      caller: `MCP session ${session.id.slice(0, 8)}`,
      args,
      stop: () => stop.abort(),
    });
    const watched = seen ? this.#watched({ ...context, stop: stop.signal }, seen) : context;
    const ended = this.#traced(name, args, watched, session);
    const running = ended.then(toCallResult);
    this.#inFlight.add(running);
    const forget = () => void this.#inFlight.delete(running);
    running.then(forget, forget);
    if (seen) ended.then((envelope) => seen.ended(envelope), (error) => seen.ended(asError(error)));
    return running;
  }

  /** The call's context with the watcher told of its tool's messages and stderr too. */
  #watched(context: CallContext, seen: CallSeen): CallContext {
    const own = context.onToolEvent;
    return {
      ...context,
      onToolEvent: (event) => {
        own?.(event);
        seen.toolEvent(event);
      },
      onStderr: (chunk) => seen.stderr(chunk),
    };
  }

  /** Resolves when no call is in flight. */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * Stops serving: the calls in flight are aborted (their trees ended) and answered `unavailable`, as is any call
   * that comes later. Resolves when no call is in flight, so that the answers can go out before the transports
   * close. `reason` is what ended the server (a `ShutdownStop`, say): the calls' audit lines say it.
   */
  async stop(reason?: unknown): Promise<void> {
    this.#stopping.abort(reason);
    await this.idle();
  }

  /**
   * Resolves once the background jobs of the session served by `server` have ended, every process of them gone
   * (at once for a server that is not closed, or kept no job): an HTTP `DELETE` of the session is answered then.
   */
  jobsEnded(server: Server): Promise<void> {
    return this.#jobsEnded.get(server) ?? Promise.resolve();
  }

  /**
   * A new MCP server over this service, for one connection (one session). When it closes (the client went away,
   * the HTTP session was deleted or expired, the server stops) the session's background jobs end, and then
   * `onClose` is told; set `onClose` here rather than the server's `onclose`, which this service uses.
   */
  server(onClose?: () => void): Server {
    const server = new Server(
      { name: "toolgate", version: this.#options.version },
      {
        capabilities: { tools: { listChanged: true }, logging: {}, tasks: SESSION_TASKS_CAPABILITY },
        instructions: INSTRUCTIONS,
        jsonSchemaValidator: lazyValidator(),
      },
    );
    const session = this.#newSession();
    this.#servers.add(server);
    this.#sessionTasks.install(server, session.id);
    this.#sessions.add(session);
    // The MCP servers' resources, prompts and completions beside their tools (upstream_offers.ts).
    const offering = this.offerServing;
    const endOffers = offering === undefined
      ? undefined
      : serveOffers(server, offering, (requestId) => clientQuestions(server, requestId, session, undefined));
    server.onclose = () => {
      this.#servers.delete(server);
      // Its tasks are its own: nobody else could ask for them, so the running ones end with it.
      this.#sessionTasks.end(session.id);
      this.#sessions.delete(session);
      // Its subscriptions end with it: each server is told once none of its sessions subscribes any more.
      void endOffers?.();
      // A session's jobs are its own: nobody else could poll or kill them, so they must not outlive it.
      this.#jobsEnded.set(
        server,
        this.#options.executor.endJobScope(session.id).catch((error) =>
          this.#options.onError?.(`toolgate: mcp: ending a session's jobs: ${(error as Error).message}`)
        ),
      );
      onClose?.();
    };
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.list() }));
    // In place of the SDK's own (which keeps the level where only its unrelated sendLoggingMessage reads it): a
    // tool's log messages go out on the stream of the call that sent them, so the level is the session's.
    server.setRequestHandler(SetLevelRequestSchema, (request) => {
      session.logLevel = request.params.level;
      // The MCP servers behind the gateway are asked for it too (the least severe any session asked).
      this.#options.executor.serverLogLevel(request.params.level);
      return {};
    });
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const { name, task } = request.params;
      const support = this.taskSupport(name);
      const route: CallRoute = {
        channel: server,
        requestId: extra.requestId,
        signal: extra.signal,
        send: (notification) => extra.sendNotification(notification),
      };
      if (task === undefined) {
        if (support === "required") {
          throw new McpError(
            ErrorCode.MethodNotFound,
            `${name} runs only as a task: call it with params.task`,
          );
        }
        return this.#sessionCall(request.params, route, server, session);
      }
      if (support === "forbidden") {
        throw new McpError(
          ErrorCode.MethodNotFound,
          `${name} does not run as a task: call it without params.task`,
        );
      }
      // Answered at once; the call goes on with the task's route (tasks/cancel its signal, tasks/result its stream).
      return this.#sessionTasks.start(
        server,
        session.id,
        task.ttl,
        (taskRoute) => this.#sessionCall(request.params, taskRoute, server, session),
      ) as unknown as CallToolResult;
    });
    const onError = this.#options.onError;
    if (onError) server.onerror = (error) => onError(`toolgate: mcp: ${error.message}`);
    return server;
  }

  /** One `tools/call` of a session, its questions and notifications going by `route`. */
  #sessionCall(
    params: CallToolRequest["params"],
    route: CallRoute,
    server: Server,
    session: Session,
  ): Promise<CallToolResult> {
    const token = params._meta?.progressToken;
    const progress = token === undefined ? undefined : (value: number, message: string) =>
      route.send({
        method: "notifications/progress",
        params: { progressToken: token, progress: value, message },
      });
    // Elicitation only when this client said at initialize that it can show a form to its user.
    const canAsk = server.getClientCapabilities()?.elicitation?.form !== undefined;
    if (params.name === STORE_SECRET && this.#options.executor.declaredSecrets.length > 0) {
      return this.#storeSecret(
        params.arguments,
        canAsk ? elicitingSecret(route.channel, route.requestId) : undefined,
        route.signal,
        session,
      );
    }
    // Listed by its server's own name (serve --server): called, approved and audited by toolgate's.
    const name = this.#fullName(params.name);
    const ask = canAsk ? elicitingAsk(route.channel, route.requestId) : undefined;
    const onToolEvent = toolEvents(
      name,
      token,
      session,
      (notification) =>
        route.send(notification).catch((error) =>
          this.#options.onError?.(
            `toolgate: mcp: a message of ${name} not sent: ${(error as Error).message}`,
          )
        ),
    );
    return this.#track(name, params.arguments, {
      signal: route.signal,
      progress,
      ask,
      onToolEvent,
      // A request for the model's answer is approved by the client's user or the console, whichever answers;
      // a form is answered by either too.
      questions: withConsoleForms(
        clientQuestions(
          route.channel,
          route.requestId,
          session,
          this.#askers(ask, ELICITATION_TIMEOUT_MS).ask,
        ),
        this.#options.watch,
        ELICITATION_TIMEOUT_MS,
      ),
      trace: { parent: carrierFromMeta(params._meta), requestId: String(route.requestId) },
    }, session);
  }

  /** A session's state, new: its own scheduler (under the server-wide cap), policy, id and secrets. */
  #newSession(): Session {
    return {
      scheduler: new Scheduler({
        maxInFlight: this.#options.maxSessionCalls ?? CALL_LIMITS.maxSessionCalls,
        limit: this.#limit,
      }),
      policy: new Policy({
        ...this.#options.approval,
        redact: this.#options.redact,
        nobodyToAsk: "this MCP client cannot be asked (it did not declare the elicitation capability)",
        restart: "restart toolgate serve",
      }),
      id: crypto.randomUUID(),
      secrets: new Map(),
    };
  }

  /**
   * Runs one `tools/call` of a caller without a session (the 2026-07-28 revision), down the same path as a
   * session's call (its approval, turn, limits, audit line and envelope). What a session would hold (its
   * scheduler, "always" answers, jobs and secrets) is kept for the `caller` key its front end derives from what
   * each request carries (`stateless.ts`). An unknown tool throws an `McpError` (`InvalidParams`), as for a
   * session.
   */
  callWithout(caller: string, name: string, args: unknown, context: CallContext): Promise<CallToolResult> {
    let session = this.#callers.get(caller);
    // Most recently seen last: past the cap, the caller seen longest ago is forgotten (its jobs end).
    this.#callers.delete(caller);
    if (session === undefined && this.#callers.size >= MAX_CALLERS) {
      const [oldest, forgotten] = this.#callers.entries().next().value!;
      this.#callers.delete(oldest);
      this.#options.executor.endJobScope(forgotten.id).catch((error) =>
        this.#options.onError?.(
          `toolgate: mcp: ending a forgotten caller's jobs: ${(error as Error).message}`,
        )
      );
    }
    this.#callers.set(caller, session ??= this.#newSession());
    if (name === STORE_SECRET && this.#options.executor.declaredSecrets.length > 0) {
      return this.#storeSecret(args, context.askSecret, context.signal, session);
    }
    // A question to the model needs the caller's approval first, as a session's does (its flags and "always").
    const model = context.questions?.model;
    const questions = model === undefined ? context.questions : {
      ...context.questions,
      model: async (...[request, question]: Parameters<typeof model>) => {
        const verdict = await session.policy.decideSampling(question.tool, request, {
          signal: question.signal,
        });
        if (!verdict.approved) throw new Error(verdict.envelope.message);
        return await model(request, question);
      },
    };
    return this.#track(this.#fullName(name), args, { ...context, questions }, session);
  }

  /**
   * Whether a client may run the tool listed as `name` as a task: what its manifest says, else `"optional"`;
   * `store_secret` (its value typed into the client's form at once) never.
   */
  taskSupport(name: string): TaskSupport {
    if (name === STORE_SECRET && this.#options.executor.declaredSecrets.length > 0) return "forbidden";
    return this.#options.executor.manifest.byName.get(this.#fullName(name))?.taskSupport ?? "optional";
  }

  /** What the tool listed as `name` asks while it runs (`"user"`, `"model"`); none for a name not listed. */
  asks(name: string): readonly string[] {
    return this.#options.executor.manifest.byName.get(this.#fullName(name))?.asks ?? [];
  }

  /**
   * Does this call of the tool listed as `name` start a background job (the built-in `exec` with `background`)?
   * Read before the call runs, as the preflight will coerce it (`true` or `"true"`).
   */
  startsJob(name: string, args: unknown): boolean {
    const tool = this.#options.executor.manifest.byName.get(this.#fullName(name));
    const background = isRecord(args) ? args.background : undefined;
    return tool?.builtin === EXEC_TOOL && (background === true || background === "true");
  }

  /**
   * The background job `id` of the caller without a session keyed `caller` (its job scope), running or ended, as
   * that caller's `job` tool sees it; `undefined` for a caller not kept, or a job not its own.
   */
  callerJob(caller: string, id: string): Job | undefined {
    const session = this.#callers.get(caller);
    return session === undefined ? undefined : this.#options.executor.job(id, session.id);
  }

  /**
   * Drops what was kept for the callers without a session whose keys start with `prefix` (one connection's: it
   * closed); resolves once their background jobs have ended, every process of them gone.
   */
  async forgetCallers(prefix: string): Promise<void> {
    const ending: Promise<void>[] = [];
    for (const [key, session] of [...this.#callers]) {
      if (!key.startsWith(prefix)) continue;
      this.#callers.delete(key);
      ending.push(this.#options.executor.endJobScope(session.id));
    }
    await Promise.all(ending);
  }

  /**
   * A `store_secret` call: the value typed into the client's form goes to the session's memory (or, with
   * `--allow-store-secrets`, to the store, saying so when it replaces a value), never into the answer.
   */
  async #storeSecret(
    args: unknown,
    ask: AskSecret | undefined,
    signal: AbortSignal,
    session: Session,
  ): Promise<CallToolResult> {
    if (this.#stopping.signal.aborted) return toCallResult(shuttingDown(STORE_SECRET));
    const { executor, allowStoreSecrets } = this.#options;
    const envelope = await answerStoreSecret(JSON.stringify(args ?? {}), {
      executor,
      ask,
      nobodyToAsk: "this MCP client cannot be asked (it did not declare the elicitation capability)",
      keep: allowStoreSecrets ? { kind: "store" } : { kind: "session", values: session.secrets },
      storedAlready: allowStoreSecrets ? inStore(executor) : undefined,
      signal: AbortSignal.any([signal, this.#stopping.signal]),
    });
    return toCallResult(envelope);
  }

  /** A call inside its span, `execute_tool {tool}` of `tools/call`, continuing the client's trace. */
  async #traced(name: string, args: unknown, context: CallContext, session: Session): Promise<Envelope> {
    const span = this.#options.executor.tracing.toolCall({
      tool: name,
      callId: context.trace?.requestId,
      mcp: { method: "tools/call", sessionId: session.id },
      parent: context.trace?.parent,
      role: "server",
    });
    let error: string | undefined = "Error";
    try {
      const envelope = await this.#call(name, args, { ...context, span }, session);
      error = errorType(envelope);
      return envelope;
    } catch (thrown) {
      // A JSON-RPC error (an unknown tool): its code, as the MCP conventions say.
      if (thrown instanceof McpError) error = String(thrown.code);
      throw thrown;
    } finally {
      span.end(error);
    }
  }

  async #call(name: string, args: unknown, context: CallContext, session: Session): Promise<Envelope> {
    const { executor } = this.#options;
    if (this.#stopping.signal.aborted) return shuttingDown(name);
    const prepared = await executor.prepare(name, JSON.stringify(args ?? {}));
    if (!prepared.ok) {
      // The executor has audited it; to the host an unknown tool is a protocol error, not a tool result.
      if (prepared.envelope.kind === "tool_not_found") {
        throw new McpError(ErrorCode.InvalidParams, prepared.envelope.message);
      }
      return prepared.envelope;
    }
    const { call } = prepared;
    // The client's cancellation is its user's stop (killed_by: "user"); the server's own shutdown is not.
    const userStop = new AbortController();
    const onCancel = () => userStop.abort(new UserStop("the MCP client cancelled the call"));
    const onStop = () => userStop.abort(new UserStop("stopped in the console"));
    if (context.signal.aborted) onCancel();
    else context.signal.addEventListener("abort", onCancel, { once: true });
    if (context.stop?.aborted) onStop();
    else context.stop?.addEventListener("abort", onStop, { once: true });
    const signal = AbortSignal.any([userStop.signal, this.#stopping.signal]);
    // Asked before the call takes its turn: a person thinking holds no slot. With a console the first answer wins.
    // The console waits up to the call's own timeout (a call without one: as long as an elicitation form).
    const callTimeout = executor.limits(call).timeoutSec;
    const asking = context.inputRound ? { ask: context.ask, answeredBy: () => undefined } : this.#askers(
      context.ask,
      callTimeout === undefined ? ELICITATION_TIMEOUT_MS : Math.max(1000, callTimeout * 1000),
    );
    const verdict = await decideInSpan(session.policy, call, context.span, { ask: asking.ask, signal });
    if (!verdict.approved) {
      // A stateless caller's question goes back as an input-required result: nothing ran, nothing is audited yet.
      const pending = context.inputRound?.pending();
      if (pending !== undefined) throw pending;
      return await executor.refuse(call, verdict.envelope);
    }
    const approvedBy = verdict.by === "person" && asking.answeredBy() === "console" ? "console" : verdict.by;
    const release = await session.scheduler.acquire(call.tool.concurrent, signal);
    // Cancelled while waiting for its turn: run() sees the aborted signal, starts nothing and audits the call.
    const limit = executor.limits(call).timeoutSec;
    // A tool that speaks toolgate/1 reports its own progress: heartbeats beside it would break the rule that
    // progress grows with every notification.
    // So does an MCP server behind the gateway: its own progress reaches the client as it sends it.
    const stopProgress = release && call.tool.protocol === undefined && call.tool.upstream === undefined
      ? this.#reportProgress(call.tool.name, limit, context)
      : () => {};
    try {
      const envelope = await executor.run(call, {
        signal,
        approvedBy,
        jobScope: session.id,
        secrets: session.secrets,
        onToolEvent: context.onToolEvent,
        onStderr: context.onStderr,
        questions: context.questions,
        trace: context.span,
      });
      // A call the client did not cancel was stopped by the shutdown: say so, and that a retry may work.
      const stopped = !envelope.ok && envelope.cancelled === true && this.#stopping.signal.aborted &&
        !context.signal.aborted;
      if (stopped) return shuttingDown(call.tool.name, true, call.tool.readOnly);
      const checked = await checkOutput(call.tool, envelope, executor.schemas);
      if (checked !== envelope && !checked.ok) {
        // The operator hears of a tool that breaks its own declaration (stderr neutralizes what the tool's keys hold).
        this.#options.onError?.(`toolgate: mcp: ${call.tool.name}: ${checked.message}`);
      }
      return checked;
    } finally {
      context.signal.removeEventListener("abort", onCancel);
      context.stop?.removeEventListener("abort", onStop);
      stopProgress();
      release?.();
    }
  }

  /**
   * The client's asker and the console's, raced: the first answer wins and the other question is withdrawn; a
   * side that cannot answer (its question failed) leaves it to the other. `answeredBy` says which answered.
   */
  #askers(client: Ask | undefined, timeoutMs: number): { ask?: Ask; answeredBy: () => string | undefined } {
    const watch = this.#options.watch;
    let by: string | undefined;
    if (!watch?.ask) return { ask: client, answeredBy: () => client ? "client" : undefined };
    const viaConsole: Ask = (question, signal) => watch.ask!(question, signal, timeoutMs);
    const sides: [string, Ask][] = client
      ? [["client", client], ["console", viaConsole]]
      : [["console", viaConsole]];
    const ask: Ask = async (question, signal) => {
      const withdraw = new AbortController();
      const both = signal ? AbortSignal.any([signal, withdraw.signal]) : withdraw.signal;
      try {
        return await Promise.any(sides.map(async ([name, side]) => {
          const answer = await side(question, both);
          by ??= name;
          return answer;
        }));
      } catch (error) {
        throw error instanceof AggregateError ? error.errors.at(-1) : error;
      } finally {
        withdraw.abort();
      }
    };
    return { ask, answeredBy: () => by };
  }

  /** Sends elapsed seconds every interval until the returned function is called. */
  #reportProgress(tool: string, limitSec: number | undefined, context: CallContext): () => void {
    const send = context.progress;
    if (!send) return () => {};
    const interval = this.#options.progressIntervalMs ?? PROGRESS_INTERVAL_MS;
    const started = performance.now();
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
      // Progress must grow with every notification: count ticks, and say the measured time (and the limit) in
      // the message.
      send(ticks * interval / 1000, heartbeatText(tool, performance.now() - started, limitSec)).catch((
        error,
      ) =>
        this.#options.onError?.(`toolgate: mcp: progress for ${tool} not sent: ${(error as Error).message}`)
      );
    }, interval);
    return () => clearInterval(timer);
  }
}

/** What a call's rejection was, as an error (the watcher shows its message). */
function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * The SDK server's JSON Schema checker (it checks a client's answers to forms), made at its first use: the SDK
 * makes one (an Ajv instance with its formats) for every server, that is for every session, and most sessions never
 * see a form. One per session still, never shared: Ajv keeps every schema it compiled, and the forms' schemas are
 * new objects each time.
 */
function lazyValidator(): jsonSchemaValidator {
  let made: AjvJsonSchemaValidator | undefined;
  return { getValidator: (schema) => (made ??= new AjvJsonSchemaValidator()).getValidator(schema) };
}
