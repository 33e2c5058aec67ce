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
import type { CgroupSupport } from "./cgroups.ts";

/**
 * The SHA-256 digest of `session_start.c`, as built. A test holds it to the file: a changed source needs this
 * changed too, and with it the name of the program, so that a build of the old source is no longer found.
 */
export const SESSION_START_SOURCE_DIGEST = "e8d67d54a861a0882f0d0ddf54b3f6f69b1e100caa4b2acb07b3f6b0d5d74964";

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
 * The command line in front of an unconfined tool's own: `starter STEPS... --`, whose steps do what the cgroup's
 * shell does for a call without limits (cgroups.ts): the slot's folders made where missing, any limit an earlier
 * call of the slot set lifted, the slots joined; `gated`, then the wait at the call's gate (src/sandbox/gate.ts).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionStartLine } from "./session_start.ts";
 * const line = sessionStartLine("/s/session-start", { version: 2, pids: "/cg/tg", memory: "/cg/tg", shell: "/bin/sh" }, "call-1-1");
 * assert.deepEqual(line, [
 *   "/s/session-start",
 *   "-d", "/cg/tg/call-1-1",
 *   "-w", "/cg/tg/call-1-1/pids.max", "max",
 *   "-w", "/cg/tg/call-1-1/memory.max", "max",
 *   "-o", "/cg/tg/call-1-1/memory.swap.max", "max",
 *   "-j", "/cg/tg/call-1-1/cgroup.procs",
 *   "--",
 * ]);
 * ```
 */
export function sessionStartLine(
  starter: string,
  support: CgroupSupport,
  slot: string,
  gated = false,
): string[] {
  const line = [starter];
  const pids = support.pids === undefined ? undefined : join(support.pids, slot);
  const memory = support.memory === undefined ? undefined : join(support.memory, slot);
  const dirs = [...new Set([pids, memory].filter((dir): dir is string => dir !== undefined))];
  for (const dir of dirs) line.push("-d", dir);
  if (pids !== undefined) line.push("-w", join(pids, "pids.max"), "max");
  if (memory !== undefined) {
    if (support.version === 2) {
      line.push("-w", join(memory, "memory.max"), "max", "-o", join(memory, "memory.swap.max"), "max");
    } else line.push("-w", join(memory, "memory.limit_in_bytes"), "-1");
  }
  for (const dir of dirs) line.push("-j", join(dir, "cgroup.procs"));
  if (gated) line.push("-g");
  line.push("--");
  return line;
}
