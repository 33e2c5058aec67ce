/**
 * Confinement of tool processes with bubblewrap (Linux): a read-only filesystem but for the profile's writable
 * paths and a private /tmp, no network unless the profile allows it, new namespaces (pid among them) so that
 * ending bwrap ends every descendant, and resource limits through prlimit where it is present.
 *
 * @module
 */
import { isAbsolute, resolve } from "node:path";
import type { SandboxMode } from "./executor.ts";
import type { PermissionProfile } from "./profiles.ts";

/** Whether tools can be confined here, found out once. */
export type SandboxSupport =
  | { readonly ok: true; readonly bwrap: string; readonly prlimit: boolean }
  | { readonly ok: false; readonly reason: string };

/** Where the system keeps what programs need to start, for profiles that narrow `read`. */
const SYSTEM_PATHS = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc"];

async function probeRun(bwrap: string, inner: string[]): Promise<{ ok: boolean; detail: string }> {
  try {
    const output = await new Deno.Command(bwrap, {
      args: [
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--",
        ...inner,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      clearEnv: true,
      env: { PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" },
    }).output();
    return {
      ok: output.success,
      detail: new TextDecoder().decode(output.stderr).trim().split("\n")[0] ?? "",
    };
  } catch (error) {
    const detail = error instanceof Deno.errors.NotFound
      ? "bubblewrap (bwrap) is not installed"
      : error instanceof Deno.errors.NotCapable
      ? "toolgate is not permitted to run bwrap (--allow-run)"
      : (error as Error).message;
    return { ok: false, detail };
  }
}

/**
 * Finds out whether `bwrap` works here (it needs user namespaces), and whether prlimit is there inside it.
 *
 * @example
 * ```ts
 * import { probeSandbox } from "./sandbox.ts";
 * const support = await probeSandbox("bwrap");
 * console.log(support.ok ? "confined" : `unconfined: ${support.reason}`);
 * ```
 */
export async function probeSandbox(bwrap: string): Promise<SandboxSupport> {
  if (Deno.build.os !== "linux") {
    return { ok: false, reason: `bubblewrap confinement is Linux-only (this is ${Deno.build.os})` };
  }
  const basic = await probeRun(bwrap, ["true"]);
  if (!basic.ok) return { ok: false, reason: basic.detail || "bubblewrap does not work here" };
  const limits = await probeRun(bwrap, ["prlimit", "--nofile=256", "--", "true"]);
  return { ok: true, bwrap, prlimit: limits.ok };
}

/** Everything needed to confine one call. */
export interface ConfineRequest {
  readonly program: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly profile: PermissionProfile;
  /** Folders that must stay visible even under the private /tmp (the manifest's, so the tool can start). */
  readonly visible: readonly string[];
  readonly prlimit: boolean;
}

function limitArgs(profile: PermissionProfile): string[] {
  const { cpuSeconds, fileSizeBytes, processes } = profile.limits;
  const args: string[] = [];
  if (cpuSeconds !== undefined) args.push(`--cpu=${cpuSeconds}`);
  if (fileSizeBytes !== undefined) args.push(`--fsize=${fileSizeBytes}`);
  if (processes !== undefined) args.push(`--nproc=${processes}`);
  return args.length > 0 ? ["prlimit", ...args, "--"] : [];
}

/**
 * The bwrap arguments that run `program` confined by its profile. The environment is not on this command line:
 * the caller starts bwrap with exactly the tool's environment (cleared to the allowlist), which bwrap hands on,
 * so that no secret value ever shows in a process listing.
 *
 * @example
 * ```ts
 * import { bwrapArgs } from "./sandbox.ts";
 * // new Deno.Command("bwrap", { args: bwrapArgs(request), clearEnv: true, env })
 * ```
 */
export function bwrapArgs(request: ConfineRequest): string[] {
  const { profile, cwd } = request;
  const args = ["--unshare-all"];
  if (profile.net !== false) args.push("--share-net");
  args.push("--die-with-parent", "--new-session");
  const wholeFs = profile.read.includes("/");
  if (wholeFs) args.push("--ro-bind", "/", "/");
  else for (const path of SYSTEM_PATHS) args.push("--ro-bind-try", path, path);
  args.push("--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp");
  // Bound after the private /tmp, so that a workspace or manifest that lives under /tmp stays visible.
  const readable = [...(wholeFs ? [] : profile.read.map((p) => resolve(cwd, p))), ...request.visible, cwd];
  for (const path of new Set(readable)) args.push("--ro-bind-try", path, path);
  for (const path of new Set(profile.write.map((p) => isAbsolute(p) ? p : resolve(cwd, p)))) {
    args.push("--bind-try", path, path);
  }
  args.push("--chdir", cwd, "--");
  if (request.prlimit) args.push(...limitArgs(profile));
  args.push(request.program, ...request.args);
  return args;
}

/** The warning that travels with an unconfined call, in the envelope and the audit line. */
export function unconfinedWarning(mode: SandboxMode, reason?: string): string {
  return mode === "off"
    ? "not confined: the sandbox is off (--sandbox off)"
    : `not confined: ${reason ?? "bubblewrap is not available"}`;
}
