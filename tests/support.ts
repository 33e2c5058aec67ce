/**
 * What every test shares: the repository's paths, temp folders holding a real manifest and `tools/bin` programs, and
 * the one place that says how the CLI is started (as a process under the permissions a user would grant, through
 * the launcher, or in this very process through `main.run`).
 *
 * @module
 */
import { dirname, join } from "node:path";
import { run as runMain } from "../src/main.ts";
import type { Io } from "../src/commands/cli.ts";

/** The repository's root folder. */
export const REPO: string = join(import.meta.dirname!, "..");
/** `tests/fixtures`. */
export const FIXTURES: string = join(REPO, "tests", "fixtures");
/** The CLI's entry, `src/main.ts`. */
export const MAIN: string = join(REPO, "src", "main.ts");

/** Where `Deno.makeTempDir` puts its folders. */
const TEMP_ROOT = Deno.env.get("TMPDIR") || "/tmp";

/**
 * The permission sets the tests start the CLI under: `scoped` as a user following `toolgate permissions` grants
 * them (the repository and the temp folders, toolgate's own variables), `broad` as the test task itself runs, and
 * `broadNet` that plus the network (the agent loop's endpoint).
 */
export const GRANTS = {
  scoped: [
    `--allow-read=${REPO},${TEMP_ROOT}`,
    `--allow-write=${TEMP_ROOT}`,
    "--allow-env=TOOLGATE_TOOLS,NO_COLOR,PATH,HOME",
  ],
  broad: ["--allow-read", "--allow-write", "--allow-env", "--allow-run"],
  broadNet: ["--allow-read", "--allow-write", "--allow-env", "--allow-run", "--allow-net"],
} as const;

/**
 * The arguments of `deno` that start the CLI (`src/main.ts`, with toolgate's own configuration) under `grants`:
 * every test that starts the CLI as a process builds its command line here.
 *
 * @example
 * ```ts ignore
 * new Deno.Command(Deno.execPath(), { args: cliArgs(GRANTS.broad, ["validate"]) });
 * ```
 */
export function cliArgs(grants: readonly string[], args: readonly string[]): string[] {
  return ["run", "--no-prompt", ...grants, "--config", join(REPO, "deno.json"), MAIN, ...args];
}

/** A temp folder that removes itself at the end of its `await using` scope. */
export interface TempDir extends AsyncDisposable {
  readonly path: string;
}

/**
 * Makes a temp folder, removed when the scope that holds it ends.
 *
 * @example
 * ```ts ignore
 * await using dir = await tempDir();
 * await Deno.writeTextFile(`${dir.path}/a.txt`, "a");
 * ```
 */
export async function tempDir(): Promise<TempDir> {
  const path = await Deno.makeTempDir({ prefix: "toolgate_test_" });
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }),
  };
}

/** A shell script that prints an empty JSON object: enough to stand in for a tool. */
const PROGRAM = "#!/bin/sh\necho '{}'\n";

/**
 * Writes `files` (paths relative to `root`) and makes those under `tools/bin/` executable; a value that is not a
 * string is written as JSON.
 */
export async function writeFiles(root: string, files: Record<string, unknown>): Promise<void> {
  for (const [relative, content] of Object.entries(files)) {
    const path = join(root, relative);
    await Deno.mkdir(dirname(path), { recursive: true });
    const body = typeof content === "string" ? content : JSON.stringify(content, null, 2);
    await Deno.writeTextFile(path, body);
    if (relative.startsWith("tools/bin/")) await Deno.chmod(path, 0o755);
  }
}

/** Writes a manifest (raw text, or a value written as JSON) and the named `tools/bin` programs into `root`. */
export async function writeManifest(
  root: string,
  manifest: unknown,
  programs: readonly string[] = [],
): Promise<string> {
  const files: Record<string, unknown> = { "tools.json": manifest };
  for (const program of programs) files[join("tools/bin", program)] = PROGRAM;
  await writeFiles(root, files);
  return join(root, "tools.json");
}

/** What a finished process left behind. */
export interface ProcessResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@linkcode runCli}. */
export interface RunOptions {
  /** The working directory (default: the repository). */
  cwd?: string;
  /** Variables added to the child's environment. */
  env?: Record<string, string>;
  /** Start from an empty environment (PATH and HOME are kept so that deno can run). */
  clearEnv?: boolean;
  /** Text written to stdin. */
  stdin?: string;
}

/**
 * Where Deno keeps its cache for this user. A child given a HOME of its own must get this as DENO_DIR, or it
 * starts an empty cache and downloads every npm package again (tens of seconds on a busy machine).
 */
export function denoDir(): string {
  const set = Deno.env.get("DENO_DIR");
  if (set) return set;
  const cache = Deno.env.get("XDG_CACHE_HOME") || join(Deno.env.get("HOME") ?? "/root", ".cache");
  return join(cache, "deno");
}

/** The environment a started CLI sees: this one (or, with `clearEnv`, only PATH, HOME and DENO_DIR) and `env`. */
function childEnv(options: RunOptions): Record<string, string> {
  // An INIT_CWD inherited from the `deno task test` that runs these tests would tell a nested `deno task` (and
  // toolgate's launcher) that the command was typed in this repository: no child sees it.
  const inherited = Deno.env.toObject();
  delete inherited.INIT_CWD;
  const env: Record<string, string> = options.clearEnv
    ? { NO_COLOR: "1", ...options.env }
    : { ...inherited, NO_COLOR: "1", ...options.env };
  if (options.clearEnv) {
    for (const key of ["PATH", "HOME"]) {
      const value = Deno.env.get(key);
      if (value !== undefined && env[key] === undefined) env[key] = value;
    }
  }
  // A child given a HOME of its own keeps this user's Deno cache.
  env.DENO_DIR ??= denoDir();
  return env;
}

