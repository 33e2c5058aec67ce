/**
 * bubblewrap's command line for one confined call: the namespaces, the system folders and masks, the private
 * mounts, the profile's binds under toolgate's control plane, and the limits. What a call sees is decided here
 * from the probe's findings (`sandbox.ts`), which re-exports these names.
 *
 * @module
 */
import { isAbsolute, resolve } from "../base/paths.ts";
import { isWithin } from "../contract/relative_path.ts";
import { lstatOrUndefined } from "../base/lstat.ts";
import type { ControlPlane } from "./control_plane.ts";
import type { PermissionProfile } from "../manifest/profiles.ts";
import type { SandboxSupport } from "./sandbox.ts";

/**
 * The options that never change between calls: namespaces, no capabilities, the system folders, masks. The probe
 * runs bwrap with these too, so that what it proves is what every call gets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { baseArgs } from "./bwrap_args.ts";
 * assert.deepEqual(baseArgs({ ok: true, bwrap: "/usr/bin/bwrap", userns: false, root: true, system: [], masks: [] }, true), ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--ro-bind", "/", "/"]);
 * ```
 */
export function baseArgs(support: Extract<SandboxSupport, { ok: true }>, wholeFs: boolean): string[] {
  const args = ["--unshare-all"];
  if (support.userns) args.push("--unshare-user", "--disable-userns");
  args.push("--die-with-parent", "--new-session", "--cap-drop", "ALL");
  if (wholeFs) args.push("--ro-bind", "/", "/");
  else {
    for (const entry of support.system) {
      if (entry.link !== undefined) args.push("--symlink", entry.link, entry.path);
      else args.push("--ro-bind", entry.path, entry.path);
    }
  }
  for (const mask of support.masks) {
    if (mask.dir) args.push("--tmpfs", mask.path, "--remount-ro", mask.path);
    else args.push("--ro-bind", "/dev/null", mask.path);
  }
  return args;
}

/**
 * The private /dev and /tmp: size-capped tmpfs mounts, /dev itself read-only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { privateMounts } from "./bwrap_args.ts";
 * assert.ok(privateMounts(1024).includes("/tmp"));
 * ```
 */
export function privateMounts(tmpfsBytes: number): string[] {
  const size = String(tmpfsBytes);
  return [
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--size",
    size,
    "--tmpfs",
    "/dev/shm",
    "--remount-ro",
    "/dev",
    "--size",
    size,
    "--tmpfs",
    "/tmp",
  ];
}

/** Whether `path` is a file (not a folder, and there); a path toolgate cannot look at counts as a folder. */
function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** What of a repository's `.git` runs code outside the sandbox: its hooks, and its config (`core.hooksPath`,
 * `core.fsmonitor`, filter drivers). */
const GIT_CODE = ["hooks", "config"];

/** Everything needed to confine one call. */
export interface ConfineRequest {
  readonly program: string;
  readonly args: readonly string[];
  /** The workspace: the tool's working directory, as a real path. */
  readonly cwd: string;
  readonly profile: PermissionProfile;
  /**
   * The tool's own files (its program, or the runtime and code of a built-in tool) and what its program needs
   * (the install folder of its interpreter, see `program_needs.ts`), shown read-only.
   */
  readonly files: readonly string[];
  readonly controlPlane: ControlPlane;
  /** Limits a cgroup around the call already enforces (so no rlimit is needed for them). */
  readonly cgroupLimits?: { readonly processes: boolean; readonly memory: boolean };
  /**
   * For a profile that names hosts: the egress proxy's socket on the host, and where it shows inside (the call
   * then has no network but its loopback, and the proxy is its only way out).
   */
  readonly proxy?: { readonly socket: string; readonly inside: string };
  /** For a call with bound credentials: the CA bundle it trusts (read-only), and where it shows inside. */
  readonly caBundle?: { readonly file: string; readonly inside: string };
}

function limitArgs(
  support: Extract<SandboxSupport, { ok: true }>,
  profile: PermissionProfile,
  cgroupLimits: ConfineRequest["cgroupLimits"],
): string[] {
  const { cpuSeconds, fileSizeBytes, processes, memoryBytes } = profile.limits;
  // With cgroups, the wrapper in front of bwrap sets the CPU, file-size and data rlimits, and everything inside
  // inherits them: no prlimit process per call for those.
  const args = cgroupLimits
    ? []
    : [`--cpu=${cpuSeconds}`, `--fsize=${fileSizeBytes}`, `--data=${memoryBytes}`];
  // Root is exempt from RLIMIT_NPROC; for anyone else it counts the sandbox's own user namespace only: set inside.
  if (!cgroupLimits?.processes && !support.root) args.push(`--nproc=${processes}`);
  if (support.prlimit === undefined || args.length === 0) return [];
  return [support.prlimit, ...args, "--"];
}

