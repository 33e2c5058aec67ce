/**
 * How a call's tree ends through its cgroups (cgroups.ts makes them): every process they hold is signalled
 * (`cgroup.kill` where the kernel has it), however it left its process group or session, and the end is reported
 * once they are empty. Also what a toolgate that is gone (killed with SIGKILL) left in its call cgroups: emptied
 * and removed by the next one. Each step is one small shell, as toolgate may not write `/sys` itself. Not here:
 * making and joining the cgroups (cgroups.ts), a confined call's pid namespace (namespace_end.ts).
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { after } from "../base/timer.ts";
import type { TreeSignal } from "../process/process_tree.ts";
import type { TreeEnd, TreeExit } from "../process/tree_end.ts";
import type { CgroupSupport } from "./cgroups.ts";
import { runShellScript } from "./shell_script.ts";
import type { CgroupWatch } from "./cgroup_watch.ts";

/**
 * Signals every process of a call's cgroup (`sh -c SCRIPT sh DIR SIGNAL WAIT FIRST`), and the call's first process
 * `FIRST` itself when given: it joins the cgroup only once its shell has set it up, so a signal sent before then
 * (a call ended at once, under load) would find the cgroup empty and leave it to join and start the tool. With
 * `WAIT` = 1, a SIGKILL
 * (`cgroup.kill` first where the kernel has it, cgroup v2 from Linux 5.14) is sent again to whatever the cgroup
 * still holds (a process forked meanwhile) until it is empty (`cgroup.events` says `populated 0`, or
 * `cgroup.procs` lists nobody), for a bounded number of rounds (exit 1 then: a process the kernel has not ended
 * yet, in an uninterruptible sleep, is left).
 */
const KILL_SCRIPT = [
  "dir=$1 sig=$2 wait=$3 first=$4",
  // A Ctrl-C on the terminal reaches this shell too: it must not stop halfway.
  "trap '' INT HUP TERM",
  // The first process, still setting up the cgroup it has not joined yet (or in it already: signalled twice).
  '[ -z "$first" ] || kill -"$sig" "$first" 2>/dev/null',
  '[ -d "$dir" ] || exit 0',
  '[ "$sig" = KILL ] && [ -e "$dir/cgroup.kill" ] && printf 1 > "$dir/cgroup.kill" 2>/dev/null',
  "n=0",
  "while :; do",
  '  if [ -e "$dir/cgroup.events" ]; then',
  "    empty=1",
  '    while read -r key value; do [ "$key" = populated ] && [ "$value" = 1 ] && empty=0; done < "$dir/cgroup.events"',
  '    [ "$wait" = 1 ] && [ $empty = 1 ] && exit 0',
  "  fi",
  "  pids=",
  '  while read -r pid; do pids="$pids $pid"; done < "$dir/cgroup.procs"',
  '  [ -z "$pids" ] && exit 0',
  '  kill -"$sig" $pids 2>/dev/null',
  '  [ "$wait" = 1 ] || exit 0',
  "  n=$((n + 1))",
  // A few thousand rounds of builtins: some seconds, bounded, without a `sleep` process per round.
  "  [ $n -gt 20000 ] && exit 1",
  "done",
].join("\n");

/** Pauses (ms) before the resident helper is asked again whether a settling call's cgroup is empty. */
const ASK_AGAIN_MS = [1, 5];

/**
 * How a call's tree ends through the cgroups of `slot`: a signal reaches every process they hold, and the end
 * waits until they hold none. Each step is one small shell (toolgate may not write `/sys` itself); with `watch`,
 * a settle asks it first whether the cgroup is empty already (again after 1 ms and 5 ms when not), and starts
 * no shell then. `stays`: the first process is the session starter that stays until everything started under it
 * is gone (`-s`, session_start.c): its own exit, unless a signal killed it, says the cgroup is empty (it joined
 * before it started anything), and nothing is asked.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cgroupTreeEnd } from "./cgroup_end.ts";
 * // A slot that does not exist holds nobody: its end is at once.
 * const tree = cgroupTreeEnd({ version: 2, pids: "/nonexistent/toolgate", shell: "/bin/sh" }, "call-1-1");
 * await tree.settle(1);
 * assert.equal(typeof tree.signal, "function");
 * ```
 */
