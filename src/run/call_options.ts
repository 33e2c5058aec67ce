/**
 * The options of the executor and of one call, and the limits a caller shows of a call: the public types of
 * src/run/executor.ts, apart so that the modules of the pipeline read them without importing the executor. Not
 * here: the executor (src/run/executor.ts), the arithmetic of limits (src/run/call_limits.ts).
 *
 * @module
 */
import type { Manifest } from "../manifest/manifest_types.ts";
import type { ApprovedBy, Policy } from "../policy/policy.ts";
import type { ProcessRegistry } from "../process/process_tree.ts";
import type { StartsAhead } from "../process/starts_ahead.ts";
import type { ControlPlane } from "../sandbox/control_plane.ts";
import type { SandboxMode } from "../sandbox/sandbox.ts";
import type { ToolEvent } from "../manifest/tool_messages.ts";
import type { JobEvent } from "./jobs.ts";
import type { JobCaps } from "./job_owners.ts";
import type { QuestionHandlers } from "./tool_questions.ts";
import type { CallDefaults, ToolPool } from "./tool_pool.ts";
import type { OpenGateway } from "./tool_gateway.ts";
import type { TraceSpan, Tracing } from "./tracing.ts";

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
  /** Time between SIGTERM and SIGKILL when a tool is stopped (default `EXECUTOR_DEFAULTS`). */
  readonly graceMs?: number;
  /** The most bytes kept of each of stdout and stderr (at most 256 MiB); past it the tool is stopped. */
  readonly maxOutputBytes?: number;
  /** The audit directory, or `null` for no audit log. */
  readonly auditDir: string | null;
  /**
   * The key of the audit log's argument digests (default: read or made at the first record in
   * `<stateRoot(env)>/audit.key`, see `loadAuditKey`).
   */
  readonly auditKey?: Uint8Array;
  /** Where the executor reports its own trouble (a failed audit write), once. */
  readonly onWarning?: (message: string) => void;
  /** Told after each audit line is written (a job's end is audited after the job has ended). */
  readonly onAudit?: () => void;
  /**
   * Keeps the audit log's file open from one call to the next until `Executor.close` (checked again at
   * every line as if just opened): for a caller that closes the executor, as the CLI's commands do.
   */
  readonly keepAuditOpen?: boolean;
  /**
   * Keeps one helper shell until `Executor.close` that tells, at each call's end, whether its cgroup is empty
   * (`src/sandbox/cgroup_watch.ts`), instead of a shell per call: for a caller that closes the executor.
   */
  readonly residentHelpers?: boolean;
  /**
   * Starts the tools from threads of their own until `Executor.close` (`src/process/spawn_pool.ts`), so that
   * the calling thread does not wait in each start: for a long-lived caller that runs calls at once and closes
   * the executor (`serve`, a pool's `worker`).
   */
  readonly spawnThread?: boolean;
  /**
   * Told when an MCP server's tools changed (its `tools/list_changed`), once they are listed again, checked against
   * the pins and {@linkcode Executor.manifest} is updated: `serve` tells its own clients.
   */
  readonly onToolsChanged?: () => void;
  /** The clock of the audit log's timestamps (tests hold it). */
  readonly clock?: () => Date;
  /**
   * The trees to end when toolgate itself is stopped (SIGINT, SIGTERM): the CLI's commands pass theirs.
   *
   * @ignore The registry's interface is the runner's, not yet part of the library.
   */
  readonly registry?: ProcessRegistry;
  /**
   * Where a call's process may have been started ahead, and where its own start is left to be made ahead of the
   * next call (a resident server's `call`, which runs the same tool the same way each time).
   *
   * @ignore The store's interface is the runner's, not yet part of the library.
   */
  readonly startsAhead?: StartsAhead;
  /**
   * Confinement: `auto` (bubblewrap when it works; unconfined only a tool that can neither write nor reach the
   * network), `require` (unavailable without it), `off` (every tool unconfined, as the user).
   */
  readonly sandbox?: SandboxMode;
  /** The bubblewrap program: a name looked up once on the environment's PATH, or a path (default `bwrap`). */
  readonly bwrap?: string;
  /** The protected paths (default: `controlPlane` of the manifest and the environment). */
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
  /**
   * Opens the gateway to the manifest's MCP servers ({@linkcode Executor.connectGateway}); without it, a manifest's
   * servers cannot be used. The commands pass one that loads src/gateway/ on demand.
   *
   * @ignore The gateway's seam is toolgate's own wiring, not yet part of the library.
   */
  readonly openGateway?: OpenGateway;
  /** Where the calls' spans go (`openTracing` in src/run/tracing.ts); default none. Shut down by `close`. */
  readonly tracing?: Tracing;
}

/**
 * Per-call options.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Executor } from "./executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const envelope = await executor.call("exec", '{"argv":["sleep","60"]}', { signal: AbortSignal.timeout(500) });
 * assert.ok(!envelope.ok);
 * // cancelled, or unavailable where it cannot be confined
 * assert.ok(envelope.kind === "unavailable" || envelope.cancelled === true, envelope.message);
 * ```
 */
export interface CallOptions {
  /** Cancels the call and ends the tool's tree. */
  readonly signal?: AbortSignal;
  /**
   * The call may run only once this says true (a pool worker's call with side effects, its caller's go on its
   * way): a start held at its gate (src/sandbox/gate.ts), or a built-in tool's, which reads its arguments first, is
   * made at once and its stdin written only then; any other start, and any call not run in the foreground, waits
   * for it before anything is made. It says false only once `signal` is aborted: nothing of the tool ran.
   */
  readonly goAhead?: Promise<boolean>;
  /**
   * Decides whether {@linkcode Executor.call} runs the call (default `OWN_COMMAND`: the caller's own
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
  /**
   * Gets the last line the tool wrote to stderr each time it changes, for a person's progress line: escape
   * sequences and control characters removed, secrets and `TOOLGATE_REDACT` patterns masked.
   */
  readonly onStderrLine?: (line: string) => void;
  /** Sees the tool's stderr as it comes (every chunk, for the web console's tail; a foreground program's only). */
  readonly onStderr?: (chunk: Uint8Array) => void;
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
 * import type { CallLimits } from "./call_options.ts";
 * const limits: CallLimits = { timeoutSec: 30, idleTimeoutSec: undefined };
 * ```
 */
export interface CallLimits {
  /** The wall-clock limit; `undefined` when there is none. */
  readonly timeoutSec?: number;
  /** The idle limit, if any. */
  readonly idleTimeoutSec?: number;
}
