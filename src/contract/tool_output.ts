/**
 * The output side of the tool execution model: a result is one JSON line on stdout with exit 0, a failure is one
 * failure-envelope line on stderr with exit 1. The envelope itself comes from toolgate's contract module (which
 * imports nothing), so a tool's failure reads exactly like the executor's own.
 *
 * @module
 */
import {
  type Denial,
  failure,
  type FailureEnvelope,
  type FailureKind,
  serialize,
  success,
  withDenials,
} from "../contract.ts";

/** Options of {@linkcode ToolFailure}. */
export interface ToolFailureOptions {
  /** The offending argument. */
  field?: string;
  /** What the argument should look like. */
  expected?: string;
  /** Overrides the kind's default. */
  retryable?: boolean;
  /** Extra keys (stdout, exit_code, ...); contract keys are never overwritten. */
  metadata?: Record<string, unknown>;
  /** What the built-in tool refused (a path outside the workspace), typed: kept only for toolgate's own tools. */
  denials?: readonly Denial[];
}

/**
 * A failure a tool reports as an envelope: thrown anywhere in a tool body, written by {@linkcode runTool}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ToolFailure } from "./tool_output.ts";
 * const problem = new ToolFailure("not_found", "no such file: a.txt", { field: "path" });
 * assert.equal(problem.toEnvelope().kind, "not_found"); // a tool body throws it; runTool writes it
 * ```
 */
export class ToolFailure extends Error {
  readonly kind: FailureKind;
  readonly options: ToolFailureOptions;

  constructor(kind: FailureKind, message: string, options: ToolFailureOptions = {}) {
    super(message);
    this.name = "ToolFailure";
    this.kind = kind;
    this.options = options;
  }

  /** The failure envelope, built by the contract's constructor. */
  toEnvelope(): FailureEnvelope {
    return withDenials(failure(this.kind, this.message, this.options), this.options.denials ?? []);
  }
}

/**
 * A tool body's result with warnings for the model: a success envelope (toolgate honors one on stdout) when there
 * are any, the plain result otherwise (so that a tool's output keeps its shape when there is nothing to say).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withWarnings } from "./tool_output.ts";
 * assert.deepEqual(withWarnings({ exit_code: 0 }, ["slow disk"]), { ok: true, result: { exit_code: 0 }, warnings: ["slow disk"] });
 * assert.deepEqual(withWarnings({ exit_code: 0 }, []), { exit_code: 0 });
 * ```
 */
export function withWarnings(result: unknown, warnings: readonly string[]): unknown {
  return warnings.length > 0 ? success(result, { warnings }) : result;
}

/** Shorthand for an `invalid_args` failure naming `field`. */
export function invalidArgs(field: string, message: string, expected?: string): ToolFailure {
  return new ToolFailure("invalid_args", message, { field, expected });
}

/** The message of anything thrown, without a stack trace. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Maps an error thrown by a Deno file-system call on `rel` to a failure: a missing path is `not_found`, anything
 * else an `execution_error` that names the path.
 */
export function fsFailure(error: unknown, rel: string, field = "path"): ToolFailure {
  if (error instanceof ToolFailure) return error;
  if (error instanceof Deno.errors.NotFound) {
    return new ToolFailure("not_found", `no such file or directory: ${JSON.stringify(rel)}`, { field });
  }
  if (error instanceof Deno.errors.NotADirectory) {
    return new ToolFailure("not_found", `a parent of ${JSON.stringify(rel)} is not a directory`, { field });
  }
  if (error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.NotCapable) {
    return new ToolFailure("execution_error", `permission denied: ${JSON.stringify(rel)}`, {
      retryable: false,
    });
  }
  return new ToolFailure("execution_error", `${JSON.stringify(rel)}: ${errorMessage(error)}`);
}

/**
 * Runs a tool body: reads nothing itself, prints the body's result as one JSON line on stdout (exit 0), or a
 * failure envelope on stderr (exit 1). An unexpected error becomes an `execution_error`; no stack is printed.
 *
 * @example Not run as a doc test: runTool ends the process.
 * ```ts ignore
 * import { runTool } from "./tool_output.ts";
 * await runTool(() => ({ hello: "world" }));
 * ```
 */
export async function runTool(body: () => unknown | Promise<unknown>): Promise<never> {
  let problem: ToolFailure;
  try {
    const result = await body();
    await writeLine(Deno.stdout, JSON.stringify(result ?? null));
    Deno.exit(0);
  } catch (error) {
    problem = error instanceof ToolFailure ? error : new ToolFailure("execution_error", errorMessage(error));
  }
  await writeLine(Deno.stderr, serialize(problem.toEnvelope()));
  Deno.exit(1);
}

async function writeLine(stream: { write(p: Uint8Array): Promise<number> }, line: string): Promise<void> {
  const bytes = new TextEncoder().encode(line + "\n");
  let written = 0;
  while (written < bytes.length) written += await stream.write(bytes.subarray(written));
}
