/** Shared by the attack tests: the sandbox probe, tests that need bubblewrap, and the script fixture's calls. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type Envelope } from "../../src/contract.ts";
import { Executor } from "../../src/run/executor.ts";
import { type ExecutorOptions } from "../../src/run/call_options.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { probeSandbox } from "../../src/sandbox/sandbox.ts";
import { FIXTURES, writeFiles } from "../support.ts";
import { type Facility, facilityTest, isRequired } from "../requires.ts";

/** The fixture manifest whose tools run the shell script they are given, under several profiles. */
export const SCRIPT_FIXTURE: string = join(FIXTURES, "security", "tools.json");

/** What confinement can use on this machine. */
export const SUPPORT = await probeSandbox(
  Deno.env.get("PATH") ?? "/usr/bin:/bin",
  "bwrap",
  Deno.env.toObject(),
);
/** On CI a test that needs bubblewrap (or the cgroups root needs) fails instead of skipping. */
export const REQUIRED = isRequired("bwrap");

/**
 * A test that needs a host facility (bubblewrap unless `facility` says otherwise): ignored with a printed reason
 * where it is missing, failed instead on CI ({@linkcode requires} decides). `missing` says why it cannot run here
 * (`undefined` when it can).
 */
export function hostTest(
  name: string,
  missing: string | undefined,
  fn: () => Promise<void>,
  facility: Facility = "bwrap",
): void {
  facilityTest(facility, missing, { name, fn });
}

/** Why confinement cannot be tested here, or `undefined`. */
export const NO_BWRAP: string | undefined = SUPPORT.ok ? undefined : SUPPORT.reason;

/** A test that needs bubblewrap. */
export function confinedTest(name: string, fn: () => Promise<void>): void {
  hostTest(name, NO_BWRAP, fn);
}

/** An executor over the script fixture (or another manifest) for a workspace, confined unless told otherwise. */
export async function scriptExecutor(
  cwd: string,
  options: Partial<ExecutorOptions> = {},
  manifestPath: string = SCRIPT_FIXTURE,
): Promise<Executor> {
  const loaded = await loadManifest(manifestPath);
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  return new Executor({
    manifest: loaded.manifest,
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" },
    cwd,
    auditDir: null,
    sandbox: "require",
    ...options,
  });
}

/**
 * An executor over a workspace `dir` of its own: its manifest's one tool, `tool`, runs the script it is given (the
 * script fixture's runner, made executable) and may reach `net`; the workspace is its state folder too; `options` over those.
 */
export async function netScriptExecutor(
  dir: string,
  tool: string,
  net: readonly string[],
  options: Partial<ExecutorOptions> = {},
): Promise<Executor> {
  await writeFiles(dir, {
    "tools.json": { tools: [{ name: tool, command: ["./tools/bin/run_script"], permissions: { net } }] },
    "tools/bin/run_script": await Deno.readTextFile(join(SCRIPT_FIXTURE, "..", "tools", "bin", "run_script")),
  });
  return await scriptExecutor(dir, {
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root", XDG_STATE_HOME: dir },
    ...options,
  }, join(dir, "tools.json"));
}

/** What the script fixture printed: its exit status and its output on one line. */
export interface ScriptResult {
  readonly status: number;
  readonly out: string;
}

/** Runs `script` (no double quotes, no backslashes) through tool `tool`; the call itself must succeed. */
export async function runScript(executor: Executor, tool: string, script: string): Promise<ScriptResult> {
  const envelope: Envelope = await executor.call(tool, JSON.stringify({ script }));
  assert.ok(envelope.ok, JSON.stringify(envelope));
  return envelope.result as ScriptResult;
}

/** A temp folder, real path (the sandbox compares real paths). */
export async function realTempDir(prefix = "toolgate_sec_"): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix }));
}

/** The bytes of every file under `dir`, by relative path: to prove that nothing changed. */
export async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (rel: string) => {
    for await (const entry of Deno.readDir(join(dir, rel))) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile) out.set(path, await Deno.readTextFile(join(dir, path)));
      else out.set(path, `<${entry.isSymlink ? "symlink" : "other"}>`);
    }
  };
  await walk("");
  return out;
}
