/**
 * Why a program cannot start, found before a wrapper (setsid(1), bwrap) would report it as its own failure, or
 * read from the error a spawn threw. The runner re-exports these names.
 *
 * @module
 */

/** Why a process could not start. */
export interface StartProblem {
  readonly reason: "not_found" | "not_executable" | "not_permitted";
  readonly message: string;
}

/**
 * Why a spawn that threw did not start, as a start problem: not permitted, no such program, or not executable.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { spawnError } from "./start_problem.ts";
 * assert.equal(spawnError(new Deno.errors.NotCapable("run"), "/bin/true").reason, "not_permitted");
 * ```
 */
export function spawnError(error: unknown, program: string): StartProblem {
  if (error instanceof Deno.errors.NotCapable) {
    return { reason: "not_permitted", message: `toolgate is not permitted to run ${program} (--allow-run)` };
  }
  // A missing cwd or script interpreter is NotFound too: only a missing program is reported as one.
  if (error instanceof Deno.errors.NotFound && !exists(program)) {
    return { reason: "not_found", message: `no such program: ${program}` };
  }
  const detail = error instanceof Error ? error.message : String(error);
  return { reason: "not_executable", message: `cannot execute ${program}: ${detail}` };
}

/**
 * Why `program` cannot start (missing, a directory, not executable), found before a wrapper (setsid(1), bwrap)
 * would have to report it as its own failure; `undefined` when it looks startable.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startProblem } from "./start_problem.ts";
 * assert.equal(startProblem("/no/such/program")?.reason, "not_found");
 * ```
 */
export function startProblem(program: string): StartProblem | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(program);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { reason: "not_found", message: `no such program: ${program}` };
    }
    // Not ours to read (a scoped --allow-read): the start itself will tell.
    if (error instanceof Deno.errors.NotCapable) return undefined;
    return { reason: "not_executable", message: `cannot execute ${program}: ${(error as Error).message}` };
  }
  if (info.isDirectory) {
    return { reason: "not_executable", message: `cannot execute ${program}: a directory` };
  }
  if (info.mode !== null && (info.mode & 0o111) === 0) {
    return { reason: "not_executable", message: `cannot execute ${program}: not executable` };
  }
  return undefined;
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    return !(error instanceof Deno.errors.NotFound);
  }
}
