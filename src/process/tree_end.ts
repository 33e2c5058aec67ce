/**
 * The seam through which a launch tells the process layer how to end the tree it started: a sandbox knows which
 * processes are its call's (a cgroup holds every one of them, a pid namespace dies with its first process), the
 * runner and the gateway do not. The launch hands a {@linkcode TreeEnd}; whoever runs the process signals the tree
 * and, once its first process has exited, waits until nothing of the tree is left before it reports the end.
 * Not here: which way a call is confined and so how its tree ends (src/sandbox/tool_launch.ts), a process group's
 * signal (process_tree.ts).
 *
 * @module
 */
import type { TreeSignal } from "./process_tree.ts";

/** How a tree's first process ended: by a signal, or (`null`) on its own with an exit code. */
export interface TreeExit {
  readonly signal: Deno.Signal | null;
}

/**
 * How to end one started tree, whose first process (the one toolgate spawned) is `pid`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { TreeEnd } from "./tree_end.ts";
 * const sent: string[] = [];
 * const tree: TreeEnd = {
 *   signal: (pid, signal) => Promise.resolve(void sent.push(`${signal} ${pid}`)),
 *   settle: (pid) => Promise.resolve(void sent.push(`settled ${pid}`)),
 * };
 * await tree.signal(42, "SIGTERM");
 * await tree.settle(42);
 * assert.deepEqual(sent, ["SIGTERM 42", "settled 42"]);
 * ```
 */
export interface TreeEnd {
  /**
   * Sends `signal` to every process of the tree while its first process runs; never throws. A SIGKILL resolves
   * once every process it reached is gone.
   */
  signal(pid: number, signal: TreeSignal): Promise<void>;
  /**
   * The first process has exited (`exit`, how; absent where it is not known): ends whatever of its tree is left
   * (a process that left its process group or session) and resolves once none is left; never throws.
   */
  settle(pid: number, exit?: TreeExit): Promise<void>;
}
