/** Runs the real toolgate CLI as a subprocess, with the agent's fixture manifest and a clean environment. @module */
import { join } from "node:path";
import { cliArgs, GRANTS, REPO, runProgram } from "../support.ts";
import { type ChatServer, type Script, startChatServer } from "./chat_server.ts";

/** The fixture manifest of the agent tests. */
export const AGENT_TOOLS = join(REPO, "tests", "fixtures", "agent", "tools.json");

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
 * ```ts ignore
 * const result = await runAgentCli(["--prompt", "hi", "--base-url", server.baseUrl]);
 * ```
 */
export function runAgentCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return runProgram(Deno.execPath(), cliArgs(GRANTS.broadNet, args), {
    cwd: options.cwd ?? REPO,
    env: options.env,
    stdin: options.stdin,
    clearEnv: true,
  });
}

/**
 * The argv that runs the CLI with ARGS under the test task's permissions (for a pty test, which starts it
 * through `script`: see tests/terminal.ts).
 *
 * @example
 * ```ts ignore
 * const line = cliArgv(["--prompt", "hi"]).map(quote).join(" ");
 * ```
 */
export function cliArgv(args: readonly string[]): string[] {
  return [Deno.execPath(), ...cliArgs(GRANTS.broadNet, args)];
}

/**
 * The usual arguments of a test run: a prompt, the scripted endpoint, a model, a manifest, no sandbox (the tests
 * of confinement are elsewhere) and the workspace.
 */
export function scriptedRunArgs(baseUrl: string, tools: string, workspace: string, prompt = "hi"): string[] {
  return [
    "--prompt",
    prompt,
    "--base-url",
    baseUrl,
    "--model",
    "test-model",
    "--tools",
    tools,
    "--sandbox",
    "off",
    "--cwd",
    workspace,
  ];
}

/** A run of the CLI against a scripted endpoint, and what it left. */
export interface ScriptedRun extends CliResult {
  /** The endpoint, closed once the run ended (its recorded requests stay). */
  readonly server: ChatServer;
  /** The tools' working directory: a temp folder of the run's own. */
  readonly dir: string;
  /** The run's state folder (`XDG_STATE_HOME`): a temp folder of its own, so nothing lands in the real home. */
  readonly state: string;
}

/** Options of {@linkcode runScripted}. */
export interface ScriptedRunOptions {
  readonly env?: Record<string, string>;
  readonly stdin?: string;
  /** Leave out the prompt (the arguments bring their own). */
  readonly noPrompt?: boolean;
}

/**
 * Runs the CLI (the agent fixture manifest, no sandbox, a temp workspace and state folder) with `args` against a
 * server playing `script`. The caller removes `dir` and `state` when it is done with them.
 *
 * @example
 * ```ts ignore
 * const run = await runScripted([answer("hello")]);
 * run.stdout; // "hello\n"
 * ```
 */
export async function runScripted(
  script: Script,
  args: readonly string[] = [],
  options: ScriptedRunOptions = {},
): Promise<ScriptedRun> {
  const server = startChatServer(script);
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_agent_" }));
  const state = await Deno.makeTempDir({ prefix: "toolgate_agent_state_" });
  try {
    const usual = scriptedRunArgs(server.baseUrl, AGENT_TOOLS, dir);
    // Without the prompt, the test's own arguments come first (they bring theirs).
    const argv = options.noPrompt ? [...args, ...usual.slice(2)] : [...usual, ...args];
    const result = await runAgentCli(argv, {
      env: { XDG_STATE_HOME: state, ...options.env },
      stdin: options.stdin,
      cwd: dir,
    });
    return { ...result, server, dir, state };
  } finally {
    await server.close();
  }
}
