/**
 * The options every command that runs tools shares (`call`, the agent loop, `serve`), and the executor they
 * describe, so that the three callers cannot drift.
 *
 * @module
 */
import { resolve } from "node:path";
import {
  flag,
  type Io,
  numberOption,
  type OptionSpec,
  type ParsedArgs,
  stringOption,
  UsageError,
} from "../cli.ts";
import { Executor, EXECUTOR_DEFAULTS } from "../executor.ts";
import { SANDBOX_MODES, type SandboxMode } from "../sandbox.ts";
import { auditDirFor, StateDirError } from "../state.ts";
import type { Manifest } from "../manifest.ts";
import { ProcessRegistry } from "../process_tree.ts";

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
      `most bytes kept of each of stdout and stderr (default ${EXECUTOR_DEFAULTS.maxOutputBytes}); past it the tool is stopped`,
  },
  cwd: { type: "string", value: "DIR", help: "the tools' working directory (default: the current one)" },
  "audit-dir": {
    type: "string",
    value: "DIR",
    help:
      "where the audit log goes (default: the workspace's folder in toolgate's state, ~/.local/state/toolgate)",
  },
  "no-audit": { type: "boolean", help: "write no audit log" },
  sandbox: {
    type: "string",
    value: "MODE",
    help: "auto (bubblewrap when it works; default, env TOOLGATE_SANDBOX), require, or off",
  },
};

/** What a command's executor options describe, checked. */
export interface ExecutorSettings {
  readonly timeoutSec: number;
  readonly graceMs: number;
  readonly maxOutputBytes: number;
  readonly cwd: string;
  readonly auditDir: string | null;
  readonly sandbox: SandboxMode;
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
  const auditDir = flag(parsed, "no-audit") ? null : auditLocation(parsed, io, cwd, command);
  const sandbox = stringOption(parsed, "sandbox") ?? io.env.TOOLGATE_SANDBOX ?? "auto";
  if (!(SANDBOX_MODES as readonly string[]).includes(sandbox)) {
    throw new UsageError(
      `--sandbox must be one of ${SANDBOX_MODES.join(", ")} (got ${JSON.stringify(sandbox)})`,
      command,
    );
  }
  return { timeoutSec, graceMs, maxOutputBytes, cwd, auditDir, sandbox: sandbox as SandboxMode };
}

/** `--audit-dir`, else the workspace's audit folder in toolgate's state (never inside the workspace). */
function auditLocation(parsed: ParsedArgs, io: Io, cwd: string, command: string): string {
  const given = stringOption(parsed, "audit-dir");
  if (given !== undefined) return resolve(io.cwd, given);
  try {
    return auditDirFor(io.env, Deno.realPathSync(cwd));
  } catch (error) {
    if (error instanceof StateDirError) {
      throw new UsageError(`${error.message}; pass --audit-dir or --no-audit`, command);
    }
    throw error;
  }
}

/** An executor and the registry of its running trees, from a command's options (checked already, or now). */
export async function executorFromArgs(
  parsed: ParsedArgs,
  io: Io,
  manifest: Manifest,
  command: string,
  settings?: ExecutorSettings,
  /** False for a command that shuts down by itself on SIGINT/SIGTERM (then it must call `registry.endAll`). */
  handleSignals = true,
): Promise<{ executor: Executor; registry: ProcessRegistry }> {
  const { timeoutSec, graceMs, maxOutputBytes, cwd, auditDir, sandbox } = settings ??
    await executorSettings(parsed, io, command);
  const registry = new ProcessRegistry(graceMs, undefined, handleSignals);
  const passthrough = manifest.tools.flatMap((tool) => tool.envPassthrough);
  const env = io.readEnv ? { ...io.env, ...io.readEnv(passthrough) } : io.env;
  try {
    const executor = new Executor({
      manifest,
      env,
      cwd,
      defaultTimeoutSec: timeoutSec,
      graceMs,
      maxOutputBytes,
      auditDir,
      registry,
      sandbox,
      // The launcher found bwrap once on PATH: the main entry runs that very binary.
      bwrap: io.env.TOOLGATE_BWRAP || undefined,
      onWarning: (message) => void io.stderr(message + "\n"),
    });
    for (const note of await executor.startNotes()) await io.stderr(`toolgate: warning: ${note}\n`);
    return { executor, registry };
  } catch (error) {
    if (error instanceof SyntaxError) throw new UsageError(error.message, command);
    throw error;
  }
}
