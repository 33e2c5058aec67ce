/**
 * The options every command that runs tools shares (`call`, the agent loop, `serve`), and the executor they
 * describe, so that the three callers cannot drift.
 *
 * @module
 */
import { dirname, resolve } from "../base/paths.ts";
import {
  choiceOption,
  flag,
  type Io,
  numberOption,
  type OptionSpec,
  type ParsedArgs,
  stringOption,
  UsageError,
} from "./cli.ts";
import type { Envelope } from "../contract.ts";
import type { Executor } from "../run/executor.ts";
import type { ExecutorOptions } from "../run/call_options.ts";
import type { Redactor } from "../state/redact.ts";
import { EXECUTOR_DEFAULTS, MAX_OUTPUT_BYTES, outputCapProblem } from "../process/executor_defaults.ts";
import { SANDBOX_MODES, type SandboxMode } from "../sandbox/sandbox.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import { auditDirFor, secretStoreFile, StateDirError, stateRoot } from "../state/state.ts";
import type { ProcessRegistry } from "../process/process_tree.ts";
import { parsePoolUrl, type PoolAddress, poolKeyFile } from "../pool/address.ts";
import type { PoolSigningKey } from "../pool/signing.ts";

/** The options of a command that runs tools. */
export const EXECUTOR_OPTIONS: Record<string, OptionSpec> = {
  "tool-timeout": {
    type: "string",
    value: "SEC",
    help: `default per-call timeout (default ${EXECUTOR_DEFAULTS.timeoutSec}); a tool's timeoutSec wins`,
  },
  "kill-grace": {
    type: "string",
    value: "SEC",
    help: `time between SIGTERM and SIGKILL when a tool is stopped (default ${
      EXECUTOR_DEFAULTS.graceMs / 1000
    })`,
  },
  "max-output-bytes": {
    type: "string",
    value: "N",
    help:
      `most bytes kept of each of stdout and stderr (default ${EXECUTOR_DEFAULTS.maxOutputBytes}, at most ${MAX_OUTPUT_BYTES}); past it the tool is stopped`,
  },
  cwd: { type: "string", value: "DIR", help: "the tools' working directory (default: the current one)" },
  "audit-dir": {
    type: "string",
    value: "DIR",
    help:
      "where the audit log goes, a folder of your own with mode 0700 (default: the workspace's own folder under $XDG_STATE_HOME/toolgate, else ~/.local/state/toolgate)",
  },
  "no-audit": { type: "boolean", help: "write no audit log" },
  sandbox: {
    type: "string",
    value: "MODE",
    help:
      "auto (bubblewrap when it works; default, env TOOLGATE_SANDBOX), require, off, or unfiltered (as auto, without the seccomp filter)",
  },
  executor: {
    type: "string",
    value: "URL",
    help:
      "run the calls on a worker pool (nats://HOST:PORT or tls://HOST:PORT; `toolgate worker` serves it) instead of here; `local` (the default) runs them here",
  },
  "pool-key-file": {
    type: "string",
    value: "PATH",
    help:
      "the worker pool's signing key, a file of yours with mode 0600 (default env TOOLGATE_POOL_KEY_FILE, else the secret TOOLGATE_POOL_KEY)",
  },
};

/** What a command's executor options describe, checked. */
export interface ExecutorSettings {
  readonly timeoutSec: number;
  readonly graceMs: number;
  readonly maxOutputBytes: number;
  readonly cwd: string;
  readonly auditDir: string | null;
  /** For the default audit folder: the folder above toolgate's own ones (the state folder's parent). */
  readonly auditTrusted?: string;
  readonly sandbox: SandboxMode;
  /** The worker pool that runs the calls (`--executor`), or none: they run here. */
  readonly pool?: PoolAddress;
}

/**
 * Reads and checks a command's executor options; throws {@linkcode UsageError}. A command calls it before it
 * loads the manifest, so that a mistake on the command line is a usage error whatever the manifest holds.
 */
