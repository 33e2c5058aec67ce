/** The `serve` command's work: the manifest's tools over MCP (loaded only when serving). @module */
import denoJson from "../../deno.json" with { type: "json" };
import {
  EXIT,
  expectPositionals,
  flag,
  type Io,
  numberOption,
  type ParsedArgs,
  parseNumber,
  SIGNAL_EXIT,
  type StopSignal,
  stopSignals,
  stringOption,
  UsageError,
} from "./cli.ts";
import { type HttpServing, serveHttp } from "../mcp/http_server.ts";
import { SESSION_LIMITS } from "../mcp/limits.ts";
import { ToolService } from "../mcp/server.ts";
import { CALL_LIMITS } from "../mcp/limits.ts";
import { serveStdio } from "../mcp/stdio.ts";
import type { Executor } from "../run/executor.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import type { JobEvent } from "../run/jobs.ts";
import { JOB_CAPS, type JobCaps } from "../run/job_owners.ts";
import type { ProcessRegistry } from "../process/process_tree.ts";
import { approvalSettings } from "./approval_options.ts";
import { executorFromArgs, executorSettings } from "./executor_options.ts";
import type { StartedConsole } from "../console/start.ts";
import { loadForCommand, manifestLocationOf, workspaceOf } from "./load.ts";
import type { ManifestContent } from "../manifest/trust.ts";
import { isOwnManifest } from "../manifest/manifest_location.ts";
import { BELT_MANIFEST_PATH } from "../manifest/tool_belt.ts";
import { ManifestReload } from "./serve_reload.ts";
import { stopReason } from "../process/stop.ts";
import { consolePort, listenProblem, openConsole } from "./console_option.ts";

/** Serves the tools over MCP for `toolgate serve`. */
export async function serveMcp(parsed: ParsedArgs, io: Io): Promise<number> {
  expectPositionals(parsed, 0, "serve");
  const http = httpSettings(parsed, io);
  const consoleAt = consolePort(parsed, "serve");
  const limits = callLimits(parsed);
  const jobCaps = jobLimits(parsed);
  // Never asked here: stdin is the protocol's (an untrusted manifest refuses to start, naming `toolgate trust`).
  let trusted: ManifestContent | undefined;
  const loaded = await loadForCommand(parsed, io, {
    runsTools: "refuse",
    onTrusted: (content) => trusted = content,
  });
  if (!loaded) return EXIT.failure;
  const serverName = stringOption(parsed, "server");
  const manifest = onlyServer(loaded, serverName);
  const approval = approvalSettings(parsed, manifest, "serve");
  // The server's own shutdown answers the calls in flight before the trees end: the registry must not exit first.
  // The operator's view of the jobs: one line when each starts and ends (their pids: see jobLine).
  let onJob: (event: JobEvent) => void = () => {};
  // Filled once the service is up: a server's tools may change while the executor is still being made.
  const live: { service?: ToolService } = {};
  const settings = await executorSettings(parsed, io, "serve");
  const { executor, registry, redact } = await executorFromArgs(parsed, io, manifest, "serve", settings, {
    handleSignals: false,
    jobCaps,
    // Calls come at once, from many clients: their starts must not hold the thread that answers them.
    spawnThread: true,
    onJob: (event) => onJob(event),
    onAudit: () => watching?.hub.audited(),
    // An MCP server behind the gateway changed its tools: the clients are told.
    onToolsChanged: () => live.service?.toolsChanged(),
  });
  const onError = (message: string) => void io.stderr(message + "\n");
  let watching: StartedConsole | undefined;
  onJob = (event) => {
    void io.stderr(jobLine(event, redact) + "\n");
    watching?.hub.changed();
  };
  if (consoleAt !== undefined) {
    watching = await openConsole(io, { port: consoleAt, parsed, settings, executor, redact, jobs: executor });
    if (watching === undefined) {
      await executor.close();
      return EXIT.failure;
    }
  }
  const service = live.service = new ToolService({
    executor,
    redact,
    approval,
    version: denoJson.version,
    maxCalls: limits.maxCalls,
    maxSessionCalls: limits.maxSessionCalls,
    onError,
    allowStoreSecrets: flag(parsed, "allow-store-secrets"),
    watch: watching?.hub,
    // One server served (a host's entry per server): its tools by their own names, as the host had them.
    server: stringOption(parsed, "server"),
  });
  // A manifest the user trusts again takes the old one's place where it can (serve_reload.ts); the belt cannot change.
  const location = manifestLocationOf(parsed, io);
  const reload = location.path === BELT_MANIFEST_PATH || isOwnManifest(location.path)
    ? undefined
    : new ManifestReload({
      parsed,
      io,
      location,
      workspace: workspaceOf(parsed, io),
      manifest,
      content: trusted,
      executor,
      toolsChanged: (names) => {
        service.forgetApprovals(names);
        service.toolsChanged();
      },
      narrow: (next) => onlyServer(next, serverName),
      pooled: settings.pool !== undefined,
    });
  reload?.watch();
  const stop = stopSignals();
  const signal = stop.next();
  try {
    let stopped: StopSignal | undefined;
    if (http) {
      let serving: HttpServing;
      try {
        serving = serveHttp(service, { ...http, onError });
      } catch (error) {
        const problem = listenProblem(error, http);
        if (problem === undefined) throw error;
        await io.stderr(`toolgate: ${problem}\n`);
        return EXIT.failure;
      }
      await io.stderr(`toolgate: MCP server listening on ${serving.url}\n`);
      stopped = await Promise.race([signal, serving.finished.then(() => undefined)]);
      await shutdown(service, registry, serving.close, executor, stopped && stopReason(stopped));
    } else {
      const serving = await serveStdio(service);
      stopped = await Promise.race([signal, serving.ended.then(() => undefined)]);
      // The host closed stdin (or went away): the calls in flight end as at a signal, each with its line.
      await shutdown(service, registry, serving.close, executor, stopReason(stopped ?? "stdin_closed"));
    }
    return stopped === undefined ? EXIT.ok : SIGNAL_EXIT[stopped];
  } finally {
    stop.dispose();
    await reload?.close();
    await watching?.serving.close();
  }
}

