/**
 * Helpers for the executor's tests: manifests over the fixture tools, executors with the sandbox off (pids the
 * tests read are host pids), liveness checks by pid, the audit log as records, and the CLI as a process.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { FailureEnvelope } from "../src/contract.ts";
import { cliArgs, finish, FIXTURES, GRANTS, REPO } from "./support.ts";
import { Executor } from "../src/run/executor.ts";
import { type ExecutorOptions } from "../src/run/call_options.ts";
import { validateManifest } from "../src/manifest/manifest.ts";
import { type Manifest } from "../src/manifest/manifest_types.ts";
import { loadSchemaEngine } from "../src/manifest/schema.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

// `tests/fixtures`: relative `./tools/bin/x` commands of a manifest placed there resolve to its tools.
export { FIXTURES } from "./support.ts";
/** The fixture tools' folder. */
export const BIN: string = join(FIXTURES, "tools", "bin");
/** A manifest path in the fixtures folder (the file need not exist for {@linkcode manifestOf}). */
export const FIXTURE_MANIFEST: string = join(FIXTURES, "manifest.json");

/** A tool entry as a manifest holds it. */
export type ToolEntry = Record<string, unknown>;

/**
 * Validates `tools` as a manifest placed in `tests/fixtures` (absolute commands allowed); throws on any error.
 *
 * @example
 * ```ts ignore
 * const manifest = manifestOf([{ name: "cat", command: ["/bin/cat"] }]);
 * ```
 */
export function manifestOf(tools: readonly ToolEntry[], path: string = FIXTURE_MANIFEST): Manifest {
  const result = validateManifest({ tools }, path, { allowAbsoluteCommands: true });
  if (!result.ok) throw new Error(`bad test manifest: ${result.errors.join("; ")}`);
  return result.manifest;
}

/** The smallest environment a tool needs: PATH and HOME of this process. */
export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root", ...extra };
}

/** Whether the tests run as root (who can give a folder to another user). `id`: the test task grants no sys. */
export const IS_ROOT: boolean =
  new TextDecoder().decode(new Deno.Command("id", { args: ["-u"] }).outputSync().stdout).trim() === "0";

/** The audit key of the tests' executors: a fixed one, so that no test makes a key in the real home. */
export const AUDIT_KEY: Uint8Array = new Uint8Array(32).fill(7);

/** An executor with no audit log and the sandbox off, unless `options` say otherwise. */
export function executorFor(manifest: Manifest, options: Partial<ExecutorOptions> = {}): Executor {
  return new Executor({
    manifest,
    env: baseEnv(),
    cwd: FIXTURES,
    auditDir: null,
    auditKey: AUDIT_KEY,
    sandbox: "off",
    graceMs: 500,
    ...options,
  });
}

/** A one-tool executor: `executorOf({ command: [...] })` names the tool `t`. */
export function executorOf(tool: ToolEntry, options: Partial<ExecutorOptions> = {}): Executor {
  return executorFor(manifestOf([{ name: "t", ...tool }]), options);
}

/**
 * The pids of `pids` that are live processes (a zombie counts as dead: it runs nothing and holds nothing). Asks
 * `ps`, because Deno lets only an unrestricted process read `/proc/<pid>`.
 */
export async function alivePids(pids: readonly number[]): Promise<number[]> {
  if (pids.length === 0) return [];
  const output = await new Deno.Command("ps", {
    args: ["-o", "pid=,stat=", "-p", pids.join(",")],
    stdout: "piped",
    stderr: "null",
  }).output();
  const alive: number[] = [];
  for (const line of new TextDecoder().decode(output.stdout).split("\n")) {
    const [pid, stat] = line.trim().split(/\s+/);
    if (pid && stat && !stat.startsWith("Z") && !stat.startsWith("X")) alive.push(Number(pid));
  }
  return alive;
}

/** True while `pid` is a live process. */
export async function isAlive(pid: number): Promise<boolean> {
  return (await alivePids([pid])).length > 0;
}

/** Waits up to `ms` for every pid to be gone; returns those still alive. */
export async function waitGone(pids: readonly number[], ms = 1000): Promise<number[]> {
  const deadline = performance.now() + ms;
  while (true) {
    const alive = await alivePids(pids);
    if (alive.length === 0 || performance.now() > deadline) return alive;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Kills what a failed test left alive: only the pids a fixture of this test reported. */
export function killLeftovers(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Gone already.
    }
  }
}

/** The pids a fixture printed as `pids SELF CHILD`. */
export function parsePids(text: string): number[] {
  const match = /pids (\d+) (\d+)/.exec(text);
  if (!match) throw new Error(`no pids line in ${JSON.stringify(text.slice(0, 200))}`);
  return [Number(match[1]), Number(match[2])];
}

/** Waits until `path` exists and returns its text. */
export async function waitForFile(path: string, ms = 10_000): Promise<string> {
  const deadline = performance.now() + ms;
  while (true) {
    try {
      const text = await Deno.readTextFile(path);
      if (text !== "") return text;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    if (performance.now() > deadline) throw new Error(`${path} did not appear within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every line of every audit file in `dir`, parsed, files in name order. */
export async function readAudit(dir: string): Promise<Record<string, unknown>[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) if (entry.isFile) names.push(entry.name);
  const records: Record<string, unknown>[] = [];
  for (const name of names.sort()) {
    const text = await Deno.readTextFile(join(dir, name));
    for (const line of text.split("\n")) if (line !== "") records.push(JSON.parse(line));
  }
  return records;
}

/** A temp folder removed when its `await using` scope ends. */
export async function scratch(): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_exec_" }));
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

/** Starts the CLI (`src/main.ts`) as a process with piped stdio; the caller reads and waits. */
export function spawnCli(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; clearEnv?: boolean } = {},
): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: cliArgs(GRANTS.broad, args),
    cwd: options.cwd ?? REPO,
    env: { NO_COLOR: "1", ...options.env },
    clearEnv: options.clearEnv ?? false,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** What a finished CLI run left behind. */
export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI to its end with `stdin` and returns its exit code and output. */
export async function cli(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; stdin?: string; clearEnv?: boolean } = {},
): Promise<CliResult> {
  return await finish(spawnCli(args, options), options.stdin);
}

/** The environment `/usr/bin/env` wrote to `env.txt` in `dir`: the values themselves, which no envelope carries. */
export async function envWritten(dir: string): Promise<Record<string, string>> {
  const text = await Deno.readTextFile(join(dir, "env.txt"));
  return Object.fromEntries(
    text.trim().split("\n").map((line) => {
      const at = line.indexOf("=");
      return [line.slice(0, at), line.slice(at + 1)];
    }),
  );
}

/**
 * Runs `tests/fixtures/peak_memory.ts ARGS` (a flooding fixture tool through an executor, in a process of its own)
 * and returns the envelope, the process's peak memory and its stderr; fails unless it exited 0.
 */
export async function peakMemory(
  args: readonly string[],
): Promise<{ envelope: FailureEnvelope; vmHwmKb: number; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      // Deno lets only an unrestricted process read its own /proc/self/status.
      "--allow-all",
      "--config",
      join(REPO, "deno.json"),
      join(FIXTURES, "peak_memory.ts"),
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  return { ...JSON.parse(new TextDecoder().decode(output.stdout)), stderr };
}