export async function executorSettings(
  parsed: ParsedArgs,
  io: Io,
  command: string,
): Promise<ExecutorSettings> {
  const timeoutSec = numberOption(parsed, "tool-timeout", EXECUTOR_DEFAULTS.timeoutSec, command);
  const graceMs =
    numberOption(parsed, "kill-grace", EXECUTOR_DEFAULTS.graceMs / 1000, command, { exclusive: false }) *
    1000;
  const maxOutputBytes = numberOption(parsed, "max-output-bytes", EXECUTOR_DEFAULTS.maxOutputBytes, command, {
    integer: true,
  });
  const capProblem = outputCapProblem(maxOutputBytes);
  if (capProblem !== undefined) {
    throw new UsageError(`--max-output-bytes ${maxOutputBytes} ${capProblem}`, command);
  }
  const cwdOption = stringOption(parsed, "cwd");
  const cwd = cwdOption === undefined ? io.cwd : resolve(io.cwd, cwdOption);
  if (cwdOption !== undefined) {
    const info = await Deno.stat(cwd).catch((error) => error);
    if (info instanceof Deno.errors.NotCapable) {
      throw new UsageError(
        `--cwd ${JSON.stringify(cwdOption)} is outside what toolgate may read (--allow-read)`,
        command,
      );
    }
    if (info instanceof Error || !info.isDirectory) {
      throw new UsageError(`--cwd ${JSON.stringify(cwdOption)} is not a directory`, command);
    }
  }
  const auditOption = stringOption(parsed, "audit-dir");
  let auditDir: string | null = null;
  let auditTrusted: string | undefined;
  if (flag(parsed, "no-audit")) {
    // No audit log, no state folder needed.
  } else if (auditOption !== undefined) {
    auditDir = resolve(io.cwd, auditOption);
  } else {
    // Per workspace (the tools' cwd, by its real path), in the user's state folder: never where a tool writes.
    try {
      const workspace = await Deno.realPath(cwd).catch((error) => {
        throw new StateDirError(`cannot tell where the workspace ${cwd} is: ${error.message}`);
      });
      auditDir = auditDirFor(io.env, workspace);
      auditTrusted = dirname(stateRoot(io.env));
    } catch (error) {
      throw auditRefused(error);
    }
  }
  const sandbox = choiceOption(parsed, "sandbox", SANDBOX_MODES, io.env.TOOLGATE_SANDBOX ?? "auto", command);
  return {
    timeoutSec,
    graceMs,
    maxOutputBytes,
    cwd,
    auditDir,
    auditTrusted,
    sandbox: sandbox as SandboxMode,
    pool: poolOption(parsed, command),
  };
}

/** `--executor`: a worker pool's address, or `undefined` for `local` (and when it is not given). */
function poolOption(parsed: ParsedArgs, command: string): PoolAddress | undefined {
  const executor = stringOption(parsed, "executor");
  if (executor === undefined || executor === "local") return undefined;
  const address = parsePoolUrl(executor);
  if (typeof address === "string") {
    throw new UsageError(`--executor is local or a pool's URL, which ${address}`, command);
  }
  return address;
}

/**
 * The worker pool's signing key of a command (`--pool-key-file`, `TOOLGATE_POOL_KEY_FILE`, the secret store), or
 * `undefined` when none is set up; throws {@linkcode UsageError} for a key file toolgate may not use.
 */
export async function poolKeyFromArgs(
  parsed: ParsedArgs,
  io: Io,
  command: string,
): Promise<import("../pool/key.ts").PoolKey | undefined> {
  // Loaded only by a command that uses a pool.
  const { loadPoolKey, PoolKeyError } = await import("../pool/key.ts");
  try {
    return await loadPoolKey(poolKeyFile(stringOption(parsed, "pool-key-file"), io.env, io.cwd), io.env);
  } catch (error) {
    if (error instanceof PoolKeyError) throw new UsageError(error.message, command);
    throw error;
  }
}

/** The signing key a caller with `--executor` needs: a clear usage error when there is none. */
async function callerPoolKey(
  parsed: ParsedArgs,
  io: Io,
  command: string,
  pool: PoolAddress,
): Promise<PoolSigningKey> {
  const key = await poolKeyFromArgs(parsed, io, command);
  if (key !== undefined) return key.key;
  const { POOL_KEY_HELP } = await import("../pool/key.ts");
  throw new UsageError(
    `--executor ${pool.shown} needs the pool's signing key (workers run only calls signed with it): ${POOL_KEY_HELP}`,
    command,
  );
}

/** A refused audit folder or key, said with the ways out; anything else unchanged. */
function auditRefused(error: unknown): unknown {
  if (!(error instanceof StateDirError)) return error;
  return new StateDirError(
    `no audit log can be kept: ${error.message}. Fix that, name another folder with --audit-dir DIR ` +
      "(your own, mode 0700), or run with --no-audit.",
  );
}

