/**
 * A cgroup per confined call, where toolgate may make one: a process limit that holds for root too (the kernel
 * never applies `RLIMIT_NPROC` to root) and a memory limit over the call's whole tree. cgroup v2 (unified) and v1
 * (a `pids` and a `memory` hierarchy) are both handled; where neither can be written, the caller falls back to
 * rlimits and says so.
 *
 * Deno lets no process without `--allow-all` touch `/proc/self` or `/sys`, and toolgate runs under its least
 * permission set: every cgroup file is read and written by a small `sh` script in a child process instead. The
 * first process of a call makes the call's cgroups, sets their limits, joins them and then becomes bwrap, so that
 * every descendant is counted from its first instant. Not here: which calls get cgroups (tool_launch.ts), how a
 * call's tree ends through its cgroup (cgroup_end.ts).
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { GATE_LINE } from "./gate.ts";

/** Where per-call cgroups can be made: one folder per controller (the same one under v2). */
export interface CgroupSupport {
  readonly version: 1 | 2;
  /** The folder under which call cgroups for the process limit are made. */
  readonly pids?: string;
  /** The folder under which call cgroups for the memory limit are made. */
  readonly memory?: string;
  /** The shell that runs the cgroup scripts, as an absolute path. */
  readonly shell: string;
}

const MOUNT = "/sys/fs/cgroup";
/** The folder of toolgate's call cgroups inside the cgroup this process belongs to. */
const OWN = "toolgate";

/**
 * The variable in which the launcher hands its `/proc/self/cgroup` to the main entry, which is in the same
 * cgroups and may not read `/proc/self` itself.
 */
export const CGROUP_ENV = "TOOLGATE_CGROUP";

const decoder = new TextDecoder();

/**
 * This process's `/proc/self/cgroup`: read directly (`--allow-all`), else through `cat`, a child process that is
 * in the same cgroups; `undefined` when neither works.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ownCgroups } from "./cgroups.ts";
 * const cgroups = ownCgroups(); // v2: "0::/user.slice/user-1000.slice/session-2.scope\n"
 * assert.ok(cgroups === undefined || /^\d+:[^:\n]*:\/.*\n/.test(cgroups));
 * ```
 */
export function ownCgroups(): string | undefined {
  try {
    return Deno.readTextFileSync("/proc/self/cgroup");
  } catch {
    // Deno wants --allow-all for /proc/self: ask a child.
  }
  for (const cat of ["/bin/cat", "/usr/bin/cat"]) {
    try {
      const output = new Deno.Command(cat, { args: ["/proc/self/cgroup"], stdin: "null", stderr: "null" })
        .outputSync();
      if (output.success) return decoder.decode(output.stdout);
    } catch {
      // Not there, or not ours to run.
    }
  }
  return undefined;
}

/** Where toolgate's call cgroups would go, by controller: worked out from `/proc/self/cgroup` alone. */
export interface CgroupPlaces {
  readonly version: 1 | 2;
  readonly pids?: string;
  readonly memory?: string;
}

/**
 * Where toolgate's call cgroups would go for a process whose `/proc/self/cgroup` is `text`: inside its own
 * cgroup of each hierarchy. Nothing is checked or made; {@linkcode detectCgroups} tries them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cgroupPlaces } from "./cgroups.ts";
 * assert.equal(cgroupPlaces("8:pids:/\n4:memory:/box\n0::/")?.memory, "/sys/fs/cgroup/memory/box/toolgate");
 * assert.equal(cgroupPlaces("0::/user.slice")?.pids, "/sys/fs/cgroup/user.slice/toolgate");
 * ```
 */
