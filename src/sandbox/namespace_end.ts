/**
 * How a confined call's tree ends where it has no cgroup: through its pid namespace. bwrap (`--unshare-pid`)
 * starts the namespace's first process (its init) as its own child; when that init dies the kernel kills every
 * process of the namespace, whatever session or process group it made for itself. bwrap's `--die-with-parent`
 * gives the init a SIGKILL when bwrap dies, but only from the moment the init asked for it, late in its set-up:
 * a bwrap ended before then left the init, and the tool it had started, running as children of the host's init.
 * So toolgate never leaves it to that: it stops bwrap (so that it starts nothing more), kills bwrap's children
 * (the init, and so the namespace), waits until the init is dead, then sends bwrap the signal.
 * A tool that exits on its own is the other end: bwrap exits as soon as its init reports the tool's status, and
 * the init, with whatever the tool left, is killed a moment later, as bwrap's death reaches it. The session
 * starter, where it is built, stays in front of bwrap as a subreaper until that is done (`-s`, session_start.c):
 * its exit is the namespace's end. Without it, the end is reported at bwrap's exit (docs/limits.md).
 * Not here: the call's cgroup (cgroups.ts), which ends it where there is one.
 *
 * @module
 */
import type { TreeEnd } from "../process/tree_end.ts";
import { runShellScript } from "./shell_script.ts";

/**
 * The script (`sh -c SCRIPT sh PID SIGNAL BEHIND`): with BEHIND = 1, PID is the session starter and bwrap its
 * child (none yet: the starter is signalled, still setting up); bwrap stopped, its children (read from `/proc`, or
 * found by their parent where the kernel has no `children` file) killed and waited for (a zombie: the namespace is
 * empty), bwrap sent SIGNAL and let go on.
 */
const SCRIPT = [
  "pid=$1 sig=$2 behind=$3",
  // A Ctrl-C on the terminal reaches this shell too: it must not leave a tree half ended (bwrap stopped).
  "trap '' INT HUP TERM",
  "children() {",
  "  kids=",
  '  if [ -r "/proc/$1/task/$1/children" ]; then',
  '    read -r kids < "/proc/$1/task/$1/children"',
  "  else",
  "    for stat in /proc/[0-9]*/stat; do",
  '      read -r child name state parent rest < "$stat" 2>/dev/null && [ "$parent" = "$1" ] && kids="$kids $child"',
  "    done",
  "  fi",
  "}",
  'if [ "$behind" = 1 ]; then',
  '  children "$pid"',
  '  [ -n "$kids" ] || { kill -"$sig" "$pid" 2>/dev/null; exit 0; }',
  "  set -- $kids; pid=$1",
  "fi",
  'kill -STOP "$pid" 2>/dev/null || exit 0',
  'children "$pid"',
  'if [ -n "$kids" ]; then',
  "  kill -KILL $kids 2>/dev/null",
  "  for kid in $kids; do",
  "    n=0",
  // The init is a zombie (bwrap, stopped, cannot reap it) once the kernel has ended every process of its namespace.
  '    while read -r child name state rest < "/proc/$kid/stat" 2>/dev/null && [ "$state" != Z ]; do',
  "      n=$((n + 1)); [ $n -gt 20000 ] && break",
  "    done",
  "  done",
  "fi",
  'kill -"$sig" "$pid" 2>/dev/null',
  'kill -CONT "$pid" 2>/dev/null',
  "exit 0",
].join("\n");

/**
 * How a bwrap-confined call without a cgroup ends: through its pid namespace, run by `shell`; `behindStarter`: the
 * process toolgate started is the session starter that stays in front of bwrap (`-s`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { namespaceTreeEnd } from "./namespace_end.ts";
 * const child = new Deno.Command("sleep", { args: ["30"] }).spawn();
 * await namespaceTreeEnd("/bin/sh").signal(child.pid, "SIGKILL");
 * assert.equal((await child.status).signal, "SIGKILL");
 * ```
 */
export function namespaceTreeEnd(shell: string, behindStarter = false): TreeEnd {
  return {
    // Where no shell can run, bwrap's --die-with-parent must do.
    signal: async (pid, signal) => {
      await runShellScript(shell, SCRIPT, [String(pid), signal.slice(3), behindStarter ? "1" : "0"]);
    },
    // Nothing is waited for. Behind the starter, its exit came after the namespace's end. Without it, bwrap exits
    // as soon as the tool has (its init reports the tool's status), and the init, with what the tool left, is
    // killed a moment later, as bwrap's death reaches it (docs/limits.md): only a cgroup could say when.
    settle: () => Promise.resolve(),
  };
}