/**
 * The manifest as `--server NAME` serves it: that MCP server alone, none of the manifest's own tools (a host
 * starts one toolgate per server, and each shows that server's tools only).
 */
function onlyServer(manifest: Manifest, name: string | undefined): Manifest {
  if (name === undefined) return manifest;
  const server = manifest.servers.find((spec) => spec.name === name);
  if (server === undefined) {
    const names = manifest.servers.map((spec) => spec.name);
    throw new UsageError(
      `--server ${JSON.stringify(name)}: ${manifest.path} has no MCP server of that name` +
        (names.length === 0 ? " (it has none)" : ` (it has ${names.join(", ")})`),
      "serve",
    );
  }
  const tools = manifest.tools.filter((tool) => tool.upstream?.server === name);
  return { ...manifest, tools, byName: new Map(tools.map((tool) => [tool.name, tool])), servers: [server] };
}

/** `--max-calls` and `--max-session-calls`, checked. */
function callLimits(parsed: ParsedArgs): { maxCalls: number; maxSessionCalls: number } {
  const maxCalls = numberOption(parsed, "max-calls", CALL_LIMITS.maxCalls, "serve", { integer: true });
  const maxSessionCalls = numberOption(parsed, "max-session-calls", CALL_LIMITS.maxSessionCalls, "serve", {
    integer: true,
  });
  return { maxCalls, maxSessionCalls };
}

/** `--max-jobs` and `--max-session-jobs`, checked. */
function jobLimits(parsed: ParsedArgs): JobCaps {
  const total = numberOption(parsed, "max-jobs", JOB_CAPS.total, "serve", { integer: true });
  const perOwner = numberOption(parsed, "max-session-jobs", JOB_CAPS.perOwner, "serve", { integer: true });
  return { total, perOwner };
}

/** The most characters of a job's command in its log line. */
const JOB_LINE_COMMAND = 160;