function within(path: string, folders: readonly string[]): boolean {
  return folders.some((folder) => isWithin(path, folder));
}

/**
 * The bwrap arguments that run `program` confined by its profile. The environment is not on this command line:
 * the caller starts bwrap with exactly the tool's environment (cleared to the allowlist), which bwrap hands on,
 * so that no secret value ever shows in a process listing.
 *
 * @example Not run as a doc test: it needs a probed bubblewrap and a launch request (tool_launch.ts makes both).
 * ```ts ignore
 * import { bwrapArgs } from "./bwrap_args.ts";
 * new Deno.Command(support.bwrap, { args: bwrapArgs(support, request), clearEnv: true, env });
 * ```
 */
export function bwrapArgs(support: Extract<SandboxSupport, { ok: true }>, request: ConfineRequest): string[] {
  const { profile, cwd, controlPlane } = request;
  const hidden = controlPlane.hidden;
  const place = (path: string) => isAbsolute(path) ? resolve(path) : resolve(cwd, path);
  const wholeFs = profile.read.includes("/");
  const args = baseArgs(support, wholeFs);
  // A host list is enforced by the egress proxy: the network namespace stays the sandbox's own.
  if (profile.net === true) args.push("--share-net");
  args.push(...privateMounts(profile.limits.tmpfsBytes));

  const systemDirs = support.system.map((entry) => entry.path);
  const writable = [...new Set(profile.write.map(place))].filter((path) => !within(path, hidden));
  const readable = [
    ...request.files.filter((path) => wholeFs || !within(path, systemDirs)),
    ...(wholeFs ? [] : profile.read.map(place)),
    cwd,
  ];
  // Bound after the private /tmp, so that a workspace or a tool that lives under /tmp stays visible; parents
  // before what lies inside them, so that a later bind is never hidden under an earlier one.
  const binds = new Map<string, "--ro-bind-try" | "--bind-try">();
  for (const path of readable) if (!within(path, hidden)) binds.set(path, "--ro-bind-try");
  for (const path of writable) binds.set(path, "--bind-try");
  if (request.proxy) args.push("--bind", request.proxy.socket, request.proxy.inside);
  if (request.caBundle) args.push("--ro-bind", request.caBundle.file, request.caBundle.inside);
  const depth = (path: string) => path.split("/").length;
  for (const [path, how] of [...binds].sort(([a], [b]) => depth(a) - depth(b))) args.push(how, path, path);
  // The control plane over everything the tool may write: a read-only bind of each protected path inside a
  // writable one, and of each writable one inside a protected one.
  for (const protectedPath of controlPlane.readOnly) {
    for (const path of writable) {
      if (isWithin(protectedPath, path)) args.push("--ro-bind", protectedPath, protectedPath);
      else if (isWithin(path, protectedPath)) args.push("--ro-bind", path, path);
    }
  }
  // A repository's hooks and config run code on the person's next git command, outside any sandbox. In a folder
  // the tool may write, its `.git` is bound onto itself (a mount point cannot be renamed away and replaced) with
  // both read-only; objects, refs and the index stay writable, so that a tool can still commit.
  // A `.git` that is a file (a worktree's or a submodule's pointer to its git folder) is itself what redirects
  // git: read-only, whole (it has no hooks of its own to bind, and bwrap cannot bind into a file).
  for (const path of writable) {
    // A file it may write (the memory server's data file) holds no `.git`: bwrap's -try binds skip a missing
    // source, not one under a file ("Not a directory").
    if (isFile(path)) continue;
    const git = `${path}/.git`;
    if (lstatOrUndefined(git)?.isFile) {
      args.push("--ro-bind", git, git);
      continue;
    }
    args.push("--bind-try", git, git);
    for (const name of GIT_CODE) args.push("--ro-bind-try", `${git}/${name}`, `${git}/${name}`);
  }
  // toolgate's state and configuration: masked wherever they would show.
  const shown = wholeFs ? ["/"] : [...readable, ...writable];
  for (const path of hidden) {
    if (within(path, shown)) args.push("--tmpfs", path, "--remount-ro", path);
  }
  // The sandbox's own root (a tmpfs holding the mount points) would take writes of any size: read-only too.
  args.push("--remount-ro", "/", "--chdir", cwd, "--");
  args.push(...limitArgs(support, profile, request.cgroupLimits));
  args.push(request.program, ...request.args);
  return args;
}
