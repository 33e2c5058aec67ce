/**
 * A call's gate: a gated start makes everything of the call's confinement, then waits for one line on stdin
 * before the tool runs. Where the session starter is built, a confined start waits inside its sandbox (bwrap runs
 * the starter from a descriptor, at the gate: session_start.ts's `gatedInside`), its namespaces, mounts and filter
 * set up; without it, the shell in front of bwrap waits, its cgroups and limits made. An unconfined start with a
 * cgroup waits the same way once its session and cgroup are made (the session starter's `-g`, or the cgroup's
 * shell). The caller writes that line before the tool's own stdin; an end of stdin before it ends
 * the start, and nothing of the tool runs. So such a start may be made ahead of its call
 * (src/process/starts_ahead.ts), or before a pool worker has its caller's go (src/pool/worker.ts); a call that
 * nothing starts ahead is not gated (src/run/foreground.ts): its tool starts at once.
 *
 * @module
 */
import { findProgram } from "../base/find_program.ts";

/** The line a gated start waits for: written by the caller before anything else on the tool's stdin. */
export const GATE: Uint8Array = new Uint8Array([10]);

/** The exit status of a gated start whose stdin ended before its gate. */
export const GATE_CLOSED_EXIT = 125;

/**
 * The shell line that waits at the gate (`sh` reads a pipe one byte at a time: the tool's stdin starts right
 * after it), or leaves on an end of stdin. A script runs it just before it becomes the program.
 */
export const GATE_LINE = `IFS= read -r gate || exit ${GATE_CLOSED_EXIT}`;

let shell: string | undefined;

/**
 * The argv prefix of a gated start without the cgroup script (which waits at the gate itself): a shell waits,
 * then becomes the program that follows.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gateWrapper } from "./gate.ts";
 * assert.equal(gateWrapper()[1], "-c");
 * ```
 */
export function gateWrapper(): string[] {
  shell ??= findProgram("sh", "/bin:/usr/bin") ?? "/bin/sh";
  return [shell, "-c", `${GATE_LINE}\nexec "$@"`, "sh"];
}
