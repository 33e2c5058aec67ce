/**
 * Reads how a tool process ended as an envelope: its stdout as the result, its stderr as the failure (a failure
 * envelope, agentcli's `{"error", "hint"}`, or plain text), a timeout, a signal, a start failure, a flood of output.
 * A failure of a tool that is not read-only is never `retryable` once it started: whatever it did before it
 * failed may not bear doing twice, and neither toolgate nor the tool can know.
 *
 * @module
 */
import {
  asEnvelope,
  type Envelope,
  failure,
  type FailureEnvelope,
  isRecord,
  success,
  truncateForModel,
  withDenials,
  withoutDenials,
  withRetryable,
  withWarnings,
} from "../contract.ts";
import { SECRET_REMOVED_WARNING } from "../state/redact.ts";
import type { RunResult } from "./run_terms.ts";
import type { StartProblem } from "./start_problem.ts";
import { type ShutdownCause, shutdownStopped, userStopped } from "./stop.ts";
import { seconds } from "../base/text.ts";
import { hiddenPaths, missingPaths, readFolderFor } from "./missing_path.ts";

/** The most characters of plain-text stderr carried into a failure message. */
export const STDERR_MESSAGE_LIMIT = 10_000;

/** Facts about the call the result alone does not carry. */
export interface OutcomeContext {
  readonly tool: string;
  /** The resolved program, for start failures. */
  readonly program: string;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  /**
   * The tool's `readOnly`: only a read-only tool's failure may say `retryable: true` once the tool started (the
   * kind's default or the tool's own say). Absent counts as not read-only: when in doubt, no retry.
   */
  readonly readOnly?: boolean;
  /**
   * Takes secret values out of the tool's output as soon as it is decoded, before anything is cut from it: a cut
   * through a secret would leave a fragment that no later redaction recognizes.
   */
  readonly scrub?: (text: string) => string;
  /**
   * The tool is toolgate's own (a built-in tool): the denials its failure envelope carries (a path outside the
   * workspace) are toolgate's decisions and stay; any other tool's are dropped.
   */
  readonly ownDenials?: boolean;
  /** The idle limit, when the call had one. */
  readonly idleTimeoutMs?: number;
  /** Set when a person stopped the call (the stop button, an MCP client's cancellation). */
  readonly killedBy?: "user";
  /** Set when toolgate's end stopped the call (SIGTERM, SIGHUP, a host that closed stdin). */
  readonly shutdown?: ShutdownCause;
  /**
   * What the tool's sandbox shows, when it ran confined: a program or file it did not find outside of it is
   * `unavailable`, with the profile's `read` to change (see {@linkcode notFoundInSandbox}).
   */
  readonly sandbox?: SandboxView;
}

/** What a confined tool's sandbox shows: the folders it sees, and its profile's `read` list as written. */
export interface SandboxView {
  /** Absolute folders and files the sandbox shows (the system's, the workspace, the tool's own, the profile's). */
  readonly visible: readonly string[];
  /** The profile's `read` list, as the fix names it. */
  readonly reads: readonly string[];
  /**
   * Why toolgate never proposes to show `folder` (a home folder, one holding secrets, toolgate's state), or
   * `undefined`: a path there is reported as not found, without a folder to add.
   */
  readonly refuses?: (folder: string) => string | undefined;
}

/** Said with a failure of a tool that is not read-only, once it started. */
export const NOT_RETRYABLE_WARNING =
  "the tool is not read-only and it started: it may have changed something " +
  "before it failed, so the call is not retryable; check what it did before calling it again";

/** Said when a process the tool started left its process group and held the output open. */
export const ESCAPED_OUTPUT_WARNING =
  "a process the tool started left its process group and held the output open; it was cut off";

/** Said of a success whose stdout was empty. */
const NO_STDOUT_WARNING = "the tool printed nothing on stdout";

/** Said of a success whose stdout was not JSON. */
const TEXT_STDOUT_WARNING = "the tool's stdout was not JSON; it is passed as text";

/** toolgate's own notes of this module: the redaction spares them (`src/state/redact.ts`). */
export const RUN_NOTES: readonly string[] = [
  NOT_RETRYABLE_WARNING,
  ESCAPED_OUTPUT_WARNING,
  NO_STDOUT_WARNING,
  TEXT_STDOUT_WARNING,
];

const decoder = new TextDecoder("utf-8", { fatal: false });

