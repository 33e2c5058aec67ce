/**
 * How a seccomp program reaches bubblewrap: bwrap reads it from a file descriptor (`--seccomp 3`), and
 * `Deno.Command` passes none but stdin, stdout and stderr. So the program is written once per content into a
 * private folder of toolgate's state (the control plane, hidden from every sandbox), named by its digest and
 * read-only, and the session starter in front of bwrap (session_start.c's `-f`), or a small shell where it is not
 * built, opens it as fd 3 just before it becomes bwrap. bwrap reads the program, closes the descriptor and loads
 * the filter just before it starts the tool: nothing of the file is left inside.
 *
 * Not here: the program itself (seccomp_filter.ts); when a call gets it (tool_launch.ts).
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { sha256Hex } from "../base/sha256_hex.ts";
import { prepareDir } from "../state/private_dir.ts";
import { findProgram } from "../base/find_program.ts";

/** The descriptor bwrap reads the program from (`--seccomp 3`). */
export const SECCOMP_FD = 3;

/** The exit status of a start whose filter file could not be opened (bwrap then never runs). */
export const SECCOMP_OPEN_EXIT = 125;

/**
 * Writes `program` into `dir` (made private, 0700, if needed) as `seccomp-<digest>.bpf`, read-only, unless the
 * same bytes are there already; returns its path. A file of that name with other bytes (a partial write of a run
 * that died) is replaced, never trusted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { join } from "../base/paths.ts";
 * import { writeSeccompFile } from "./seccomp_file.ts";
 * const dir = Deno.makeTempDirSync();
 * const file = await writeSeccompFile(join(dir, "seccomp"), new Uint8Array(8));
 * assert.deepEqual(Deno.readFileSync(file), new Uint8Array(8));
 * assert.equal(Deno.statSync(file).mode! & 0o777, 0o444);
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export async function writeSeccompFile(dir: string, program: Uint8Array<ArrayBuffer>): Promise<string> {
  const name = (await sha256Hex(program)).slice(0, 24);
  prepareDir(dir);
  const file = join(dir, `seccomp-${name}.bpf`);
  try {
    const info = Deno.lstatSync(file);
    const readOnly = ((info.mode ?? 0) & 0o222) === 0;
    if (info.isFile && readOnly && sameBytes(Deno.readFileSync(file), program)) return file;
  } catch {
    // Not there yet.
  }
  // A fresh name, then an atomic rename: a reader never sees half a program.
  const temp = join(dir, `.seccomp-${crypto.randomUUID()}`);
  Deno.writeFileSync(temp, program, { createNew: true, mode: 0o444 });
  Deno.chmodSync(temp, 0o444);
  Deno.renameSync(temp, file);
  return file;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/**
 * The argv prefix that opens `file` as fd {@linkcode SECCOMP_FD} and becomes what follows (bwrap and its
 * arguments, which name `--seccomp 3`); a file that cannot be opened stops the start before bwrap runs. `shell`
 * defaults to the system's `sh`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { seccompWrapper } from "./seccomp_file.ts";
 * const prefix = seccompWrapper("/state/seccomp/seccomp-ab.bpf", "/bin/sh");
 * assert.deepEqual(prefix.slice(-2), ["sh", "/state/seccomp/seccomp-ab.bpf"]);
 * ```
 */
export function seccompWrapper(
  file: string,
  shell: string = findProgram("sh", "/bin:/usr/bin") ?? "/bin/sh",
): string[] {
  return [
    shell,
    "-c",
    `exec ${SECCOMP_FD}<"$1" || exit ${SECCOMP_OPEN_EXIT}\nshift\nexec "$@"`,
    "sh",
    file,
  ];
}
