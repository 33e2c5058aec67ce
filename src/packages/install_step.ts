/**
 * One step of a package install (`npm install`, `python -m venv`, `pip download`, `pip install`) run as a tool is
 * run: through the launcher (src/sandbox/tool_launch.ts), confined by a profile of the step's own that writes its
 * install folder only and reaches the registry's hosts only (through the egress proxy), with a cleared environment.
 * Not here: what each installer runs (`npm_install.ts`, `pip_install.ts`).
 *
 * @module
 */
import { isWithin } from "../contract/relative_path.ts";
import { DEFAULT_LIMITS, type PermissionProfile } from "../manifest/profiles.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { FALLBACK_PATH, PROXY_ENV, type ToolLauncher } from "../sandbox/tool_launch.ts";

/** One install step: the program, and what it may touch. */
export interface InstallStep {
  /** What the step is, for messages (`npm install @scope/name`). */
  readonly what: string;
  /** The program, an absolute path. */
  readonly program: string;
  readonly args: readonly string[];
  /** Folders it writes. */
  readonly write: readonly string[];
  /** Folders it reads besides the system's. */
  readonly read: readonly string[];
  /** The hosts it reaches (`host` or `host:port`), or none. */
  readonly net: readonly string[];
  /** Its whole environment besides PATH (and the proxy's variables). */
  readonly env: Readonly<Record<string, string>>;
}

/** What a step printed, or why it failed (one line, its stderr's last lines with it). */
export type StepResult =
  | { readonly ok: true; readonly stdout: string }
  | { readonly ok: false; readonly reason: string };

/** A step's limits: an install runs many files through a few processes for up to a few minutes. */
const STEP_LIMITS = Object.freeze({ ...DEFAULT_LIMITS, cpuSeconds: 600, processes: 512 });

/** The last lines of a step's stderr that say why it failed. */
function lastLines(text: string): string {
  // npm and pip end on where their log went and how else to install: the lines that say what failed come first
  // (npm's `npm error code E404`, `npm error 404 Not Found - GET ...`; pip's `ERROR: ...`).
  const lines = text.trim().split("\n").map((line) => line.trim())
    .filter((line) =>
      line !== "" &&
      !/complete log of this run|^npm error 404 +(Note that|tarball,|'|It was specified)/i.test(line)
    );
  const said = lines.filter((line) => /^(npm error (code|404 Not Found|E[A-Z0-9]+)|ERROR:)/.test(line));
  return (said.length > 0 ? said.slice(0, 3) : lines.slice(-3)).join(" | ").slice(0, 600);
}

/**
 * Runs one install step under `launcher` (confined when the sandbox mode confines: a step writes, so it does not
 * run unconfined unless the user runs toolgate with `--sandbox off`).
 *
 * @example
 * ```ts ignore
 * // Ignored: a launcher needs a manifest and a control plane (src/sandbox/tool_launch.ts).
 * const done = await runStep(launcher, { what: "npm install x", program: "/usr/bin/npm", args: ["install", "x"],
 *   write: [staging], read: [], net: ["registry.npmjs.org"], env: {} }, "/usr/bin:/bin");
 * if (!done.ok) console.error(done.reason);
 * ```
 */
export async function runStep(
  launcher: ToolLauncher,
  step: InstallStep,
  path = FALLBACK_PATH,
): Promise<StepResult> {
  const profile: PermissionProfile = Object.freeze({
    name: "install",
    read: Object.freeze([...step.read]),
    write: Object.freeze([...step.write]),
    net: step.net.length > 0 ? Object.freeze([...step.net]) : false,
    env: [],
    limits: STEP_LIMITS,
  });
  const spec: ToolSpec = Object.freeze({
    index: -1,
    name: "install",
    command: Object.freeze([step.program, ...step.args]),
    program: step.program,
    args: step.args,
    envPassthrough: [],
    secrets: [],
    credentials: [],
    asks: [],
    readOnly: false,
    concurrent: false,
    alwaysLoad: false,
    profile,
    present: true,
  });
  // A program inside a folder the step writes (a venv's python) is shown with it, not bound on its own.
  const files = step.write.some((dir) => isWithin(step.program, dir)) ? [] : [step.program];
  const launch = await launcher.launch(spec, { program: step.program, args: step.args, files });
  if (!launch.ok) {
    const said = launch.envelope.message.replace(/^The tool cannot/, "It cannot").replace(
      /^The tool's/,
      "Its",
    );
    return { ok: false, reason: `${step.what} cannot run: ${said}` };
  }
  const env: Record<string, string> = { PATH: path, ...step.env };
  if (launch.unregister) Object.assign(env, PROXY_ENV, launch.env ?? {});
  const group = launcher.groupLauncher(launch);
  try {
    const out = await new Deno.Command(group[0] ?? launch.program, {
      args: group.length > 0 ? [...group.slice(1), launch.program, ...launch.args] : [...launch.args],
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    if (!out.success) {
      const said = lastLines(new TextDecoder().decode(out.stderr)) || lastLines(stdout);
      return {
        ok: false,
        reason: `${step.what} failed (exit ${out.code})${said === "" ? "" : `: ${said}`}`,
      };
    }
    return { ok: true, stdout };
  } catch (error) {
    return { ok: false, reason: `${step.what} cannot run: ${(error as Error).message}` };
  } finally {
    launcher.release(launch);
  }
}