/**
 * Makes and checks the audit folder and the digest key before any call: a folder or key toolgate may not use is
 * refused at start (exit 1, naming it and the fix), never followed or repaired.
 */
async function prepareAudit(
  settings: ExecutorSettings,
  env: Readonly<Record<string, string>>,
): Promise<Uint8Array | undefined> {
  if (settings.auditDir === null) return undefined;
  const { loadAuditKey, prepareAuditDir } = await import("../state/audit_log.ts");
  try {
    prepareAuditDir(settings.auditDir, settings.auditTrusted);
    return loadAuditKey(env);
  } catch (error) {
    throw auditRefused(error);
  }
}

/**
 * Writes the audit line of a call that was refused before any executor was made (a manifest the user has not
 * trusted): the same line as every refusal's, in the same log, with `facts` added. Nothing without a log.
 *
 * @example Not run as a doc test: a fragment of a command, with its settings, Io and envelope in scope.
 * ```ts ignore
 * await auditUnrun(settings, io, "greet", "{}", envelope, { trust: "untrusted" });
 * ```
 */
export async function auditUnrun(
  settings: ExecutorSettings,
  io: Io,
  tool: string,
  argsText: string,
  envelope: Envelope,
  facts: Readonly<Record<string, string>> = {},
): Promise<void> {
  const key = await prepareAudit(settings, io.env);
  if (key === undefined || settings.auditDir === null) return;
  const [{ AuditTrail }, { redactionFor }] = await Promise.all([
    import("../run/audit_trail.ts"),
    import("../state/redact.ts"),
  ]);
  const trail = new AuditTrail({
    dir: settings.auditDir,
    key,
    env: io.env,
    redact: redactionFor(io.env, []).redact,
    onWarning: (message) => void io.stderr(message + "\n"),
    clock: () => new Date(),
    workspace: settings.cwd,
    cwd: settings.cwd,
  });
  await trail.unrun(tool, argsText, envelope, facts);
  trail.close();
}

/**
 * The values of toolgate's secret store, when there is one (its module loads only then): what tools that declare
 * them receive, and what is redacted everywhere. A store that cannot be read is said once and left out: tools
 * that need one of its secrets then answer `unavailable` with `credential`.
 */
async function storedSecrets(io: Io): Promise<Record<string, string>> {
  try {
    // A look first: without a store (or a place for one), start-up loads none of its code.
    try {
      Deno.lstatSync(secretStoreFile(io.env));
    } catch {
      return {};
    }
    const { SecretStore } = await import("../state/secret_store.ts");
    return await new SecretStore({ env: io.env }).values();
  } catch (error) {
    if (!(error instanceof StateDirError)) throw error;
    await io.stderr(`toolgate: warning: the secret store is not used: ${error.message}\n`);
    return {};
  }
}

/** How a command's executor lives beside the command. */
export interface ExecutorLife {
  /** False for a command that shuts down by itself on SIGINT/SIGTERM (then it must call `registry.endAll`). */
  readonly handleSignals?: boolean;
  /** False for a command that exits when its one call ends (`call`): no background jobs. */
  readonly jobs?: boolean;
  /** The caps on background jobs running at once (`serve`: per session and across sessions). */
  readonly jobCaps?: ExecutorOptions["jobCaps"];
  /** Told when a background job starts and ends (`serve` prints a line for its operator). */
  readonly onJob?: ExecutorOptions["onJob"];
  /** Told after each audit line is written. */
  readonly onAudit?: ExecutorOptions["onAudit"];
  /** Told when an MCP server's tools changed and were checked (`serve` tells its clients). */
  readonly onToolsChanged?: ExecutorOptions["onToolsChanged"];
  /** False: the command connects the MCP servers itself (`trust`). */
  readonly gateway?: boolean;
  /** Start the tools from a thread of their own (`serve`, `worker`: long-lived, calls at once; not a pool's caller). */
  readonly spawnThread?: boolean;
  /** The tools the command will call, when it knows (`call`): the start's warnings speak of those only. */
  readonly tools?: readonly string[];
}

