/**
 * Confinement of tool processes with bubblewrap (Linux). What a confined tool sees is an allowlist: the system
 * folders programs need (with the files that hold host secrets masked), the workspace, its own files (with what its
 * program needs, `program_needs.ts`) and what its profile names; nothing else of the home folder, `/root`, `/run`,
 * the host's `/tmp` or any host socket. It runs with
 * no capabilities (root included), in new namespaces (no network unless the profile allows it, its own pids so that
 * ending bwrap ends every descendant), with size-capped private tmpfs mounts, toolgate's control plane laid
 * read-only over whatever the profile lets it write, and resource limits.
 *
 * @module
 */
import { isAbsolute, isWithin, join, resolve } from "../base/paths.ts";
import { CGROUP_ENV, type CgroupSupport, detectCgroups, ownCgroups } from "./cgroups.ts";
import { readCache, writeCache } from "../state/state_cache.ts";
import { findProgram } from "../base/find_program.ts";
import { type ControlPlane } from "./control_plane.ts";
import type { PermissionProfile } from "../manifest/profiles.ts";

/** How tools are confined: `auto` (when bubblewrap works), `require` (unavailable without it), `off`. */
export type SandboxMode = "auto" | "require" | "off";

/**
 * The sandbox modes, for option parsing.
 *
 * @example
 * ```ts
 * import { SANDBOX_MODES } from "./sandbox.ts";
 * SANDBOX_MODES.includes("off"); // true
 * ```
 */
export const SANDBOX_MODES: readonly SandboxMode[] = ["auto", "require", "off"];

/** A system folder as the sandbox shows it: bound read-only, or (merged /usr) the same symlink. */
type SystemEntry = { readonly path: string; readonly link?: string };

/** Whether tools can be confined here, found out once. */
export type SandboxSupport =
  | {
    readonly ok: true;
    /** bwrap's absolute path: the very binary that was probed is the one that runs. */
    readonly bwrap: string;
    /** Whether this bwrap may make a user namespace (then nested ones are refused inside). */
    readonly userns: boolean;
    /** prlimit's absolute path inside the sandbox, when it is there. */
    readonly prlimit?: string;
    /** Where per-call cgroups can be made, if anywhere. */
    readonly cgroups?: CgroupSupport;
    /** Does this process run as root (then `RLIMIT_NPROC` never applies)? */
    readonly root: boolean;
    readonly system: readonly SystemEntry[];
    /** Host files and folders that hold secrets, masked inside the sandbox. */
    readonly masks: readonly { readonly path: string; readonly dir: boolean }[];
  }
  | { readonly ok: false; readonly reason: string };

/**
 * The folders every program may need, read-only (those that exist here are shown).
 *
 * @example
 * ```ts
 * import { SYSTEM_PATHS } from "./sandbox.ts";
 * SYSTEM_PATHS.includes("/usr"); // true
 * ```
 */
export const SYSTEM_PATHS: readonly string[] = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/etc",
];
/** Files under /etc that hold the host's secrets (password hashes, keys): masked even though /etc is shown. */
const SECRET_FILES = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/security/opasswd",
];
const SECRET_DIRS = ["/etc/ssl/private", "/etc/NetworkManager/system-connections", "/etc/krb5.keytab.d"];
const SSH_DIR = "/etc/ssh";
const PROBE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

function lstat(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.lstatSync(path);
  } catch {
    return undefined;
  }
}

function systemEntries(): SystemEntry[] {
  const entries: SystemEntry[] = [];
  for (const path of SYSTEM_PATHS) {
    const info = lstat(path);
    if (!info) continue;
    if (info.isSymlink) entries.push({ path, link: Deno.readLinkSync(path) });
    else if (info.isDirectory) entries.push({ path });
  }
  return entries;
}