/** Decodes bytes as UTF-8, with replacement characters for anything that is not. */
export function decode(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

function fromStdout(stdout: string, tool: string): Envelope {
  const trimmed = stdout.trim();
  if (trimmed === "") return success(null, { tool, warnings: [NO_STDOUT_WARNING] });
  const parsed = parseJson(trimmed);
  if (!parsed.ok) {
    return success({ text: stdout }, {
      tool,
      warnings: [TEXT_STDOUT_WARNING],
    });
  }
  const envelope = asEnvelope(parsed.value);
  // Only toolgate decides a denial: a tool's own `denials` are dropped (a success of a built-in tool has none).
  if (envelope) return withoutDenials({ ...envelope, tool });
  return success(parsed.value, { tool });
}

function fromStderr(
  stderr: string,
  stdout: string,
  context: OutcomeContext,
  metadata: Record<string, unknown>,
): FailureEnvelope {
  const trimmed = stderr.trim();
  if (trimmed === "" && stdout.trim().startsWith("{")) {
    // Nothing on stderr, but a failure envelope on stdout: the tool said what went wrong, only in the other place.
    const parsed = parseJson(stdout.trim());
    const envelope = parsed.ok ? asEnvelope(parsed.value) : undefined;
    if (envelope && !envelope.ok) {
      return withoutDenials({ ...envelope, ...metadata, tool: context.tool } as FailureEnvelope);
    }
  }
  // The error is the whole stderr, or its last line when log lines came first.
  const lastLine = trimmed.slice(trimmed.lastIndexOf("\n") + 1).trim();
  const parsed = trimmed.startsWith("{")
    ? parseJson(trimmed)
    : lastLine.startsWith("{")
    ? parseJson(lastLine)
    : { ok: false as const };
  if (parsed.ok) {
    const envelope = asEnvelope(parsed.value);
    if (envelope && !envelope.ok) {
      const own = { ...envelope, ...metadata, tool: context.tool } as FailureEnvelope;
      return context.ownDenials === true ? own : withoutDenials(own);
    }
    if (isRecord(parsed.value) && typeof parsed.value.error === "string") {
      const hint = typeof parsed.value.hint === "string" ? parsed.value.hint : undefined;
      return failure("execution_error", parsed.value.error, {
        tool: context.tool,
        metadata: { ...metadata, hint },
      });
    }
  }
  const hidden = context.sandbox && notFoundInSandbox(trimmed, metadata, context.tool, context.sandbox);
  if (hidden !== undefined) return hidden;
  const message = trimmed === ""
    ? `exit status ${metadata.exit_code ?? "unknown"}`
    : truncateForModel(trimmed, STDERR_MESSAGE_LIMIT);
  return failure("execution_error", message, { tool: context.tool, metadata });
}

/** Can the host see `path`? `undefined` when toolgate may not look (outside its own grants). */
function onHost(path: string): boolean | undefined {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    return error instanceof Deno.errors.NotFound ? false : undefined;
  }
}

/**
 * A confined tool that failed because something it needs is not in its sandbox: stderr says a path was not found
 * (`ENOENT`, `Cannot find module`, python's `can't open file`, a shell's `not found`) and that path lies outside
 * what the sandbox shows while it is there on the host; or a shell could not find a program (exit 127).
 * `unavailable`, not retryable (the same call fails the same way), naming the path and the profile's `read` list
 * as the fix. `undefined` for any other failure: a path missing on the host too is the tool's own answer.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { notFoundInSandbox } from "./run_envelope.ts";
 * const envelope = notFoundInSandbox(
 *   "/srv/p/tools/bin/t: 3: /no/such/helper: not found",
 *   { exit_code: 127 },
 *   "t",
 *   { visible: ["/usr", "/srv/p"], reads: [] },
 * );
 * equal(envelope?.kind, "unavailable");
 * ```
 */
export function notFoundInSandbox(
  stderr: string,
  metadata: Record<string, unknown>,
  tool: string,
  sandbox: SandboxView,
): FailureEnvelope | undefined {
  const { said, paths } = missingPaths(stderr);
  if (!said) return undefined;
  const hidden = hiddenPaths(paths, sandbox.visible).filter((path) =>
    onHost(path) !== false && sandbox.refuses?.(readFolderFor(path)) === undefined
  );
  const reads = `its profile's read list (now ${JSON.stringify(sandbox.reads)})`;
  if (hidden.length > 0) {
    const folders = [...new Set(hidden.map(readFolderFor))];
    const denied = failure(
      "unavailable",
      `The tool cannot run here: it did not find ${hidden.join(", ")}, which its sandbox does not show. ` +
        `The user can add ${folders.join(", ")} to ${reads} and trust the manifest again.`,
      {
        tool,
        retryable: false,
        metadata: { ...metadata, missing: hidden, hint: `add ${folders[0]} to permissions.read` },
      },
    );
    // Each path the sandbox hides is a denial of the profile's read list (known: toolgate checked what it shows).
    return withDenials(
      denied,
      hidden.map((path) => ({ kind: "path" as const, target: path, rule: "profile read" })),
    );
  }
  // A shell that found no program by that name at all: no path to add, but no retry helps either.
  if (metadata.exit_code === 127) {
    const line = stderr.split("\n").find((l) => /not found/i.test(l))?.trim() ?? stderr;
    return failure(
      "unavailable",
      `The tool cannot run here: a program it runs is not found inside its sandbox (${
        line.slice(0, 300)
      }). ` +
        `The user can install it in a system folder or add its folder to ${reads}.`,
      { tool, retryable: false, metadata },
    );
  }
  return undefined;
}

