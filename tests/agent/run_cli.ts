/** Runs the real toolgate CLI as a subprocess, with the agent's fixture manifest and a clean environment. @module */
import { join } from "node:path";

/** The repository's root folder. */
export const ROOT = join(import.meta.dirname!, "..", "..");
/** The fixture manifest of the agent tests. */
export const AGENT_TOOLS = join(ROOT, "tests", "fixtures", "agent", "tools.json");

/** What a finished CLI run left behind. */
export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@linkcode runAgentCli}. */
export interface CliOptions {
  /** Variables set for the child (its environment is otherwise empty but for PATH, HOME and DENO_DIR). */
  readonly env?: Record<string, string>;
  readonly stdin?: string;
  readonly cwd?: string;
}

/**
 * Runs `deno run ... src/main.ts ARGS` and waits for it. stdin is a pipe, so the CLI sees no terminal.
 *
 * @example
 * ```ts
 * const result = await runAgentCli(["--prompt", "hi", "--base-url", server.baseUrl]);
 * ```
 */
export async function runAgentCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  const env: Record<string, string> = { NO_COLOR: "1", ...options.env };
  for (const key of ["PATH", "HOME", "DENO_DIR"]) {
    const value = Deno.env.get(key);
    if (value !== undefined && env[key] === undefined) env[key] = value;
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-run",
      "--allow-net",
      "--config",
      join(ROOT, "deno.json"),
      join(ROOT, "src", "main.ts"),
      ...args,
    ],
    cwd: options.cwd ?? ROOT,
    env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(options.stdin ?? ""));
  await writer.close();
  const output = await child.output();
  const decoder = new TextDecoder();
  return { code: output.code, stdout: decoder.decode(output.stdout), stderr: decoder.decode(output.stderr) };
}