/**
 * The operator's line of a job's start or end, on stderr: the job, its session (the first characters of the
 * session's own id, which no client is told), its pid (a process group: `kill -TERM -- -PID` ends its tree), what
 * it runs (redacted, cut), and how it ended.
 */
function jobLine(event: JobEvent, redact: (text: string) => string): string {
  const session = event.scope === "" ? "" : ` of session ${event.scope.slice(0, 8)}`;
  const head = `toolgate: job ${event.id}${session} (pid ${event.pid})`;
  if (event.kind === "ended") return `${head} ended: ${event.ending}`;
  const shown = redact(event.command);
  const cut = shown.length > JOB_LINE_COMMAND ? `${shown.slice(0, JOB_LINE_COMMAND)}...` : shown;
  return `${head} started: ${cut}`;
}

/** What `--http` and the options that go with it say, checked. */
interface HttpSettings {
  readonly hostname: string;
  readonly port: number;
  readonly token: string;
  readonly maxSessions: number;
  readonly sessionIdleMs: number;
  readonly pollAfterMs: number;
}

/** `--http`, `--host`, the token and the session limits, checked; `undefined` for stdio. */
function httpSettings(parsed: ParsedArgs, io: Io): HttpSettings | undefined {
  const port = stringOption(parsed, "http");
  const host = stringOption(parsed, "host");
  const tokenOption = stringOption(parsed, "token");
  if (port === undefined) {
    for (const name of ["host", "token", "max-sessions", "session-idle", "sse-poll"]) {
      if (stringOption(parsed, name) !== undefined) throw new UsageError(`--${name} needs --http`, "serve");
    }
    return undefined;
  }
  const number = parseNumber(port, "--http", "serve", { integer: true, min: 0, exclusive: false });
  if (number > 65535) {
    throw new UsageError(`--http must be a port number 0-65535 (got ${JSON.stringify(port)})`, "serve");
  }
  const hostname = host ?? "127.0.0.1";
  if (hostname.trim() === "") throw new UsageError("--host must not be empty", "serve");
  const token = (tokenOption ?? io.env.TOOLGATE_MCP_TOKEN ?? "").trim();
  if (token === "") {
    throw new UsageError(
      "--http needs a bearer token: set TOOLGATE_MCP_TOKEN (or pass --token); clients send it as " +
        "`Authorization: Bearer TOKEN`",
      "serve",
    );
  }
  const maxSessions = numberOption(parsed, "max-sessions", SESSION_LIMITS.maxSessions, "serve", {
    integer: true,
  });
  const sessionIdleMs = numberOption(parsed, "session-idle", SESSION_LIMITS.idleSec, "serve") * 1000;
  // 0 (the default) never closes a call's stream; a positive SEC closes it after SEC, and the client resumes.
  const pollAfterMs = numberOption(parsed, "sse-poll", 0, "serve", { exclusive: false }) * 1000;
  return { hostname, port: number, token, maxSessions, sessionIdleMs, pollAfterMs };
}

/** How long past the kill grace a stop waits for the calls' lines before it gives up on them. */
const LINES_GRACE_MS = 5000;

/**
 * Stops the service (the calls in flight are stopped and answered, within the kill grace and a second), closes
 * the transport, ends any tree still registered, and waits until every call that ran has its audit line.
 */
async function shutdown(
  service: ToolService,
  registry: ProcessRegistry,
  close: () => Promise<void>,
  executor: Executor,
  reason: unknown,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((resolve) => timer = setTimeout(resolve, registry.graceMs + 1000));
  await Promise.race([service.stop(reason), grace]);
  clearTimeout(timer);
  await close();
  await registry.endAll();
  // A call slower to stop than the grace above still writes its line before toolgate exits (its tree is gone).
  const lines = new Promise<void>((resolve) =>
    timer = setTimeout(resolve, registry.graceMs + LINES_GRACE_MS)
  );
  await Promise.race([executor.idle(), lines]);
  clearTimeout(timer);
  // A worker pool's connection is let go of (its calls were answered above).
  await executor.close();
}
