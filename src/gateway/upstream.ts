/**
 * One upstream MCP server's life: started at first use (a stdio server inside its own sandbox, exactly as a
 * confined tool is launched; an HTTP server through the SDK's Streamable HTTP client), spoken to with the official
 * SDK client, started again after it died (at most a few times a minute), and ended, whole tree, when toolgate is
 * (its launch says how: the server's cgroup, its pid namespace, or its process group).
 *
 * One piece: one server's life, from its start through its calls to its end, with the state they share (the
 * connection, the running process, the starts of the last minute).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  type CallToolResult,
  ElicitationCompleteNotificationSchema,
  LoggingMessageNotificationSchema,
  ProgressNotificationSchema,
  type Tool,
  ToolListChangedNotificationSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { networkReason } from "../base/network_reason.ts";
import { isAbsolute, resolve } from "../base/paths.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { type CallCredential, newPlaceholder } from "../manifest/credentials.ts";
import { findProgram } from "../base/find_program.ts";
import { FALLBACK_PATH, type Launch, PROXY_ENV } from "../sandbox/tool_launch.ts";
import type { EgressDecision } from "../sandbox/proxy_settings.ts";
import { signalGroup } from "../process/process_tree.ts";
import { ChildTransport } from "./child_transport.ts";
import { EraBridge, revisionMismatch } from "./era_bridge.ts";
import { after, type CancelTimer } from "../base/timer.ts";
import { HEADER_SECRET, type ServerSpec, START_TIMEOUT_SEC } from "../manifest/server_spec.ts";
import { startFailure } from "./start_hint.ts";
import { isRecord } from "../contract.ts";
import type { GatewayWiring } from "../run/tool_gateway.ts";
import { installedServer } from "../packages/installed_server.ts";
import { type AskingCall, ServerQuestions, UPSTREAM_CAPABILITIES } from "./server_questions.ts";
import { ServerVoice } from "./server_voice.ts";
import type { LogLevel, ToolEvent } from "../manifest/tool_messages.ts";

/** How many times a server is started within a minute before toolgate stops starting it for that minute. */
export const MAX_STARTS_PER_MINUTE = 3;

/** How long a Streamable HTTP server is given to answer the end of its session at close. */
const SESSION_END_WAIT_MS = 1_000;

/** How long a stdio server whose stdin was closed is given to end on its own before SIGTERM. */
export const EOF_WAIT_MS = 500;

/** How long a server's first process is given to be gone after each SIGKILL. */
const KILL_WAIT_MS = 2_000;

/** How many times SIGKILL is sent to a server's tree before its end reports what it could not end. */
const KILL_ROUNDS = 3;

/** How long what a server's first process left (its cgroup's processes) is given to be gone once it exited. */
const SETTLE_WAIT_MS = 10_000;

/** How long a close waits for a start in flight to end what it started (its sandbox's set-up included). */
const START_END_WAIT_MS = 20_000;

/** A server that cannot be reached: the one line that says why (never a stack trace). */
export class UpstreamError extends Error {
  /** Whether a later call may find it working (it died, and will be started again). */
  readonly retryable: boolean;
  constructor(message: string, retryable = false) {
    super(message);
    this.name = "UpstreamError";
    this.retryable = retryable;
  }
}

/** What an {@linkcode Upstream} needs from the run: the gateway's wiring, for its one server. */
export interface UpstreamOptions extends Omit<GatewayWiring, "servers" | "pins"> {
  readonly server: ServerSpec;
  /** Monotonic milliseconds (tests hold it). */
  readonly now?: () => number;
  /** Told each new listing of the server's tools (after each start, and after it said they changed). */
  readonly onListed?: (tools: Tool[]) => void;
  /** Told of each new connection to the server (each start), once it is ready for use. */
  readonly onConnected?: (client: Client) => void;
}

/** A running stdio server's process, as toolgate started it. */
interface Child {
  readonly process: Deno.ChildProcess;
  readonly launch: Launch;
  readonly group: boolean;
  forget: () => void;
  exited: boolean;
  /** Resolves once nothing of its tree is left (after its first process exited). */
  settled: Promise<void>;
  /** Its end, once begun (a close and a start closed meanwhile share it): what it could not end, if anything. */
  ending?: Promise<string | undefined>;
}

