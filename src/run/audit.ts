/**
 * The audit log's records: one per call, redacted, with what a refusal, a run, a background job's start, end and
 * answers say, and the launch facts (how the call was confined). Never an argument value, never a variable's
 * value.
 *
 * The writer (the folder, the keys, each line's MAC, the append that cannot be redirected) is
 * `state/audit_log.ts`; this module re-exports its names.
 *
 * @module
 */
import type { Denial, Envelope, FailureKind } from "../contract.ts";
import type { EgressDecision } from "../sandbox/proxy_settings.ts";
import type { RunResult } from "../process/run_terms.ts";
import type { AuditRecord } from "../state/audit_log.ts";

/**
 * What every audit line of one call holds, whatever happened: when, which tool, where, and the arguments' size and
 * digest (never the arguments).
 */
export interface CallFacts {
  readonly ts: string;
  readonly tool: string;
  readonly cwd: string;
  readonly argsBytes: number;
  readonly argsHmac: string | null;
}

/** How a call's process was started, as its audit line tells it. */
export interface LaunchFacts {
  /** Inside bwrap. */
  readonly confined: boolean;
  /** Anything looser than the defaults. */
  readonly auditWarnings: readonly string[];
  /** What the egress proxy let through or refused. */
  readonly egress?: readonly EgressDecision[];
}

/** The head of a line: the call's facts, and a process's outcome (nothing ran: all empty). */
function head(facts: CallFacts, argv: readonly string[] | null, run?: Partial<RunResult>, truncated = false) {
  return {
    ts: facts.ts,
    tool: facts.tool,
    argv,
    cwd: facts.cwd,
    exit: run?.code ?? null,
    signal: run?.signal ?? null,
    ms: Math.round(run?.durationMs ?? 0),
    stdoutBytes: run?.stdoutBytes ?? 0,
    stderrBytes: run?.stderrBytes ?? 0,
    truncated,
  };
}

function outcomeOf(envelope: Envelope): "ok" | FailureKind {
  return envelope.ok ? "ok" : envelope.kind;
}

/** Who stopped the call, as its envelope says: a person (`user`), or toolgate's end (`shutdown`). */
function killedBy(envelope: Envelope): "user" | "shutdown" | undefined {
  if (envelope.ok) return undefined;
  return envelope.killed_by === "user" || envelope.killed_by === "shutdown" ? envelope.killed_by : undefined;
}

/** What ended toolgate, for a call its end stopped (`SIGTERM`, `SIGHUP`, `stdin_closed`). */
function stopSignal(envelope: Envelope): string | undefined {
  return !envelope.ok && typeof envelope.stop_signal === "string" ? envelope.stop_signal : undefined;
}

/** What toolgate refused the call, as its envelope says (absent when nothing was). */
function denialsOf(envelope: Envelope): readonly Denial[] | undefined {
  return envelope.denials && envelope.denials.length > 0 ? envelope.denials : undefined;
}

function launchFields(launch: LaunchFacts | undefined) {
  return {
    sandbox: launch ? (launch.confined ? "bwrap" : "none") : undefined,
    warnings: launch && launch.auditWarnings.length > 0 ? launch.auditWarnings : undefined,
    egress: launch?.egress && launch.egress.length > 0 ? launch.egress : undefined,
  };
}

/**
 * The line of a call that started no program (an unknown tool, bad arguments, a refusal, or one answered in
 * toolgate's own process such as `store_secret`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { refusalRecord } from "./audit.ts";
 * import { failure } from "../contract.ts";
 * const facts = { ts: new Date().toISOString(), tool: "fs_remove", cwd: "/work", argsBytes: 2, argsHmac: null };
 * assert.equal(refusalRecord(facts, failure("user_denied", "No.")).outcome, "user_denied");
 * ```
 */
export function refusalRecord(facts: CallFacts, envelope: Envelope): AuditRecord {
  return {
    ...head(facts, null),
    envKeys: [],
    argsBytes: facts.argsBytes,
    argsHmac: facts.argsHmac,
    outcome: outcomeOf(envelope),
  };
}

/** What a run's line tells beyond the call's facts. */
export interface RunFacts {
  readonly argv: readonly string[];
  /** The process's end; absent when it never started. */
  readonly result?: RunResult;
  readonly envKeys: readonly string[];
  readonly envelope: Envelope;
  /** Absent when the call was refused at its launch. */
  readonly launch?: LaunchFacts;
  readonly profile: string;
}

/**
 * The line of a call whose process ran (or was refused at its launch).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runRecord } from "./audit.ts";
 * import { success } from "../contract.ts";
 * const facts = { ts: new Date().toISOString(), tool: "t", cwd: "/work", argsBytes: 2, argsHmac: null };
 * const record = runRecord(facts, { argv: ["/bin/true"], envKeys: ["PATH"], envelope: success({}), profile: "none" });
 * assert.equal(record.outcome, "ok");
 * ```
 */