export function cgroupPlaces(text: string): CgroupPlaces | undefined {
  const paths = new Map<string, string>();
  for (const line of text.trim().split("\n")) {
    const [, controllers, path] = line.split(":");
    if (path === undefined) continue;
    for (const controller of controllers.split(",")) paths.set(controller, path);
  }
  const pids = paths.get("pids");
  const memory = paths.get("memory");
  if (pids !== undefined || memory !== undefined) {
    return {
      version: 1,
      pids: pids === undefined ? undefined : join(MOUNT, "pids", pids, OWN),
      memory: memory === undefined ? undefined : join(MOUNT, "memory", memory, OWN),
    };
  }
  const unified = paths.get("");
  if (unified === undefined) return undefined;
  const dir = join(MOUNT, unified, OWN);
  return { version: 2, pids: dir, memory: dir };
}

/**
 * Tries a folder for call cgroups (`$1`, controller file `$2`): makes it, enables the controllers for its
 * children under v2 (`$3` = 2), sweeps call cgroups left behind for more than a minute by runs that were killed
 * (only those whose owner, the pid in `call-PID-...`, is gone: a running toolgate's idle slot, made a minute ago,
 * is reused by its next call, which would find it removed between its check and its join), and proves that a
 * child gets the controller's file.
 */
const PROBE_SCRIPT = [
  'mkdir -p "$1" 2>/dev/null || exit 1',
  '[ "$3" = 2 ] && printf "+pids +memory" > "$1/cgroup.subtree_control" 2>/dev/null',
  'find "$1" -mindepth 1 -maxdepth 1 -type d -name "call-*" -mmin +1 2>/dev/null | while read -r dir; do',
  "  owner=${dir##*/call-}; owner=${owner%%-*}",
  '  [ -d "/proc/$owner" ] || rmdir "$dir" 2>/dev/null',
  "done",
  'probe="$1/probe-$$"',
  'mkdir "$probe" 2>/dev/null || exit 1',
  '[ -e "$probe/$2" ]; ok=$?',
  'rmdir "$probe"',
  "exit $ok",
].join("\n");