/** An executor and the registry of its running trees, from a command's options (checked already, or now). */
export async function executorFromArgs(
  parsed: ParsedArgs,
  io: Io,
  manifest: Manifest,
  command: string,
  settings?: ExecutorSettings,
  life: ExecutorLife = {},
): Promise<{ executor: Executor; registry: ProcessRegistry; redact: Redactor }> {
  const checked = settings ?? await executorSettings(parsed, io, command);
  const { timeoutSec, graceMs, maxOutputBytes, cwd, auditDir, sandbox } = checked;
  const auditKey = await prepareAudit(checked, io.env);
  // Loaded when a command runs tools, not when it starts: start-up pays for what the command uses.
  const [{ Executor }, { ProcessRegistry }, { openTracing, NO_TRACING }] = await Promise.all([
    import("../run/executor.ts"),
    import("../process/process_tree.ts"),
    import("../run/tracing.ts"),
  ]);
  // The OpenTelemetry SDK loads only when the OTEL variables name an endpoint; traces never stop a run.
  const tracing = await openTracing(io.env).catch(async (error) => {
    await io.stderr(`toolgate: warning: traces are off: ${(error as Error).message}\n`);
    return NO_TRACING;
  });
  const registry = new ProcessRegistry(graceMs, undefined, life.handleSignals ?? true);
  // A credential bound to hosts is a declared secret too: its value goes to the egress proxy, not the tool.
  const declared = [
    ...manifest.tools.flatMap((tool) => [...tool.secrets, ...tool.credentials.map((c) => c.secret)]),
    ...(manifest.servers ?? []).flatMap((
      server,
    ) => [...server.secrets, ...server.credentials.map((c) => c.secret)]),
  ];
  const passthrough = [
    ...manifest.tools.flatMap((tool) => tool.envPassthrough),
    ...(manifest.servers ?? []).flatMap((server) => server.profile.env),
    ...declared,
  ];
  const env = io.readEnv ? { ...io.env, ...io.readEnv(passthrough) } : io.env;
  // Only a tool that declares a secret receives a stored one: without such a tool the store is not even read.
  // The pool's signing key is never one of them (a tool holding it could sign calls of its own).
  const { TOOLGATE_POOL_KEY: _poolKey, ...secrets } = declared.length > 0 ? await storedSecrets(io) : {};
  // The pool is reached before anything runs: one that cannot be is said at start (exit 1), not at every call.
  const poolKey = checked.pool && await callerPoolKey(parsed, io, command, checked.pool);
  const pool = checked.pool && poolKey &&
    await (await import("../pool/client.ts")).PoolClient.open(checked.pool, env, manifest, poolKey);
  try {
    const executor = new Executor({
      manifest,
      env,
      cwd,
      defaultTimeoutSec: timeoutSec,
      graceMs,
      maxOutputBytes,
      auditDir,
      auditKey,
      registry,
      startsAhead: io.startsAhead,
      sandbox,
      jobs: life.jobs ?? true,
      jobCaps: life.jobCaps,
      onJob: life.onJob,
      onAudit: life.onAudit,
      onToolsChanged: life.onToolsChanged,
      // Every command closes its executor.
      keepAuditOpen: true,
      residentHelpers: true,
      spawnThread: life.spawnThread && !pool,
      secrets,
      pool,
      tracing,
      // The gateway's code (and the MCP SDK) loads only when the manifest's servers are connected.
      openGateway: async (wiring) => new (await import("../gateway/gateway.ts")).Gateway(wiring),
      // The launcher found bwrap once on PATH: the main entry runs that very binary.
      bwrap: io.env.TOOLGATE_BWRAP || undefined,
      onWarning: (message) => void io.stderr(message + "\n"),
    });
    for (const note of await executor.startNotes(life.tools)) await io.stderr(`toolgate: warning: ${note}\n`);
    // The MCP servers this command uses start now (each in its own sandbox): one line for each that cannot.
    if (life.gateway !== false) {
      for (const line of await executor.connectGateway(life.tools)) await io.stderr(`toolgate: ${line}\n`);
    }
    // One redaction for the whole run, the executor's: its audit and envelopes, and the command's own output, with
    // every secret it knows so far (one a person gives through store_secret mid-run included).
    return { executor, registry, redact: (text) => executor.redact(text) };
  } catch (error) {
    await pool?.close();
    if (error instanceof SyntaxError) throw new UsageError(error.message, command);
    throw error;
  }
}