/**
 * The envelope of a program that could not start: `unavailable`, not retryable (a retry will not fix it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startFailure } from "./run_envelope.ts";
 * assert.equal(startFailure({ reason: "not_found", message: "" }, "t", "/srv/tools/bin/t").message, "The tool cannot start: the program /srv/tools/bin/t does not exist.");
 * ```
 */
export function startFailure(
  problem: StartProblem,
  tool: string,
  program: string,
): FailureEnvelope {
  const reason = problem.reason === "not_found" ? `the program ${program} does not exist` : problem.message;
  return failure("unavailable", `The tool cannot start: ${reason}.`, { tool, retryable: false });
}

/**
 * Turns a finished run into the envelope the caller gets.
 *
 * @example Not run as a doc test: a fragment of the executor, with a finished process and its context in scope.
 * ```ts ignore
 * import { envelopeFromRun } from "./run_envelope.ts";
 * const context = { tool: "get_time", program, timeoutMs, maxOutputBytes, readOnly: true };
 * // envelopeFromRun(await runProcess(request), context)
 * ```
 */
export function envelopeFromRun(run: RunResult, context: OutcomeContext): Envelope {
  if (run.spawnError) return startFailure(run.spawnError, context.tool, context.program);
  let removed = false;
  const text = (bytes: Uint8Array): string => {
    const decoded = decode(bytes);
    if (!context.scrub) return decoded;
    const scrubbed = context.scrub(decoded);
    if (scrubbed !== decoded) removed = true;
    return scrubbed;
  };
  let envelope = fromRun(run, context, text);
  if (removed) envelope = withWarnings(envelope, [SECRET_REMOVED_WARNING]);
  // A run that never started (a start failure above, or one stopped before it) ran nothing, so a retry of it is as
  // safe as its kind says; anything that started may have acted.
  if (envelope.ok || !run.started || context.readOnly === true || !envelope.retryable) return envelope;
  return withWarnings(withRetryable(envelope, false), [NOT_RETRYABLE_WARNING]);
}

function fromRun(run: RunResult, context: OutcomeContext, text: (bytes: Uint8Array) => string): Envelope {
  const { tool } = context;
  const metadata: Record<string, unknown> = {
    exit_code: run.code ?? undefined,
    signal: run.signal ?? undefined,
  };
  const warnings = run.escaped ? [ESCAPED_OUTPUT_WARNING] : [];
  // A person's stop; a confined tool may have died of the terminal's own Ctrl-C a moment before the abort came.
  if (context.killedBy === "user" && (run.aborted || run.code !== 0)) return userStopped(tool, metadata);
  // toolgate's end: the same answer whether the tree was ended, or the program had not started yet.
  if (context.shutdown !== undefined && (run.aborted || run.code !== 0)) {
    return shutdownStopped(tool, context.shutdown, context.readOnly === true, metadata);
  }
  if (run.idleTimedOut && context.idleTimeoutMs !== undefined) {
    const wall = Number.isFinite(context.timeoutMs) ? context.timeoutMs / 1000 : 0;
    return failure(
      "timeout",
      `The tool printed nothing for ${seconds(context.idleTimeoutMs)} (its idle timeout) and was stopped.`,
      {
        tool,
        metadata: {
          ...metadata,
          idle: true,
          idle_timeout_sec: context.idleTimeoutMs / 1000,
          timeout_sec: wall,
        },
      },
    );
  }
  if (run.aborted) {
    return failure("execution_error", "The call was cancelled and the tool was stopped.", {
      tool,
      metadata: { ...metadata, cancelled: true },
    });
  }
  if (run.timedOut) {
    return failure(
      "timeout",
      `The tool ran past its ${seconds(context.timeoutMs)} time budget and was stopped.`,
      {
        tool,
        metadata: { ...metadata, timeout_sec: context.timeoutMs / 1000 },
      },
    );
  }
  if (run.overflow) {
    return failure(
      "execution_error",
      `The tool printed more than ${context.maxOutputBytes} bytes on ${run.overflow} and was stopped.`,
      {
        tool,
        metadata: {
          ...metadata,
          truncated: true,
          hint: "Narrow the arguments (a smaller range, a filter, a limit) so that the output is smaller.",
        },
      },
    );
  }
  if (run.signal) {
    const stderr = text(run.stderr).trim();
    return failure("execution_error", `The tool was killed by ${run.signal}.`, {
      tool,
      metadata: {
        ...metadata,
        stderr: stderr === "" ? undefined : truncateForModel(stderr, STDERR_MESSAGE_LIMIT),
      },
    });
  }
  if (run.code === 0) return withWarnings(fromStdout(text(run.stdout), tool), warnings);
  return withWarnings(fromStderr(text(run.stderr), text(run.stdout), context, metadata), warnings);
}