/** Runs a program to its end, feeding `stdin`, and returns its exit code and decoded output. */
export async function runProgram(
  program: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<ProcessResult> {
  const child = new Deno.Command(program, {
    args: [...args],
    cwd: options.cwd ?? REPO,
    env: childEnv(options),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return await finish(child, options.stdin);
}

/** Feeds a piped child's stdin, waits for its end, and returns its exit code and decoded output. */
export async function finish(child: Deno.ChildProcess, stdin = ""): Promise<ProcessResult> {
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const output = await child.output();
  const decoder = new TextDecoder();
  return { code: output.code, stdout: decoder.decode(output.stdout), stderr: decoder.decode(output.stderr) };
}

/**
 * Runs the real CLI (`src/main.ts`) as a subprocess. Its permissions are scoped (the repository and the temp
 * folders, toolgate's own variables), as a user following `toolgate permissions` would grant them: unscoped
 * grants make the CLI print a warning first.
 */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<ProcessResult> {
  return runProgram(Deno.execPath(), cliArgs(GRANTS.scoped, args), options);
}

/**
 * Runs the CLI in this process through `main.run(argv, io)`, with an {@linkcode Io} that records what it writes:
 * for help, usage and listing cases, which need no process of their own. The test process's own (broad) grants
 * are not reported: the warning about them is the subprocess tests' concern.
 *
 * @example
 * ```ts ignore
 * const { code, stdout } = await runInProcess(["--help"]);
 * ```
 */
export async function runInProcess(
  args: readonly string[],
  options: RunOptions = {},
): Promise<ProcessResult> {
  let stdout = "";
  let stderr = "";
  const io: Io = {
    env: childEnv(options),
    cwd: options.cwd ?? REPO,
    stdout: (text) => Promise.resolve(void (stdout += text)),
    stderr: (text) => Promise.resolve(void (stderr += text)),
    stdin: () => Promise.resolve(options.stdin ?? ""),
    interactive: false,
    broadGrants: () => [],
  };
  const code = await runMain(args, io);
  return { code, stdout, stderr };
}

/**
 * An {@linkcode Io} that keeps what the command writes (`out`, `err`), for a test that calls `main.run` itself.
 *
 * @example
 * ```ts ignore
 * const io = memoryIo();
 * await run(["--version"], io);
 * io.out; // "toolgate 0.x\n"
 * ```
 */
export function memoryIo(): Io & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    env: {},
    cwd: Deno.cwd(),
    interactive: false,
    stdin: () => Promise.resolve(""),
    stdout: (text: string) => {
      io.out += text;
      return Promise.resolve();
    },
    stderr: (text: string) => {
      io.err += text;
      return Promise.resolve();
    },
  };
  return io;
}

/** True when the text carries a JavaScript stack trace. */
export function hasStackTrace(text: string): boolean {
  return text.includes("    at ") || text.includes("Uncaught") || text.includes("Stack backtrace");
}

/** The `agent` task's own flags: the launcher's, as `deno task agent` and the installed command start it. */
export function launcherFlags(): string[] {
  const task: string = JSON.parse(Deno.readTextFileSync(join(REPO, "deno.json"))).tasks.agent;
  return task.split(" ").filter((word) => word.startsWith("--"));
}

/**
 * The arguments of `deno` that start `toolgate ARGS` as the installed command does: the launcher, which works out
 * the least permission set for the run and starts toolgate under it.
 *
 * @example
 * ```ts ignore
 * new Deno.Command(Deno.execPath(), { args: launcherArgs(["doctor"]) });
 * ```
 */
export function launcherArgs(args: readonly string[]): string[] {
  const entry = ["--config", join(REPO, "deno.json"), join(REPO, "src", "launch.ts")];
  return ["run", ...launcherFlags(), ...entry, ...args];
}

/**
 * The whole argv of `toolgate ARGS` through the launcher ({@linkcode launcherArgs} after deno itself).
 *
 * @example
 * ```ts ignore
 * const run = await runInPty(launcherArgv(["call", "get_time", "{}"]), { env, cwd });
 * ```
 */
export function launcherArgv(args: readonly string[]): string[] {
  return [Deno.execPath(), ...launcherArgs(args)];
}

/**
 * The whole environment of a child that inherits nothing: `extra`, NO_COLOR, and this process's PATH, HOME and
 * DENO_DIR (deno needs them; they win over `extra`).
 *
 * @example
 * ```ts ignore
 * openTerminal(argv, { cwd: dir, env: hostEnv({ XDG_STATE_HOME: state }) });
 * ```
 */
export function hostEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1", ...extra };
  for (const name of ["PATH", "HOME", "DENO_DIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/**
 * Runs `toolgate ARGS` the way the README does: the launcher, which works out the least permission set for the
 * run and starts toolgate under it, typed in `cwd`.
 */
export function runToolgate(
  args: readonly string[],
  cwd: string,
  env: Record<string, string> = {},
  stdin?: string,
): Promise<ProcessResult> {
  return runProgram(Deno.execPath(), launcherArgs(args), { cwd, env, stdin });
}
