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
import { join } from "../base/paths.ts";
import { lstatOrUndefined } from "../base/lstat.ts";
import { CGROUP_ENV, type CgroupSupport, detectCgroups, ownCgroups } from "./cgroups.ts";
import { readCache, writeCache } from "../state/state_cache.ts";
import { findProgram } from "../base/find_program.ts";
import { baseArgs, privateMounts } from "./bwrap_args.ts";
import { machineArch, seccompFilter } from "./seccomp_filter.ts";

/**
 * How tools are confined: `auto` (when bubblewrap works), `require` (unavailable without it), `off`, or
 * `unfiltered` (as `auto`, without the seccomp filter: a named degraded mode for a kernel that cannot load it).
 */
export type SandboxMode = "auto" | "require" | "off" | "unfiltered";

/**
 * The sandbox modes, for option parsing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SANDBOX_MODES } from "./sandbox.ts";
 * assert.ok(SANDBOX_MODES.includes("off"));
 * ```
 */
export const SANDBOX_MODES: readonly SandboxMode[] = ["auto", "require", "off", "unfiltered"];

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
    /**
     * Whether bubblewrap loaded toolgate's seccomp filter here, tried once by the probe (absent: not tried, a
     * probe of an older format): where it cannot, a confined call is refused before it starts, unless the mode is
     * `unfiltered`.
     */
    readonly seccomp?: SeccompSupport;
  }
  | { readonly ok: false; readonly reason: string };

/**
 * The folders every program may need, read-only (those that exist here are shown).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SYSTEM_PATHS } from "./sandbox.ts";
 * assert.ok(SYSTEM_PATHS.includes("/usr"));
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

function systemEntries(): SystemEntry[] {
  const entries: SystemEntry[] = [];
  for (const path of SYSTEM_PATHS) {
    const info = lstatOrUndefined(path);
    if (!info) continue;
    if (info.isSymlink) entries.push({ path, link: Deno.readLinkSync(path) });
    else if (info.isDirectory) entries.push({ path });
  }
  return entries;
}

function secretMasks(): { path: string; dir: boolean }[] {
  const masks: { path: string; dir: boolean }[] = [];
  for (const path of SECRET_FILES) if (lstatOrUndefined(path)?.isFile) masks.push({ path, dir: false });
  for (const path of SECRET_DIRS) if (lstatOrUndefined(path)?.isDirectory) masks.push({ path, dir: true });
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

/** Whether the seccomp filter loads here: yes, or no and why (bubblewrap's own words, or no known architecture). */
export type SeccompSupport = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/**
 * Runs `true` under bubblewrap with the filter of a profile without network, the program given on bwrap's stdin
 * (`--seccomp 0`), so that nothing is written: a kernel without seccomp filters, or a bwrap that cannot load one,
 * says so here rather than at the first confined call.
 */
async function probeSeccomp(
  bwrap: string,
  support: Extract<SandboxSupport, { ok: true }>,
): Promise<SeccompSupport> {
  const arch = machineArch();
  if (arch === undefined) return { ok: false, reason: `no filter is known for ${Deno.build.arch}` };
  try {
    const child = new Deno.Command(bwrap, {
      args: [...baseArgs(support, false), ...privateMounts(1024 * 1024), "--seccomp", "0", "--", "true"],
      stdin: "piped",
      stdout: "null",
      stderr: "piped",
      clearEnv: true,
      env: { PATH: PROBE_PATH },
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(seccompFilter(arch, { network: false })).catch(() => {});
    await writer.close().catch(() => {});
    const output = await child.output();
    if (output.success) return { ok: true };
    const said = new TextDecoder().decode(output.stderr).trim().split("\n")[0];
    return { ok: false, reason: said || `bubblewrap exited with ${output.code} loading it` };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
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
 * some systems refuse), whether it loads toolgate's seccomp filter, and what else confinement can use: prlimit
 * inside, cgroups outside.
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
  // The filter is tried once here, so that the mode knows before the first confined call (and doctor can say).
  const seccomp = await probeSeccomp(bwrap, candidate);
  return { ...candidate, prlimit, cgroups: detectCgroups(env), seccomp };
}

/** Bumped when what a probe finds out, or how, changes: older cached probes are then ignored. */
const PROBE_FORMAT = 2;
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

/** The warning that travels with an unconfined call, in the envelope and the audit line. */
export function unconfinedWarning(mode: SandboxMode, reason?: string): string {
  return mode === "off"
    ? "not confined: the sandbox is off (--sandbox off)"
    : `not confined: ${reason ?? "bubblewrap is not available"}`;
}

/**
 * {@linkcode detectCgroups}, remembered in toolgate's state folder as the sandbox probe is (an hour per boot, user
 * and cgroups): where an unconfined call's cgroup goes, without a probe's two shells at every start of a run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { detectCgroupsCached } from "./sandbox.ts";
 * const cgroups = detectCgroupsCached({}, await Deno.makeTempDir());
 * assert.equal(cgroups?.shell, "/bin/sh"); // where toolgate may make cgroups
 * ```
 */
export function detectCgroupsCached(
  env: Readonly<Record<string, string>>,
  stateDir: string | undefined,
): CgroupSupport | undefined {
  if (stateDir === undefined || Deno.build.os !== "linux") return detectCgroups(env);
  const cgroups = (env[CGROUP_ENV] || ownCgroups() || "").trim();
  const key = [PROBE_FORMAT, bootId(), ownUid(), cgroups].join("|");
  const cached = readCache<{ at: number; cgroups: CgroupSupport | null }>(stateDir, "cgroup-probe", key);
  if (cached && Date.now() - cached.at < PROBE_TTL_MS) return cached.cgroups ?? undefined;
  const found = detectCgroups({ ...env, [CGROUP_ENV]: cgroups });
  writeCache(stateDir, "cgroup-probe", key, { at: Date.now(), cgroups: found ?? null });
  return found;
}