/**
 * One server of `mcpServers`, connected on demand.
 *
 * @example Not run as a doc test: it starts an MCP server (the gateway tests run them).
 * ```ts ignore
 * const upstream = new Upstream({ server, launcher, env, workspace, secret, graceMs: 2000 });
 * const tools = await upstream.listTools();
 * const result = await upstream.callTool("read_file", { path: "a.txt" }, { timeoutMs: 30_000 });
 * await upstream.close();
 * ```
 */
export class Upstream {
  readonly #options: UpstreamOptions;
  #client?: Client;
  #connecting?: Promise<Client>;
  #child?: Child;
  #starts: number[] = [];
  #tools?: Tool[];
  #closed = false;
  /** A Streamable HTTP server's transport, while connected: its session is ended at close. */
  #http?: StreamableHTTPClientTransport;
  /** Rejected at close: every wait of a start or a use races it, so that none outlives the close. */
  readonly #ending = Promise.withResolvers<never>();
  /** What the server asks while it runs (forms, sampling, roots), answered for the call that caused it. */
  readonly #questions: ServerQuestions;
  /** Its log messages and progress, to the call that caused them; the log level asked of it. */
  readonly #voice: ServerVoice;

  constructor(options: UpstreamOptions) {
    this.#options = options;
    this.#questions = new ServerQuestions(options.workspace, options.server.profile, options.server.args);
    this.#voice = new ServerVoice(options.server.name);
    // Rejected on purpose at close; whoever waits on it sees it, nobody need.
    this.#ending.promise.catch(() => {});
  }

  /** The server's name. */
  get name(): string {
    return this.#options.server.name;
  }

  /** The pid of the running stdio server's first process (bwrap, when confined), if one runs. */
  get pid(): number | undefined {
    return this.#child && !this.#child.exited ? this.#child.process.pid : undefined;
  }

