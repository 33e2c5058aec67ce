/**
 * The session starter (`session_start.c`): one small native program that starts an unconfined call in a session of
 * its own and inside its cgroup slot, where setsid(1) and the cgroup's shell took an exec each. Where it lives (in
 * toolgate's state folder, named for its source's digest, so that a changed source is never served by an old
 * build), whether this process may start it, and the steps a call hands it. It is built by `deno task install`
 * (`src/build/native.ts`) where a C compiler is found; without it, unconfined calls start as before.
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { stateRoot } from "../state/state.ts";
import type { CgroupLimits, CgroupSupport } from "./cgroups.ts";

/**
 * The SHA-256 digest of `session_start.c`, as built. A test holds it to the file: a changed source needs this
 * changed too, and with it the name of the program, so that a build of the old source is no longer found.
 */
export const SESSION_START_SOURCE_DIGEST = "37ccad363f3753c3091354ca115c2762d8e50895865a832badb39d0c59c57bc2";

/**
 * Where the session starter built for `env`'s user lives: `STATE/native/session-start-DIGEST16`, in toolgate's
 * state folder. That folder is hidden from every confined tool and made before any tool runs, so no tool can
 * plant a program there for the next unconfined call to start (the data folder could be made by a tool whose
 * workspace is the home folder before toolgate ever made it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionStartPath } from "./session_start.ts";
 * assert.match(sessionStartPath({ HOME: "/home/me" }), /^\/home\/me\/\.local\/state\/toolgate\/native\/session-start-[0-9a-f]{16}$/);
 * ```
 */
export function sessionStartPath(env: Readonly<Record<string, string>>): string {
  return join(stateRoot(env), "native", `session-start-${SESSION_START_SOURCE_DIGEST.slice(0, 16)}`);
}

/**
 * The session starter built for `env`'s user, or `undefined`: not built (or not executable), no HOME, or not a
 * Linux machine. What the launcher grants (`src/launcher/launch_plan.ts`) and `install` finds built already.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { builtSessionStart } from "./session_start.ts";
 * assert.equal(builtSessionStart({ HOME: "/nonexistent" }), undefined);
 * ```
 */
export function builtSessionStart(env: Readonly<Record<string, string>>): string | undefined {
  if (Deno.build.os !== "linux") return undefined;
  try {
    const path = sessionStartPath(env);
    const info = Deno.statSync(path);
    return info.isFile && (info.mode === null || (info.mode & 0o111) !== 0) ? path : undefined;
  } catch {
    // No HOME, not built, or not ours to look at.
    return undefined;
  }
}

/**
 * The session starter this process may start for `env`'s user, or `undefined`: not built, or not granted (the
 * launcher grants it by its path where it is there, as it grants setsid(1)).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { findSessionStart } from "./session_start.ts";
 * assert.equal(findSessionStart({ HOME: "/nonexistent" }), undefined);
 * ```
 */
export function findSessionStart(env: Readonly<Record<string, string>>): string | undefined {
  const path = builtSessionStart(env);
  if (path === undefined) return undefined;
  return Deno.permissions.querySync({ name: "run", command: path }).state === "granted" ? path : undefined;
}

/**
 * The command line in front of an unconfined tool's own: `starter STEPS... --`. With `cgroups`, its steps do what
 * the cgroup's shell does for a call without limits (cgroups.ts): the slot's folders made where missing, any limit
 * an earlier call of the slot set lifted, the slots joined. It stays as the tool's parent, a subreaper, and once
 * the tool has exited kills whatever it left (`-s -x`: a process that left its session too, with a cgroup or
 * without one), so its own exit is the tree's end; `gated`, then the wait at the call's gate (src/sandbox/gate.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionStartLine } from "./session_start.ts";
 * const support = { version: 2 as const, pids: "/cg/tg", memory: "/cg/tg", shell: "/bin/sh" };
 * assert.deepEqual(sessionStartLine("/s/session-start", { support, slot: "call-1-1" }), [
 *   "/s/session-start",
 *   "-d", "/cg/tg/call-1-1",
 *   "-w", "/cg/tg/call-1-1/pids.max", "max",
 *   "-w", "/cg/tg/call-1-1/memory.max", "max",
 *   "-o", "/cg/tg/call-1-1/memory.swap.max", "max",
 *   "-j", "/cg/tg/call-1-1/cgroup.procs",
 *   "-s", "-x",
 *   "--",
 * ]);
 * assert.deepEqual(sessionStartLine("/s/session-start", undefined, true), ["/s/session-start", "-s", "-x", "-g", "--"]);
 * ```
 */
export function sessionStartLine(
  starter: string,
  cgroups: { readonly support: CgroupSupport; readonly slot: string } | undefined,
  gated = false,
): string[] {
  const steps = cgroups === undefined ? [] : cgroupSteps(cgroups.support, undefined, cgroups.slot);
  return [starter, ...steps, "-s", "-x", ...(gated ? ["-g"] : []), "--"];
}

/** A confined call's cgroups, as the starter sets them up: which, the profile's limits, the call's slot. */
export interface StarterCgroups {
  readonly support: CgroupSupport;
  /** The profile's limits; `undefined`: none set, any an earlier call of the slot set lifted. */
  readonly limits?: CgroupLimits;
  readonly slot: string;
}

/** A file the starter opens to read on a descriptor that bwrap gets: the seccomp program, the starter itself. */
export interface StarterFile {
  readonly fd: number;
  readonly file: string;
}

/**
 * The descriptor on which a confined call's bwrap gets the session starter, to run it inside the sandbox as the
 * call's gate ({@linkcode gatedInside}).
 */
