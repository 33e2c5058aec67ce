/** Shared test helpers: temp folders holding a real manifest and `tools/bin` programs, and the CLI as a process. */
import { dirname, join } from "node:path";

/** The repository's root folder. */
export const REPO = join(import.meta.dirname!, "..");

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

/** Runs a program to its end, feeding `stdin`, and returns its exit code and decoded output. */
export async function runProgram(
  program: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<ProcessResult> {
  // An INIT_CWD inherited from the `deno task test` that runs these tests would tell a nested `deno task` (and
  // toolgate's launcher) that the command was typed in this repository: no child sees it.
  const inherited = Deno.env.toObject();
  delete inherited.INIT_CWD;
  const env: Record<string, string> = options.clearEnv
    ? { NO_COLOR: "1", ...options.env }
    : { ...inherited, NO_COLOR: "1", ...options.env };
  if (options.clearEnv) {
    for (const key of ["PATH", "HOME", "DENO_DIR"]) {
      const value = Deno.env.get(key);
      if (value !== undefined && env[key] === undefined) env[key] = value;
    }
  }
  const child = new Deno.Command(program, {
    args: [...args],
    cwd: options.cwd ?? REPO,
    env,
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

/** Where `Deno.makeTempDir` puts its folders. */
const TEMP_ROOT = Deno.env.get("TMPDIR") || "/tmp";

/**
 * Runs the real CLI (`src/main.ts`) as a subprocess. Its permissions are scoped (the repository and the temp
 * folders, toolgate's own variables), as a user following `toolgate permissions` would grant them: unscoped
 * grants make the CLI print a warning first.
 */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<ProcessResult> {
  return runProgram(Deno.execPath(), [
    "run",
    "--no-prompt",
    `--allow-read=${REPO},${TEMP_ROOT}`,
    `--allow-write=${TEMP_ROOT}`,
    "--allow-env=TOOLGATE_TOOLS,NO_COLOR,PATH,HOME",
    "--config",
    join(REPO, "deno.json"),
    join(REPO, "src/main.ts"),
    ...args,
  ], options);
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
 * Runs `toolgate ARGS` the way the README does: the launcher, which works out the least permission set for the
 * run and starts toolgate under it, typed in `cwd`.
 */
export function runToolgate(
  args: readonly string[],
  cwd: string,
  env: Record<string, string> = {},
  stdin?: string,
): Promise<ProcessResult> {
  return runProgram(
    Deno.execPath(),
    ["run", ...launcherFlags(), "--config", join(REPO, "deno.json"), join(REPO, "src", "launch.ts"), ...args],
    { cwd, env, stdin },
  );
}