  /** The connected client, the server started first when none runs. Throws {@linkcode UpstreamError}. */
  connect(): Promise<Client> {
    if (this.#closed) return Promise.reject(new UpstreamError("toolgate is ending"));
    if (this.#client !== undefined) return Promise.resolve(this.#client);
    // A close rejects the callers at once; the start itself ends what it started once it sees the close.
    return this.#untilClosed(this.#connecting ??= this.#start().finally(() => this.#connecting = undefined));
  }

  /** The connected client, if the server is connected now (reading it never starts the server). */
  get connected(): Client | undefined {
    return this.#closed ? undefined : this.#client;
  }

  /** `promise`, or the close's rejection once the upstream is closed, whichever comes first. */
  #untilClosed<T>(promise: Promise<T>): Promise<T> {
    return Promise.race([promise, this.#ending.promise]);
  }

  /** The server's tools (listed once per connection, and again after it said they changed). */
  async listTools(): Promise<Tool[]> {
    const client = await this.connect();
    if (this.#tools !== undefined) return this.#tools;
    // A server of resources or prompts only declares no tools (and answers tools/list "Method not found").
    if (client.getServerCapabilities()?.tools === undefined) return this.#tools = [];
    const tools: Tool[] = [];
    let cursor: string | undefined;
    try {
      do {
        const page = await this.#untilClosed(client.listTools(cursor === undefined ? undefined : { cursor }));
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor !== undefined && tools.length < 10_000);
    } catch (error) {
      if (this.#closed) throw new UpstreamError("toolgate is ending");
      throw new UpstreamError(`the server did not list its tools: ${oneLine(error)}`, true);
    }
    this.#tools = tools;
    this.#options.onListed?.(tools);
    return tools;
  }

  /**
   * Calls one of the server's tools; cancelling `signal` sends `notifications/cancelled` upstream (the SDK does).
   * Throws {@linkcode UpstreamError} when the server cannot be reached or ended during the call.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: {
      signal?: AbortSignal;
      timeoutMs: number;
      meta?: Readonly<Record<string, string>>;
      /** Who answers what the server asks while the call runs (`server_questions.ts`). */
      asking?: Omit<AskingCall, "timeoutMs">;
      onEvent?: (event: ToolEvent) => void;
      /** Run once the request is handed to the transport (its write goes first), while the server works. */
      whileWaiting?: () => void;
    },
  ): Promise<CallToolResult> {
    const client = await this.connect();
    // The server's progress for this call (a token of its own) and its logs meanwhile: the call's.
    const voice = this.#voice.open(options.onEvent);
    // The calling span's trace context in `params._meta` (MCP semantic conventions): the server's spans join it.
    const fields: Record<string, string> = { ...options.meta };
    if (voice.token !== undefined) fields.progressToken = voice.token;
    const meta = Object.keys(fields).length > 0 ? { _meta: fields } : {};
    const timeout = Number.isFinite(options.timeoutMs) ? options.timeoutMs : 2 ** 31 - 1;
    const done = options.asking && this.#questions.begin({ ...options.asking, timeoutMs: timeout });
    try {
      const answer = client.callTool({ name, arguments: args, ...meta }, undefined, {
        signal: options.signal,
        timeout,
      });
      // The SDK hands the request to the transport at once, whose write is the next microtask: this one follows it.
      if (options.whileWaiting !== undefined) queueMicrotask(options.whileWaiting);
      return await this.#untilClosed(answer) as CallToolResult;
    } finally {
      done?.();
      voice.close();
    }
  }

  /**
   * `use` of the connected client for a request that carries its asker's data but is no call (a read of a
   * resource, a prompt, a completion, a subscription): while it is in flight, the server's log messages and
   * questions cannot be told apart from its own, so they reach no call's caller (a question is refused), whoever
   * else's call is in flight; with `asking` (a prompt got for a caller that can answer), they go to that caller
   * as a call's do.
   */
  async aside<T>(use: (client: Client) => Promise<T>, asking?: AskingCall): Promise<T> {
    const client = await this.connect();
    const voice = this.#voice.open();
    const done = this.#questions.begin(asking);
    try {
      return await this.#untilClosed(use(client));
    } finally {
      done();
      voice.close();
    }
  }

  /**
   * A caller asks for log messages from `level` up: the server is asked for the least severe level any caller
   * asked (now when it runs and declares logging, and at each start), and each caller filters the rest.
   */
  setLogLevel(level: LogLevel): void {
    if (this.#voice.want(level) && this.#client !== undefined) this.#askLevel(this.#client);
  }

  /** Asks the connected server for the level the callers want, where it declares logging (not awaited). */
  #askLevel(client: Client): void {
    const level = this.#voice.level;
    if (level === undefined || client.getServerCapabilities()?.logging === undefined) return;
    client.setLoggingLevel(level).catch(() => {});
  }

  /** How many decisions the egress proxy made for the running server so far: a mark for {@linkcode refusedSince}. */
  get egressMark(): number {
    return this.#child?.launch.egress?.length ?? 0;
  }

  /** The egress proxy's decisions for the running server since `mark` (for the audit line of a call). */
  egressSince(mark: number): EgressDecision[] {
    return (this.#child?.launch.egress ?? []).slice(mark);
  }

  /**
   * What the model is told of the requests the egress proxy refused for a credential's placeholder since `mark`
   * (while one call ran; calls of one server that overlap share them).
   */
  refusedSince(mark: number): string[] {
    return this.egressSince(mark).flatMap((decision) =>
      decision.reason === undefined ? [] : [
        `toolgate's egress proxy refused a request of the MCP server to ${decision.host}:${decision.port}: ${decision.reason}`,
      ]
    );
  }

  /** Did the server's process end (it died, or was killed) since it was started? */
  get died(): boolean {
    return this.#child?.exited === true;
  }

  async #start(): Promise<Client> {
    const now = this.#options.now ?? (() => performance.now());
    const recent = this.#starts.filter((at) => now() - at < 60_000);
    if (recent.length >= MAX_STARTS_PER_MINUTE) {
      throw new UpstreamError(
        `the server was started ${recent.length} times within a minute and ended each time; toolgate starts it ` +
          "again when that minute has passed",
        true,
      );
    }
    this.#starts = [...recent, now()];
    const { server } = this.#options;
    const missing = [...server.secrets, ...server.credentials.map((c) => c.secret)]
      .find((name) => this.#options.secret(name) === undefined);
    if (missing !== undefined) {
      throw new UpstreamError(
        `the server needs the secret ${missing}, which is neither in toolgate's secret store nor in its ` +
          `environment (toolgate secrets set ${missing})`,
      );
    }
    // Declared so that the server offers the tools that ask (its answers come from the caller of each call).
    const client = new Client({ name: "toolgate", version: "0.1.0" }, {
      capabilities: UPSTREAM_CAPABILITIES,
      // The tasks of questions asked as tasks, which the server polls (each held while its call runs).
      taskStore: this.#questions.tasks,
    });
    this.#questions.install(client);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      this.#tools = undefined;
      this.#options.onToolsChanged?.();
    });
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => {
      this.#questions.completed(notification.params.elicitationId);
    });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
      this.#voice.log(notification.params);
    });
    // In place of the SDK's own, which forgets a call's token as its answer arrives, before the progress sent just
    // ahead of that answer is handled: toolgate's tokens are its own, and a call's is forgotten once it ended.
    client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
      this.#voice.progress(notification.params);
    });
    if (server.transport === "http") {
      const headers = Object.fromEntries(
        Object.entries(server.headers).map((
          [key, text],
        ) => [
          key,
          text.replace(HEADER_SECRET, (_, name: string) => this.#options.secret(name.toUpperCase()) ?? ""),
        ]),
      );
      const transport = new StreamableHTTPClientTransport(new URL(server.url!), { requestInit: { headers } });
      try {
        // A server that refuses a session is spoken to in 2026-07-28 (era_bridge.ts).
        await this.#untilClosed(
          client.connect(new EraBridge(transport, { http: { url: new URL(server.url!), headers } })),
        );
      } catch (error) {
        if (this.#closed) {
          await settlesWithin(client.close().catch(() => {}), SESSION_END_WAIT_MS);
          throw new UpstreamError("toolgate is ending");
        }
        const mismatch = revisionMismatch(error);
        if (mismatch !== undefined) throw new UpstreamError(mismatch);
        throw new UpstreamError(
          `the server at ${server.url} cannot be reached: ${networkReason(error)}`,
          true,
        );
      }
      transport.onclose = () => this.#lost(client);
      this.#http = transport;
      this.#askLevel(client);
      return this.#connected(client);
    }
    // A server whose connection closed before its process ended (it closed stdout, or its end is not reaped yet)
    // is ended before another is started: never two of one server.
    const before = this.#child;
    if (before !== undefined && !before.exited) await this.#end(before);
    const child = await this.#spawn();
    if (this.#closed) {
      // Closed while it was being started: close() found no process to end yet.
      await this.#end(child);
      throw new UpstreamError("toolgate is ending");
    }
    const transport = new ChildTransport(child.process);
    // Its connection gone (its stdout ended) is enough: the next use starts it again rather than finding a client
    // that is no longer connected.
    client.onclose = () => this.#lost(client);
    const exit = child.process.status.then((status) => {
      this.#lost(client);
      return status;
    });
    const startSec = server.startTimeoutSec ?? START_TIMEOUT_SEC;
    try {
      await this.#untilClosed(Promise.race([
        // The SDK's own default is a minute per request: a server that hangs at start is said at once instead.
        client.connect(new EraBridge(transport), { timeout: startSec * 1000 }),
        exit.then((status) => {
          throw new Error(`it ended at start (exit ${status.code})`);
        }),
      ]));
    } catch (error) {
      const timedOut = isRecord(error) && error.code === -32001;
      // A server that ended by itself is said by its exit and its last stderr lines, which may land a while after
      // the SDK's own "Connection closed" on a loaded machine (the pipe closes before the status is reaped): waited
      // for, never longer than two seconds (a server that closed its stdout and lives on is ended below).
      const ended = timedOut ? undefined : await Promise.race([
        exit.then(async (status) => (await transport.stderrEnded, status), () => undefined),
        new Promise<undefined>((resolve) => after(2000, () => resolve(undefined))),
      ]);
      await this.#end(child);
      if (this.#closed) throw new UpstreamError("toolgate is ending");
      const mismatch = revisionMismatch(error);
      if (mismatch !== undefined) throw new UpstreamError(mismatch);
      const what = timedOut
        ? `it did not answer initialize within ${startSec} s (its startTimeoutSec)`
        : ended !== undefined && ended.signal === null
        ? `it ended at start (exit ${ended.code})`
        : oneLine(error);
      const refusedHosts = (child.launch.egress ?? []).filter((d) => !d.allowed).map((d) => d.host);
      const facts = {
        command: server.command ?? "",
        stderr: transport.stderr,
        refusedHosts,
        view: child.launch.view,
      };
      throw new UpstreamError(startFailure(what, facts), true);
    }
    this.#askLevel(client);
    return this.#connected(client);
  }

  /** `client` is the connection now; whoever wants to know of each start is told. */
  #connected(client: Client): Client {
    this.#client = client;
    this.#options.onConnected?.(client);
    return client;
  }

  /** The connection is gone (the process died, the HTTP session closed): the next use starts it again. */
  #lost(client: Client): void {
    if (this.#client === client) {
      this.#client = undefined;
      this.#http = undefined;
      this.#tools = undefined;
    }
  }

  /** Starts the stdio server under its profile, as the launcher starts a confined tool. */
  async #spawn(): Promise<Child> {
    const { env: parent, launcher, workspace } = this.#options;
    // A package server (npx, uvx, ...) runs the install `toolgate trust` made and pinned, never a download.
    const server = installedServer(this.#options.server, { env: parent, manifest: this.#options.manifest });
    if (typeof server === "string") throw new UpstreamError(server);
    const path = parent.PATH ?? FALLBACK_PATH;
    const command = server.command!;
    const program = command.includes("/")
      ? (isAbsolute(command) ? command : resolve(workspace, command))
      : findProgram(command, path);
    if (program === undefined) {
      throw new UpstreamError(`the program ${command} is not found on PATH (${path})`);
    }
    const spec: ToolSpec = Object.freeze({
      index: -1,
      name: `mcp__${server.name}`,
      command: Object.freeze([program, ...server.args]),
      program,
      args: server.args,
      envPassthrough: [],
      secrets: server.secrets,
      credentials: server.credentials,
      asks: [],
      readOnly: false,
      concurrent: false,
      alwaysLoad: false,
      profile: server.profile,
      present: true,
    });
    // Bound credentials: placeholders new for this start of the server; the egress proxy holds the values.
    const credentials: CallCredential[] = server.credentials.flatMap((binding) => {
      const value = this.#options.secret(binding.secret);
      return value === undefined || value === "" ? [] : [{ binding, value, placeholder: newPlaceholder() }];
    });
    const launch = await launcher.launch(spec, undefined, credentials);
    if (!launch.ok) throw new UpstreamError(launch.envelope.message.replace(/^The tool/, "The server"));
    if (this.#closed) {
      // Closed while its sandbox was being set up: nothing is started.
      launcher.release(launch);
      throw new UpstreamError("toolgate is ending");
    }
    const env: Record<string, string> = { PATH: path };
    if (parent.HOME !== undefined) env.HOME = parent.HOME;
    for (const name of server.profile.env) if (parent[name] !== undefined) env[name] = parent[name];
    Object.assign(env, server.env);
    for (const name of server.secrets) env[name] = this.#options.secret(name)!;
    if (launch.unregister) Object.assign(env, PROXY_ENV, launch.env ?? {});
    const group = launcher.groupLauncher(launch);
    let process: Deno.ChildProcess;
    try {
      process = new Deno.Command(group[0] ?? launch.program, {
        args: group.length > 0 ? [...group.slice(1), launch.program, ...launch.args] : [...launch.args],
        env,
        clearEnv: true,
        cwd: workspace,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
        // Out of toolgate's process group, confined too: the terminal's Ctrl-C stops the call (and the server is
        // told to cancel it), not the server, which toolgate ends itself (bwrap's --die-with-parent if it dies).
        detached: group.length === 0,
      }).spawn();
    } catch (error) {
      launcher.release(launch);
      throw new UpstreamError(`the server cannot start: ${oneLine(error)}`);
    }
    const child: Child = {
      process,
      launch,
      group: !launch.confined,
      forget: () => {},
      exited: false,
      settled: Promise.resolve(),
    };
    // Its tree is gone once its first process exited and the launch's end found nothing of it left (a process
    // that made a session of its own): only then is its cgroup slot free and its end reported.
    child.settled = process.status.then(async (status) => {
      child.exited = true;
      await launch.tree?.settle(process.pid, status);
      child.forget();
      launcher.release(launch);
    });
    child.forget = this.#options.registry?.track({
      end: (signal) => this.#signal(child, signal),
      done: child.settled,
    }) ?? (() => {});
    return this.#child = child;
  }

  /**
   * Sends `signal` to the server's tree: every process of its cgroup or its pid namespace where its launch says
   * so, else its process group (unconfined) or bwrap.
   */
  async #signal(child: Child, signal: "SIGTERM" | "SIGKILL"): Promise<void> {
    if (child.exited) return;
    if (child.launch.tree !== undefined) await child.launch.tree.signal(child.process.pid, signal);
    else if (child.group) await signalGroup(child.process.pid, signal);
    else {
      try {
        child.process.kill(signal);
      } catch {
        // Gone already.
      }
    }
  }

  /**
   * Ends a child's whole tree: SIGTERM, a grace period, SIGKILL (a few rounds); resolves once it is gone, or, each
   * wait bounded, with what it could not end (a process the kernel has not ended, in an uninterruptible sleep).
   */
  #end(child: Child): Promise<string | undefined> {
    return child.ending ??= this.#endTree(child);
  }

  async #endTree(child: Child): Promise<string | undefined> {
    const pid = child.process.pid;
    if (!child.exited) {
      await this.#signal(child, "SIGTERM");
      let gone = await settlesWithin(child.process.status, this.#options.graceMs);
      for (let round = 0; !gone && round < KILL_ROUNDS; round++) {
        await this.#signal(child, "SIGKILL");
        gone = await settlesWithin(child.process.status, KILL_WAIT_MS);
      }
      if (!gone) {
        return `the MCP server ${this.name}'s process ${pid} did not end after SIGKILL (${KILL_ROUNDS} times)`;
      }
      // An unconfined server's group may outlive its leader: end what is left of it.
      if (child.group) await signalGroup(pid, "SIGKILL");
    }
    if (!await settlesWithin(child.settled, SETTLE_WAIT_MS)) {
      return `what the MCP server ${this.name}'s process ${pid} left did not end within ${SETTLE_WAIT_MS} ms`;
    }
    return undefined;
  }

  /**
   * Ends the server (its whole tree) and closes the connection; later calls are refused. A stdio server is ended
   * as the MCP specification asks: its stdin closed first (so that it reads what was sent last, a cancellation
   * among it, and ends on its own), then SIGTERM when it has not ended within {@linkcode EOF_WAIT_MS}, then
   * SIGKILL after the grace period. Every wait is bounded: it resolves with what it could not end, if anything (a
   * process the kernel has not ended after SIGKILL), else `undefined`. A start in flight and the calls waiting on
   * it are refused at once.
   */
  async close(): Promise<string | undefined> {
    this.#closed = true;
    this.#ending.reject(new UpstreamError("toolgate is ending"));
    const starting = this.#connecting;
    const client = this.#client;
    this.#client = undefined;
    const http = this.#http;
    this.#http = undefined;
    // A Streamable HTTP session is ended with a DELETE, as the specification asks, which closes the server's
    // standing stream: the SDK client's abort alone could leave its connection open and the process alive.
    if (http !== undefined && client !== undefined) {
      await settlesWithin(http.terminateSession().catch(() => {}), SESSION_END_WAIT_MS);
    }
    // Closing a connection that is gone rejects; one whose server reads nothing more is not waited for past the
    // EOF wait (its end below breaks the pipe).
    if (client !== undefined) await settlesWithin(client.close().catch(() => {}), EOF_WAIT_MS);
    // A start in flight ends what it started itself once it sees the close (its sandbox may still be set up).
    if (starting !== undefined) await settlesWithin(starting.catch(() => {}), START_END_WAIT_MS);
    const child = this.#child;
    if (child === undefined) return undefined;
    if (!child.exited && child.ending === undefined) {
      await settlesWithin(child.process.status, Math.min(EOF_WAIT_MS, this.#options.graceMs));
    }
    // Also once its first process exited by itself: what it left in its cgroup goes before close resolves.
    return await this.#end(child);
  }
}

/** Waits for `promise` at most `ms`: whether it settled (fulfilled) in that time. The timer goes with it. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let cancel: CancelTimer = () => {};
  const settled = await Promise.race([
    promise.then(() => true),
    new Promise<false>((done) => cancel = after(ms, () => done(false))),
  ]);
  cancel();
  return settled;
}

/** An error's message on one line. */
export function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s+/g, " ").trim().slice(0, 500);
}
