/**
 * A background `exec` call's arguments, read and checked as the exec tool checks its own (they share
 * src/contract/exec_args.ts), resolved against the workspace; the shell that runs a job in its folder, and whether
 * that shell has `pipefail`. Not here: starting the job (src/run/background_jobs.ts).
 *
 * @module
 */
import { isAbsolute, join, resolve } from "../base/paths.ts";
import { isWithin } from "../contract/relative_path.ts";
import { findProgram } from "../base/find_program.ts";
import { invalidArgs, ToolFailure } from "../contract/tool_output.ts";
import {
  type ExecCommand,
  FALLBACK_SHELL,
  NO_PIPEFAIL_WARNING,
  PIPEFAIL_SHELLS,
  readCommand,
  readEnv,
  shellArgv,
  shHasPipefail,
} from "../contract/exec_args.ts";
import { parseRelative } from "../contract/relative_path.ts";

/** A background `exec` call's arguments, checked and resolved against the workspace. */
export interface JobArgs {
  readonly command: ExecCommand;
  /** The working directory as the model named it, normalized. */
  readonly cwd: string;
  /** Its real path, inside the workspace. */
  readonly cwdPath: string;
  /** The program and arguments to run there (a command line already wrapped in its shell). */
  readonly argv: readonly string[];
  /** Variables added to PATH and HOME. */
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: string;
  /** The wall-clock limit the model asked for; `Infinity` (a job's default) for none. */
  readonly timeoutMs: number;
  /** The idle limit the model asked for, if any. */
  readonly idleTimeoutMs?: number;
  /** For the answer: a command line that runs without pipefail. */
  readonly warnings: readonly string[];
}

/** The places a job's arguments are checked against. */
export interface JobPlaces {
  /** The workspace, as a real path. */
  readonly workspace: string;
  /** Paths no tool may see (toolgate's state): not a working directory either. */
  readonly hidden: readonly string[];
  /** The PATH the job runs with, to find its program before it starts. */
  readonly path: string;
}

/** Does this file exist here (toolgate may read the system folders)? */
function present(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Checks a background `exec` call's arguments as the exec tool checks its own (the same code reads argv, shell
 * and env): exactly one of argv and shell, a cwd inside the workspace, a program that exists. Throws a
 * `ToolFailure` (see `tools/lib/envelope.ts`) for the model.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readJobArgs } from "./job_args.ts";
 * const workspace = await Deno.realPath(await Deno.makeTempDir());
 * const args = readJobArgs({ shell: "make 2>&1 | tail -n 20" }, { workspace, hidden: [], path: "/usr/bin:/bin" });
 * assert.deepEqual(args.argv, ["/bin/bash", "-o", "pipefail", "-c", "make 2>&1 | tail -n 20"]); // where bash is installed
 * ```
 */
export function readJobArgs(args: Readonly<Record<string, unknown>>, places: JobPlaces): JobArgs {
  const command = readCommand(args.argv, args.shell);
  const relative = parseRelative(typeof args.cwd === "string" && args.cwd !== "" ? args.cwd : ".", "cwd");
  let cwdPath: string;
  try {
    cwdPath = Deno.realPathSync(join(places.workspace, relative.rel));
  } catch {
    throw new ToolFailure("not_found", `no such directory: ${JSON.stringify(relative.rel)}`, {
      field: "cwd",
    });
  }
  if (!isWithin(cwdPath, places.workspace) || places.hidden.some((path) => isWithin(cwdPath, path))) {
    throw invalidArgs(
      "cwd",
      `${JSON.stringify(relative.rel)} leads outside the workspace`,
      "a directory inside the workspace",
    );
  }
  if (!Deno.statSync(cwdPath).isDirectory) {
    throw invalidArgs(
      "cwd",
      `not a directory: ${JSON.stringify(relative.rel)}`,
      "a directory inside the workspace",
    );
  }
  const warnings: string[] = [];
  let argv: string[];
  if (command.argv !== undefined) {
    const program = command.argv[0];
    const found = program.includes("/")
      ? present(isAbsolute(program) ? program : resolve(cwdPath, program))
      : findProgram(program, places.path) !== undefined;
    if (!found) {
      throw new ToolFailure("not_found", `program not found: ${JSON.stringify(program)}`, { field: "argv" });
    }
    argv = [...command.argv];
  } else {
    const bash = PIPEFAIL_SHELLS.find(present);
    const pipefail = bash !== undefined || shHasPipefail();
    if (!pipefail) warnings.push(NO_PIPEFAIL_WARNING);
    argv = shellArgv(bash ?? FALLBACK_SHELL, command.shell, pipefail);
  }
  const timeout = args.timeout_ms;
  const idle = args.idle_timeout_ms;
  return {
    command,
    cwd: relative.rel,
    cwdPath,
    argv,
    env: readEnv(args.env),
    stdin: typeof args.stdin === "string" ? args.stdin : "",
    timeoutMs: typeof timeout === "number" && timeout > 0 ? timeout : Infinity,
    idleTimeoutMs: typeof idle === "number" && idle > 0 ? idle : undefined,
    warnings,
  };
}

/**
 * The argv prefix that enters a job's working directory and becomes its program (`sh -c SCRIPT sh CWD ARGV...`):
 * inside the sandbox the call starts in the workspace, and the job may have asked for a folder below it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jobLauncher } from "./job_args.ts";
 * assert.deepEqual(jobLauncher("/bin/sh", "/srv/ws/sub", ["make"]).slice(-2), ["/srv/ws/sub", "make"]);
 * ```
 */
export function jobLauncher(sh: string, cwd: string, argv: readonly string[]): string[] {
  return [sh, "-c", 'cd -- "$1" || exit 126; shift; exec "$@"', "sh", cwd, ...argv];
}
