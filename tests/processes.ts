/**
 * Watching a test's processes from outside: the pids of an exact command line, a sleep length no other process
 * uses (so that the command line names the test's own process, inside a sandbox or not), ending what a failed
 * test left, and waiting until something holds.
 *
 * @module
 */

/**
 * Resolves after `ms` milliseconds.
 *
 * @example
 * ```ts
 * await sleep(1);
 * ```
 */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A sleep length no other process uses: `base` seconds and up to `spread` more, with a random fraction. Each test
 * file takes its own `base`, so that files running at once never share one.
 *
 * @example
 * ```ts
 * const seconds = uniqueSleep(900);
 * console.assert(Number(seconds) >= 900 && Number(seconds) < 991);
 * ```
 */
export function uniqueSleep(base: number, spread = 90): string {
  return `${base + Math.floor(Math.random() * spread)}.${Math.floor(Math.random() * 1000)}`;
}

/**
 * The pids whose whole command line is `command` (not the shells whose command lines mention it).
 *
 * @example
 * ```ts ignore
 * const pids = await pgrep(`sleep ${seconds}`);
 * ```
 */
export async function pgrep(command: string, exact = true): Promise<number[]> {
  const out = await new Deno.Command("pgrep", {
    args: [...exact ? ["-x"] : [], "-f", "--", command],
    stdout: "piped",
    stderr: "null",
  })
    .output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.trim() !== "").map(Number);
}

/**
 * The starts waiting at their call's gate (src/sandbox/gate.ts) whose command line names `text` (a workspace): the
 * shell that reads the gate before it becomes bwrap, the session starter with its gate step (`-g`) in front of an
 * unconfined tool, or inside a sandbox (run from its descriptor) in front of a confined one.
 *
 * @example
 * ```ts ignore
 * assert.deepEqual(await heldAtGate(workspace), [child.pid]);
 * ```
 */
export function heldAtGate(text: string): Promise<number[]> {
  const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return pgrep(
    `(read -r gate|^[^ ]*/session-start-[0-9a-f]+ .* -g -- |^/proc/self/fd/[0-9]+ -k -g -- ).*${escaped}`,
    false,
  );
}

/**
 * Sends SIGKILL to each pid that is still there (what a failed test left behind).
 *
 * @example
 * ```ts ignore
 * killAll(await pgrep(`sleep ${seconds}`));
 * ```
 */
export function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
}

/**
 * Waits until `check` holds (the test waits for what it expects), or fails after `ms` saying `what` did not come.
 *
 * @example
 * ```ts
 * let n = 0;
 * await until(() => ++n > 2, "the third look");
 * ```
 */
export async function until(
  check: () => Promise<boolean> | boolean,
  what: string,
  ms = 30_000,
): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

/**
 * Waits for `promise` at most `ms`, else fails saying `what` did not come (`deno test` has no per-test timeout:
 * a wait that only a process's end or an event settles would stall the whole run). The timer goes with it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(await within(Promise.resolve(1), 1_000, "the answer"), 1);
 * await assert.rejects(within(new Promise(() => {}), 10, "never"), /never: not within 10 ms/);
 * ```
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The status of `child` once it exited, waited for at most `ms`: past that it is sent SIGKILL (so that the failed
 * test leaves it behind no more than its pipes) and the wait fails saying `what` did not come.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const child = new Deno.Command("sleep", { args: ["30"] }).spawn();
 * await assert.rejects(exitWithin(child, 10, "the sleep's end"), /the sleep's end: not within 10 ms/);
 * assert.equal((await child.status).signal, "SIGKILL");
 * ```
 */
export async function exitWithin(
  child: Deno.ChildProcess,
  ms: number,
  what: string,
): Promise<Deno.CommandStatus> {
  try {
    return await within(child.status, ms, what);
  } catch (error) {
    try {
      child.kill("SIGKILL");
    } catch {
      // Gone meanwhile.
    }
    await within(child.status, 10_000, `${what} (after SIGKILL)`).catch(() => undefined);
    throw error;
  }
}