function secretMasks(): { path: string; dir: boolean }[] {
  const masks: { path: string; dir: boolean }[] = [];
  for (const path of SECRET_FILES) if (lstat(path)?.isFile) masks.push({ path, dir: false });
  for (const path of SECRET_DIRS) if (lstat(path)?.isDirectory) masks.push({ path, dir: true });
  try {
    for (const entry of Deno.readDirSync(SSH_DIR)) {
      // The host's private keys; the public ones and ssh_config stay readable.
      if (entry.isFile && /^ssh_host_.*_key$/.test(entry.name)) {
        masks.push({ path: join(SSH_DIR, entry.name), dir: false });
      }
    }
  } catch {
    // No /etc/ssh here.
  }
  return masks;
}

/** The options that never change between calls: namespaces, no capabilities, the system folders, masks. */
function baseArgs(support: Extract<SandboxSupport, { ok: true }>, wholeFs: boolean): string[] {
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

/** The private /dev and /tmp: size-capped tmpfs mounts, /dev itself read-only. */
function privateMounts(tmpfsBytes: number): string[] {
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

async function probeRun(
  bwrap: string,
  support: Extract<SandboxSupport, { ok: true }>,
): Promise<{ ok: boolean; detail: string }> {
  try {
    const output = await new Deno.Command(bwrap, {
      args: [...baseArgs(support, false), ...privateMounts(1024 * 1024), "--", "true"],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      clearEnv: true,
      env: { PATH: PROBE_PATH },
    }).output();
    return {
      ok: output.success,
      detail: new TextDecoder().decode(output.stderr).trim().split("\n")[0] ?? "",
    };
  } catch (error) {
    const detail = error instanceof Deno.errors.NotCapable
      ? "toolgate is not permitted to run bwrap (--allow-run)"
      : (error as Error).message;
    return { ok: false, detail };
  }
}

function ownUid(): number | null {
  try {
    return Deno.uid();
  } catch {
    return null;
  }
}

/**
 * Finds out whether bubblewrap works here with every option toolgate gives it (it needs user namespaces, which
 * some systems refuse), and what else confinement can use: prlimit inside, cgroups outside.
 *
 * @example
 * ```ts
 * import { probeSandbox } from "./sandbox.ts";
 * const support = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin");
 * console.log(support.ok ? `confined by ${support.bwrap}` : `unconfined: ${support.reason}`);
 * ```
 */
export async function probeSandbox(
  path: string,
  bwrapName = "bwrap",
  env: Readonly<Record<string, string>> = {},
): Promise<SandboxSupport> {
  if (Deno.build.os !== "linux") {
    return { ok: false, reason: `bubblewrap confinement is Linux-only (this is ${Deno.build.os})` };
  }
  const bwrap = findProgram(bwrapName, path);
  if (bwrap === undefined) return { ok: false, reason: "bubblewrap (bwrap) is not installed" };
  const root = ownUid() === 0;
  const candidate = {
    ok: true as const,
    bwrap,
    userns: true,
    root,
    system: systemEntries(),
    masks: secretMasks(),
  };
  let run = await probeRun(bwrap, candidate);
  if (!run.ok) {
    // A setuid bwrap cannot make a user namespace: confine without one (capabilities are still dropped).
    const without = await probeRun(bwrap, { ...candidate, userns: false });
    if (!without.ok) return { ok: false, reason: run.detail || "bubblewrap does not work here" };
    candidate.userns = false;
    run = without;
  }
  const prlimit = findProgram("prlimit", "/usr/bin:/bin");
  return { ...candidate, prlimit, cgroups: detectCgroups(env) };
}

/** Bumped when what a probe finds out, or how, changes: older cached probes are then ignored. */
const PROBE_FORMAT = 1;
/** A cached probe is trusted this long; a kernel or policy change shows within the hour. */
const PROBE_TTL_MS = 60 * 60 * 1000;

function identity(path: string | undefined): string {
  if (path === undefined) return "-";
  try {
    const info = Deno.statSync(path);
    return `${path}:${info.size}:${info.mtime?.getTime()}:${info.ino}`;
  } catch {
    return `${path}:?`;
  }
}

function bootId(): string {
  try {
    return Deno.readTextFileSync("/proc/sys/kernel/random/boot_id").trim();
  } catch {
    return "?";
  }
}

/**
 * {@linkcode probeSandbox}, remembered in toolgate's state folder for an hour per host and binaries (the bwrap and
 * prlimit files, the boot, the user, the cgroups): a probe runs bwrap twice and a shell per cgroup controller,
 * which every start would otherwise pay. A cached result that has gone stale fails closed: a call bwrap can no
 * longer run fails, and nothing runs unconfined that the probe did not allow.
 *
 * @example
 * ```ts
 * import { probeSandboxCached } from "./sandbox.ts";
 * const support = await probeSandboxCached("/usr/bin:/bin", "bwrap", {}, await Deno.makeTempDir());
 * ```
 */
export async function probeSandboxCached(
  path: string,
  bwrapName: string,
  env: Readonly<Record<string, string>>,
  stateDir: string | undefined,
): Promise<SandboxSupport> {
  if (stateDir === undefined || Deno.build.os !== "linux") return await probeSandbox(path, bwrapName, env);
  const bwrap = findProgram(bwrapName, path);
  // Trimmed: the same cgroups read by a shell's `$(cat ...)` or by a program carry a final newline or not.
  const cgroups = (env[CGROUP_ENV] || ownCgroups() || "").trim();
  const key = [
    PROBE_FORMAT,
    identity(bwrap),
    identity(findProgram("prlimit", "/usr/bin:/bin")),
    bootId(),
    ownUid(),
    cgroups,
  ].join("|");
  const cached = readCache<{ at: number; support: SandboxSupport }>(stateDir, "sandbox-probe", key);
  if (cached && Date.now() - cached.at < PROBE_TTL_MS) return cached.support;
  const support = await probeSandbox(path, bwrapName, { ...env, [CGROUP_ENV]: cgroups });
  writeCache(stateDir, "sandbox-probe", key, { at: Date.now(), support });
  return support;
}

/**
 * What the limits of a profile cannot enforce here, to say once at start (empty when all of them hold). A memory
 * limit without a memory cgroup falls back to `RLIMIT_DATA` per process, as documented, without a word.
 *
 * @example
 * ```ts
 * import { limitWarnings, probeSandbox } from "./sandbox.ts";
 * const support = await probeSandbox("/usr/bin:/bin");
 * if (support.ok) for (const warning of limitWarnings(support)) console.error(`toolgate: warning: ${warning}`);
 * ```
 */
export function limitWarnings(support: Extract<SandboxSupport, { ok: true }>): string[] {
  const warnings: string[] = [];
  if (support.root && support.cgroups?.pids === undefined) {
    warnings.push(
      "the process limit of confined tools cannot be enforced: toolgate runs as root (the kernel exempts root " +
        "from RLIMIT_NPROC) and may not make a pids cgroup here",
    );
  }
  if (support.prlimit === undefined && support.cgroups === undefined) {
    warnings.push("prlimit is not installed: confined tools run without CPU-time, file-size and rlimit caps");
  } else if (support.prlimit === undefined && support.cgroups?.pids === undefined && !support.root) {
    warnings.push("prlimit is not installed: the process limit of confined tools cannot be enforced");
  }
  return warnings;
}

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
 * @example
 * ```ts
 * import { bwrapArgs } from "./sandbox.ts";
 * // new Deno.Command(support.bwrap, { args: bwrapArgs(support, request), clearEnv: true, env })
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

/** The warning that travels with an unconfined call, in the envelope and the audit line. */
export function unconfinedWarning(mode: SandboxMode, reason?: string): string {
  return mode === "off"
    ? "not confined: the sandbox is off (--sandbox off)"
    : `not confined: ${reason ?? "bubblewrap is not available"}`;
}