function findShell(): string | undefined {
  for (const shell of ["/bin/sh", "/usr/bin/sh"]) {
    try {
      if (Deno.statSync(shell).isFile) return shell;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

function probe(shell: string, dir: string, file: string, version: 1 | 2): boolean {
  try {
    return new Deno.Command(shell, {
      args: ["-c", PROBE_SCRIPT, "sh", dir, file, String(version)],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin" },
    }).outputSync().success;
  } catch {
    return false;
  }
}

/**
 * Finds where this process may make per-call cgroups, or `undefined` when it may not (no cgroup filesystem, or
 * not writable: the usual case for a user without a delegated cgroup).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { detectCgroups } from "./cgroups.ts";
 * const support = detectCgroups(Deno.env.toObject());
 * // pids: "/sys/fs/cgroup/pids/toolgate" (v1) or "/sys/fs/cgroup/user.slice/.../toolgate" (v2)
 * assert.ok(support?.pids === undefined || support.pids.startsWith("/sys/fs/cgroup/"));
 * ```
 */
export function detectCgroups(env: Readonly<Record<string, string>> = {}): CgroupSupport | undefined {
  if (Deno.build.os !== "linux") return undefined;
  const text = env[CGROUP_ENV] || ownCgroups();
  const places = text === undefined ? undefined : cgroupPlaces(text);
  const shell = findShell();
  if (places === undefined || shell === undefined) return undefined;
  const memoryFile = places.version === 1 ? "memory.limit_in_bytes" : "memory.max";
  const pids = places.pids !== undefined && probe(shell, places.pids, "pids.max", places.version)
    ? places.pids
    : undefined;
  const memory = places.memory !== undefined && probe(shell, places.memory, memoryFile, places.version)
    ? places.memory
    : undefined;
  return pids !== undefined || memory !== undefined
    ? { version: places.version, pids, memory, shell }
    : undefined;
}

/** The limits one call's cgroups enforce, and the rlimits the wrapper sets before it becomes the sandbox. */
export interface CgroupLimits {
  readonly processes: number;
  readonly memoryBytes: number;
  /** `RLIMIT_CPU`, in seconds. */
  readonly cpuSeconds: number;
  /** `RLIMIT_FSIZE`, in bytes (set in the shell's 512-byte blocks, rounded down). */
  readonly fileSizeBytes: number;
}

/**
 * The script a call's first process runs (`sh -c SCRIPT sh PIDS_BASE MEMORY_BASE MEMORY_FILE SLOT PROCESSES BYTES
 * SWAP_FILE CPU_SECONDS FILE_BLOCKS DATA_KIB GATE PWD PROGRAM ARGS...`, `-` for a base, a limit or a gate that is
 * not used; a tracked call's limits are `max` and `-`; PWD `keep`, or `unset`: the program does not get the one
 * the shell exports): it makes the slot's cgroups the first time, sets their limits (or lifts those a limited call
 * left in the slot), joins them, sets the rlimits (inherited by everything the program starts), and becomes the
 * program, with shell builtins only once the slot exists (a call pays for no extra process, and needs no prlimit
 * inside). A limit it cannot set stops the call rather than letting it run without. With a gate (`1`), it then
 * waits at it (src/sandbox/gate.ts).
 */
const JOIN_SCRIPT = [
  "pids=$1 mem=$2 memfile=$3 slot=$4 nproc=$5 bytes=$6 swapfile=$7 cpu=$8 blocks=$9 data=${10} gate=${11}",
  "pwd=${12}",
  "shift 12",
  'fail() { echo "toolgate: cannot set up the cgroup $1" >&2; exit 125; }',
  // A slot's first call makes both folders with one mkdir (a base not used stands in for the other).
  'p=$pids m=$mem; [ "$p" = - ] && p=$m; [ "$m" = - ] && m=$p',
  // Made, limited and joined as one step, done again once whole where it fails: an older toolgate's sweep (or a
  // run's that was killed) may remove an idle slot between the check and the join, and a slot made anew has
  // none of the limits set before.
  "setup() {",
  '  [ -d "$p/$slot" ] && [ -d "$m/$slot" ] || /bin/mkdir -p "$p/$slot" "$m/$slot" || { at=$p/$slot; return 1; }',
  '  if [ "$pids" != - ]; then',
  '    printf %s "$nproc" > "$pids/$slot/pids.max" || { at=$pids/$slot; return 1; }',
  "  fi",
  '  if [ "$mem" != - ]; then',
  '    printf %s "$bytes" > "$mem/$slot/$memfile" || { at=$mem/$slot; return 1; }',
  '    [ "$swapfile" = - ] || { [ "$bytes" = max ] && printf max || printf 0; } > "$mem/$slot/$swapfile" 2>/dev/null',
  "  fi",
  '  for base in "$pids" "$mem"; do',
  '    [ "$base" = - ] || printf %s "$$" > "$base/$slot/cgroup.procs" || { at=$base/$slot; return 1; }',
  "  done",
  "}",
  'setup 2>/dev/null || setup || fail "$at"',
  '{ [ "$cpu" = - ] || ulimit -t "$cpu"; } && { [ "$blocks" = - ] || ulimit -f "$blocks"; } || fail "rlimits"',
  '[ "$data" = - ] || ulimit -d "$data" || fail "rlimits"',
  `[ "$gate" = - ] || ${GATE_LINE}`,
  // The shell exports a PWD of its own: the program gets the environment it was given, nothing more.
  '[ "$pwd" = keep ] || unset PWD',
  'exec "$@"',
].join("\n");

/**
 * Hands out cgroup slots to calls: a slot (`call-PID-N`) is one call's cgroups at a time, reused by the next call
 * once it is free, so that only a slot's first call makes folders. Slots left when toolgate ends are removed by a
 * later probe once they are a minute old and empty.
 *
 * @example
 * ```ts
 * import { CgroupSlots } from "./cgroups.ts";
 * import assert from "node:assert/strict";
 * const slots = new CgroupSlots();
 * const slot = slots.take();
 * // Another launcher of the same process never gets a slot in use.
 * const other = new CgroupSlots().take();
 * assert.notEqual(other, slot);
 * slots.give(slot);
 * ```
 */
export class CgroupSlots {
  /**
   * The slot numbers of this process, shared by every `CgroupSlots` in it: a slot's name holds only the pid, so
   * two launchers of one process (an executor and the gateway's installs, a library caller's executors) must
   * never hold the same number at once, or ending one call's tree through its cgroup would end the other's.
   */
  static readonly #process: { free: number[]; next: number } = { free: [], next: 0 };

  /**
   * This isolate's mark in its slots' names. Workers of one process share its pid (so do the modules `deno test
   * --parallel` runs at once) but not these numbers: without it two of them took `call-PID-1` together.
   */
  static readonly #isolate: string = crypto.randomUUID().slice(0, 8);

  /** A free slot's name: `call-PID-ISOLATE-N`, the owner's pid first (the reaper reads it there). */
  take(): string {
    const numbers = CgroupSlots.#process;
    return `call-${Deno.pid}-${CgroupSlots.#isolate}-${numbers.free.pop() ?? ++numbers.next}`;
  }

  /** Frees a slot once its call's processes are all gone. */
  give(slot: string): void {
    CgroupSlots.#process.free.push(Number(slot.slice(slot.lastIndexOf("-") + 1)));
  }
}

/**
 * The argv prefix that starts a call inside the cgroups of `slot` with `limits` (the program and its arguments
 * follow it); `gated`: it waits at the call's gate before it becomes the program; `keepPwd` false: the program
 * does not get the `PWD` the shell exports (an unconfined call's environment stays exactly its own). Without
 * `limits` (an unconfined call, run as the user asked) the cgroups only hold the call's tree, so that it can be
 * ended whole: no limit is set, and any a limited call left in the slot is lifted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cgroupWrapper, detectCgroups } from "./cgroups.ts";
 * const support = detectCgroups();
 * if (support) {
 *   const limits = { processes: 64, memoryBytes: 512 << 20, cpuSeconds: 30, fileSizeBytes: 64 << 20 };
 *   const prefix = cgroupWrapper(support, limits, "call-1-1");
 *   assert.ok(prefix.length > 0); // the program follows: new Deno.Command(prefix[0], { args: [...prefix.slice(1), program] })
 * }
 * ```
 */
export function cgroupWrapper(
  support: CgroupSupport,
  limits: CgroupLimits | undefined,
  slot: string,
  gated = false,
  keepPwd = true,
): string[] {
  const v2 = support.version === 2;
  // Without limits (an unconfined call) the slot's cgroups only hold the tree: no limit, any one left lifted.
  const values = limits === undefined
    ? { processes: "max", memory: v2 ? "max" : "-1", cpu: "-", fileBlocks: "-", data: "-" }
    : {
      processes: String(limits.processes),
      memory: String(limits.memoryBytes),
      cpu: String(limits.cpuSeconds),
      fileBlocks: String(Math.max(1, Math.floor(limits.fileSizeBytes / 512))),
      // Without a memory cgroup, each process's data segment is capped instead (as prlimit --data did).
      data: support.memory === undefined ? String(Math.ceil(limits.memoryBytes / 1024)) : "-",
    };
  return [
    support.shell,
    "-c",
    JOIN_SCRIPT,
    "sh",
    support.pids ?? "-",
    support.memory ?? "-",
    v2 ? "memory.max" : "memory.limit_in_bytes",
    slot,
    values.processes,
    values.memory,
    // Without it, a v2 memory limit only pushes the tree into swap.
    v2 ? "memory.swap.max" : "-",
    values.cpu,
    values.fileBlocks,
    values.data,
    gated ? "1" : "-",
    keepPwd ? "keep" : "unset",
  ];
}