export function cgroupTreeEnd(
  support: CgroupSupport,
  slot: string,
  watch?: CgroupWatch,
  stays = false,
): TreeEnd {
  // Every process of the call joined each hierarchy used: one of them names them all.
  const dir = join((support.pids ?? support.memory)!, slot);
  // Where no shell can run, the sandbox's own end (its pid namespace) must do.
  const run = async (signal: TreeSignal, wait: boolean, first = ""): Promise<void> => {
    await runShellScript(support.shell, KILL_SCRIPT, [dir, signal.slice(3), wait ? "1" : "0", first]);
  };
  return {
    // While the first process runs (the caller's contract), its pid is its own: it is signalled too.
    signal: (pid, signal) => run(signal, signal === "SIGKILL", String(pid)),
    // Its first process has exited (and been reaped): its pid may be another's now, so only the cgroup is ended.
    // Where it holds nobody (the usual end: the tool left nothing behind), `watch` says so without a shell of its
    // own: nothing is to be signalled or waited for (the script's first round finds the same and ends there).
    // A confined call's cgroup is now and then (one call in twenty, under load) not empty yet when its bwrap's exit
    // is seen, and is a moment later: asked again twice, after 1 ms and 5 ms, before a shell is started.
    settle: async (_pid: number, exit?: TreeExit) => {
      if (stays && exit !== undefined && exit.signal === null) return;
      if (watch !== undefined) {
        for (const pause of [0, ...ASK_AGAIN_MS]) {
          if (pause > 0) await new Promise<void>((resolve) => after(pause, resolve));
          if (await watch.empty(dir)) return;
        }
      }
      await run("SIGKILL", true);
    },
  };
}

/**
 * Empties and removes the call cgroups (`sh -c SCRIPT sh BASE...`) whose toolgate is gone (`call-PID-...` where no
 * process PID runs): what a toolgate killed with SIGKILL left (an unconfined call's tree, which nothing else
 * ends), each process of them killed.
 */
const REAP_SCRIPT = [
  'for base in "$@"; do',
  '  [ "$base" = - ] && continue',
  '  for dir in "$base"/call-*; do',
  '    [ -d "$dir" ] || continue',
  "    owner=${dir##*/call-}; owner=${owner%%-*}",
  '    [ -d "/proc/$owner" ] && continue',
  '    [ -e "$dir/cgroup.kill" ] && printf 1 > "$dir/cgroup.kill" 2>/dev/null',
  "    n=0",
  "    while :; do",
  "      pids=",
  '      while read -r pid; do pids="$pids $pid"; done < "$dir/cgroup.procs"',
  '      [ -z "$pids" ] && break',
  "      kill -KILL $pids 2>/dev/null",
  "      n=$((n + 1)); [ $n -gt 20000 ] && break",
  "    done",
  '    rmdir "$dir" 2>/dev/null',
  "  done",
  "done",
].join("\n");

/**
 * Ends what toolgates that are gone left in their call cgroups (one killed with SIGKILL could end nothing): every
 * process of them is killed and the cgroups removed. A launcher runs it once, at its first call with a cgroup.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { reapLeftCgroups } from "./cgroup_end.ts";
 * // A place with no call cgroups: nothing to do.
 * assert.equal(await reapLeftCgroups({ version: 2, pids: "/nonexistent/toolgate", shell: "/bin/sh" }), undefined);
 * ```
 */
export async function reapLeftCgroups(support: CgroupSupport): Promise<void> {
  // Where no shell can run, the next launcher tries again.
  await runShellScript(support.shell, REAP_SCRIPT, [support.pids ?? "-", support.memory ?? "-"]);
}