export function runRecord(facts: CallFacts, run: RunFacts): AuditRecord {
  const { result, envelope, launch } = run;
  const fields = launchFields(launch);
  return {
    ...head(facts, run.argv, result, result?.overflow !== undefined),
    envKeys: run.envKeys,
    argsBytes: facts.argsBytes,
    argsHmac: facts.argsHmac,
    outcome: outcomeOf(envelope),
    // A call stopped on request is no crash: the line says so, and who stopped it (a cancelled MCP call's answer is
    // never sent, so this line is where its killed_by shows).
    cancelled: result?.aborted ? true : undefined,
    killed_by: killedBy(envelope),
    stop_signal: stopSignal(envelope),
    idle: result?.idleTimedOut ? true : undefined,
    sandbox: fields.sandbox,
    profile: run.profile,
    warnings: fields.warnings,
    egress: fields.egress,
    denials: denialsOf(envelope),
  };
}

/**
 * The line of a `job` call, answered in toolgate's own process.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jobAnswerRecord } from "./audit.ts";
 * import { success } from "../contract.ts";
 * const facts = { ts: new Date().toISOString(), tool: "job", cwd: "/work", argsBytes: 2, argsHmac: null };
 * assert.equal(jobAnswerRecord(facts, { ms: 3, envelope: success({}), job: "j1" }).job, "j1");
 * ```
 */
export function jobAnswerRecord(
  facts: CallFacts,
  answer: { readonly ms: number; readonly envelope: Envelope; readonly job?: string },
): AuditRecord {
  return {
    ...head(facts, null, { durationMs: answer.ms }),
    envKeys: [],
    argsBytes: facts.argsBytes,
    argsHmac: facts.argsHmac,
    outcome: outcomeOf(answer.envelope),
    job: answer.job,
    killed_by: killedBy(answer.envelope),
  };
}

/**
 * The line of a background `exec`'s start (its end has {@linkcode jobEndRecord}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jobStartRecord } from "./audit.ts";
 * import { success } from "../contract.ts";
 * const facts = { ts: new Date().toISOString(), tool: "exec", cwd: "/work", argsBytes: 2, argsHmac: null };
 * const record = jobStartRecord(facts, {
 *   argv: ["exec"],
 *   envKeys: ["PATH"],
 *   envelope: success({}),
 *   job: { id: "j1", pid: 42 },
 *   profile: "exec",
 * });
 * assert.ok(record.background);
 * ```
 */
export function jobStartRecord(
  facts: CallFacts,
  start: Omit<RunFacts, "result"> & {
    readonly result?: RunResult;
    readonly job?: { readonly id: string; readonly pid: number };
  },
): AuditRecord {
  const fields = launchFields(start.launch);
  return {
    ...head(facts, start.argv, { code: start.result?.code, signal: start.result?.signal }),
    envKeys: start.envKeys,
    argsBytes: facts.argsBytes,
    argsHmac: facts.argsHmac,
    outcome: outcomeOf(start.envelope),
    background: true,
    job: start.job?.id,
    pid: start.job?.pid,
    sandbox: fields.sandbox,
    profile: start.profile,
    warnings: fields.warnings,
  };
}

/**
 * The line of a background job's end: how it ended and how much it printed.
 *
 * @example Not run as a doc test: a fragment of the executor, with a call's facts and its audit log in scope.
 * ```ts ignore
 * await audit.write(jobEndRecord(facts, { argv, run, job, launch }));
 * ```
 */
export function jobEndRecord(
  facts: CallFacts,
  end: {
    readonly argv: readonly string[];
    readonly run: RunResult;
    readonly job: {
      readonly id: string;
      readonly state: string;
      readonly killedBy?: string;
      readonly denials?: readonly Denial[];
    };
    readonly launch: LaunchFacts;
  },
): AuditRecord {
  const { run, job } = end;
  return {
    ...head(facts, end.argv, run),
    envKeys: [],
    argsBytes: facts.argsBytes,
    argsHmac: facts.argsHmac,
    outcome: run.timedOut || run.idleTimedOut
      ? "timeout"
      : job.state === "exited" && run.code === 0
      ? "ok"
      : "execution_error",
    background: true,
    job: job.id,
    job_state: job.state,
    killed_by: job.killedBy,
    idle: run.idleTimedOut ? true : undefined,
    sandbox: end.launch.confined ? "bwrap" : "none",
    egress: launchFields(end.launch).egress,
    denials: job.denials && job.denials.length > 0 ? job.denials : undefined,
  };
}
