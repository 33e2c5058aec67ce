/**
 * `--console PORT` of `serve`, `run` and `worker`: the option read and checked, and the web console started
 * (its code loaded only then) with its one-time link on stderr.
 *
 * @module
 */
import { type Io, type ParsedArgs, parseNumber, stringOption, UsageError } from "./cli.ts";
import type { Executor } from "../run/executor.ts";
import type { JobSource } from "../console/hub.ts";
import type { StartedConsole } from "../console/start.ts";
import type { ExecutorSettings } from "./executor_options.ts";
import { manifestLocationOf, workspaceOf } from "./load.ts";
import type { Redactor } from "../state/redact.ts";

/**
 * `--console PORT`, checked: the console's port on 127.0.0.1 (0: a free one); `undefined` without it.
 *
 * @example Not run as a doc test: a fragment of a command, with its parsed command line in scope.
 * ```ts ignore
 * const port = consolePort(parsed, "run"); // undefined without --console
 * ```
 */
export function consolePort(parsed: ParsedArgs, command: string): number | undefined {
  const text = stringOption(parsed, "console");
  if (text === undefined) return undefined;
  const port = parseNumber(text, "--console", command, { integer: true, min: 0, exclusive: false });
  if (port > 65535) {
    throw new UsageError(`--console must be a port number 0-65535 (got ${JSON.stringify(text)})`, command);
  }
  return port;
}

/**
 * Why a socket cannot be bound (in use, no such address, no permission), or `undefined` for a bug.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listenProblem } from "./console_option.ts";
 * assert.equal(listenProblem(new Deno.errors.AddrInUse("in use"), { hostname: "127.0.0.1", port: 8 }), "cannot listen on 127.0.0.1:8: in use");
 * ```
 */
export function listenProblem(error: unknown, at: { hostname: string; port: number }): string | undefined {
  const where = `${at.hostname}:${at.port}`;
  if (error instanceof Deno.errors.NotCapable) {
    // Port 0 is any free port: only the host can be granted ahead.
    const grant = at.port === 0 ? at.hostname : where;
    return `cannot listen on ${where}: Deno's net permission is missing; run with --allow-net=${grant}`;
  }
  const known = error instanceof Deno.errors.AddrInUse || error instanceof Deno.errors.AddrNotAvailable ||
    error instanceof Deno.errors.PermissionDenied;
  return known ? `cannot listen on ${where}: ${(error as Error).message}` : undefined;
}

/**
 * What a command hands the console of its run: what it built its executor from (the command line, where the
 * manifest is found; the settings, the audit folder and the sandbox mode shown) and what it built.
 */
export interface ConsoleRun {
  readonly port: number;
  readonly parsed: ParsedArgs;
  readonly settings: Pick<ExecutorSettings, "auditDir" | "sandbox">;
  readonly executor: Executor;
  readonly redact: Redactor;
  /** Where jobs are read and stopped (absent: the command runs none). */
  readonly jobs?: JobSource;
}

/**
 * Starts the console of a run and prints its link on stderr (never stdout: it may be the MCP protocol's, or the
 * answer's); `undefined`, said on stderr, when its port cannot be had.
 *
 * @example Not run as a doc test: it serves the console for a command's executor.
 * ```ts ignore
 * const watching = await openConsole(io, { port, parsed, settings, executor, redact });
 * ```
 */
export async function openConsole(io: Io, run: ConsoleRun): Promise<StartedConsole | undefined> {
  // Loaded only with --console: every other run starts without it.
  const { startConsole } = await import("../console/start.ts");
  const { executor } = run;
  let started: StartedConsole;
  try {
    started = startConsole({
      port: run.port,
      redact: run.redact,
      auditDir: run.settings.auditDir,
      jobs: run.jobs,
      run: {
        tools: () => executor.manifest.tools,
        servers: (executor.manifest.servers ?? []).map((server) => server.name),
        definitions: (server) => executor.serverDefinitions(server),
        location: manifestLocationOf(run.parsed, io),
        workspace: workspaceOf(run.parsed, io),
        sandbox: run.settings.sandbox,
        env: io.env,
      },
    });
  } catch (error) {
    const problem = listenProblem(error, { hostname: "127.0.0.1", port: run.port });
    if (problem === undefined) throw error;
    await io.stderr(`toolgate: console: ${problem}\n`);
    return undefined;
  }
  await io.stderr(
    `toolgate: console at ${started.serving.url} (open it once; the link then stops working)\n`,
  );
  return started;
}
