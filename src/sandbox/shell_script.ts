/**
 * One small shell script run outside any sandbox, quietly: no input, no output kept, an environment of its own
 * (only a system PATH). How the tree ends (a cgroup's processes, a pid namespace) and the reaper of cgroups a dead
 * run left run this way.
 *
 * Not here: what the scripts say (`cgroup_end.ts`, `namespace_end.ts`).
 *
 * @module
 */

/**
 * Runs `sh -c SCRIPT sh ARGS...` with `shell` and waits for it; `false` when it failed or could not start.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runShellScript } from "./shell_script.ts";
 * assert.equal(await runShellScript("/bin/sh", 'test "$1" = x', ["x"]), true);
 * assert.equal(await runShellScript("/bin/sh", "exit 3", []), false);
 * assert.equal(await runShellScript("/nonexistent/sh", "true", []), false);
 * ```
 */
export async function runShellScript(
  shell: string,
  script: string,
  args: readonly string[],
): Promise<boolean> {
  try {
    const done = await new Deno.Command(shell, {
      args: ["-c", script, "sh", ...args],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin" },
    }).output();
    return done.success;
  } catch {
    return false;
  }
}