export const STARTER_FD = 4;

/**
 * The command line in front of a confined call's bwrap: `starter STEPS... --`, whose steps do what the cgroup's
 * shell and the seccomp shell did (cgroups.ts, seccomp_file.ts), with no shell: with `cgroups`, the slot's
 * folders made where missing, its limits set (or lifted), the slots joined and the rlimits set (without, bwrap's
 * own prlimit sets them inside); `files` opened on their descriptors (the seccomp program, the starter for a
 * gate inside); PWD exported as the shell did; toolgate's session kept (bwrap makes the tool's). It stays as
 * bwrap's parent, a subreaper, until the sandbox's pid namespace is gone (`-s`): bwrap exits as soon as its tool
 * has, its namespace is ended a moment later, and the starter's exit comes after that (namespace_end.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { confinedStartLine } from "./session_start.ts";
 * const support = { version: 1 as const, pids: "/cg/pids/tg", shell: "/bin/sh" };
 * const limits = { processes: 64, memoryBytes: 1 << 30, cpuSeconds: 30, fileSizeBytes: 1000 };
 * const files = [{ fd: 3, file: "/f" }, { fd: 4, file: "/s/session-start" }];
 * assert.deepEqual(confinedStartLine("/s/session-start", { support, limits, slot: "call-1-1" }, files), [
 *   "/s/session-start",
 *   "-d", "/cg/pids/tg/call-1-1",
 *   // The profile's 64, and the starter that stays.
 *   "-w", "/cg/pids/tg/call-1-1/pids.max", "65",
 *   "-j", "/cg/pids/tg/call-1-1/cgroup.procs",
 *   "-k", "-p", "-s",
 *   // Seconds; whole 512-byte blocks (the shell's unit); no memory cgroup: the data segment, in whole KiB.
 *   "-r", "cpu", "30", "-r", "fsize", "512", "-r", "data", "1073741824",
 *   "-f", "3", "/f",
 *   "-f", "4", "/s/session-start",
 *   "--",
 * ]);
 * ```
 */
export function confinedStartLine(
  starter: string,
  cgroups: StarterCgroups | undefined,
  files: readonly StarterFile[],
): string[] {
  const line = [starter];
  const limits = cgroups?.limits;
  // The starter itself, which stays, is the one process of the cgroup that is not the call's.
  if (cgroups !== undefined) line.push(...cgroupSteps(cgroups.support, limits, cgroups.slot, 1));
  line.push("-k", "-p", "-s");
  if (cgroups !== undefined && limits !== undefined) {
    line.push("-r", "cpu", String(limits.cpuSeconds));
    line.push("-r", "fsize", String(Math.max(1, Math.floor(limits.fileSizeBytes / 512)) * 512));
    // Without a memory cgroup, each process's data segment is capped instead.
    if (cgroups.support.memory === undefined) {
      line.push("-r", "data", String(Math.ceil(limits.memoryBytes / 1024) * 1024));
    }
  }
  for (const { fd, file } of files) line.push("-f", String(fd), file);
  line.push("--");
  return line;
}

/**
 * A confined call's command inside its sandbox with its gate there: the session starter, from the descriptor
 * bwrap got it on ({@linkcode STARTER_FD}; it closes every descriptor but stdin, stdout and stderr), waits at the
 * gate, then becomes the program. Everything bwrap sets up (namespaces, mounts, the seccomp filter) is done
 * before the go: a start made ahead of its call, or while a pool caller's go travels, holds a sandbox ready, and
 * nothing of the tool ran.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gatedInside } from "./session_start.ts";
 * assert.deepEqual(gatedInside("/srv/p/tools/bin/t", ["a"]), {
 *   program: "/proc/self/fd/4",
 *   args: ["-k", "-g", "--", "/srv/p/tools/bin/t", "a"],
 * });
 * ```
 */
export function gatedInside(program: string, args: readonly string[]): { program: string; args: string[] } {
  return { program: `/proc/self/fd/${STARTER_FD}`, args: ["-k", "-g", "--", program, ...args] };
}

/**
 * The cgroup steps of a call in `slot`: its folders, its limits (lifted without `limits`), its joins. `own`: the
 * processes of toolgate's own the cgroup holds besides the call's (the starter that stays), not counted against
 * its process limit.
 */
function cgroupSteps(
  support: CgroupSupport,
  limits: CgroupLimits | undefined,
  slot: string,
  own = 0,
): string[] {
  const line: string[] = [];
  const pids = support.pids === undefined ? undefined : join(support.pids, slot);
  const memory = support.memory === undefined ? undefined : join(support.memory, slot);
  const dirs = [...new Set([pids, memory].filter((dir): dir is string => dir !== undefined))];
  for (const dir of dirs) line.push("-d", dir);
  if (pids !== undefined) {
    line.push("-w", join(pids, "pids.max"), limits ? String(limits.processes + own) : "max");
  }
  if (memory !== undefined) {
    const v2 = support.version === 2;
    const bytes = limits ? String(limits.memoryBytes) : v2 ? "max" : "-1";
    if (v2) {
      // Without it, a v2 memory limit only pushes the tree into swap.
      line.push(
        "-w",
        join(memory, "memory.max"),
        bytes,
        "-o",
        join(memory, "memory.swap.max"),
        limits ? "0" : "max",
      );
    } else line.push("-w", join(memory, "memory.limit_in_bytes"), bytes);
  }
  for (const dir of dirs) line.push("-j", join(dir, "cgroup.procs"));
  return line;
}
