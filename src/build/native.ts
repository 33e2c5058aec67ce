/**
 * Builds the session starter (`src/sandbox/session_start.c`) with the machine's C compiler, into toolgate's state
 * folder (hidden from tools), where unconfined calls find it (`src/sandbox/session_start.ts`). Freestanding where
 * its source has the processor's system calls (x86-64, AArch64: no C library to start), else static where the C
 * library allows (an exec of a static program maps nothing more), else linked as usual; each build is started
 * once before it is kept. Optional: without a
 * compiler, unconfined calls start through setsid(1) and a shell, as they did, and `install` says so.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { dirname, join } from "../base/paths.ts";
import { findProgram } from "../base/find_program.ts";
import { sha256Hex } from "../base/sha256_hex.ts";
import {
  builtSessionStart,
  SESSION_START_SOURCE_DIGEST,
  sessionStartPath,
} from "../sandbox/session_start.ts";

/** The session starter's source, beside the module that starts it. */
export const SESSION_START_SOURCE: string = fileURLToPath(
  new URL("../sandbox/session_start.c", import.meta.url),
);

/** The C compilers looked for, in this order, on the builder's PATH. */
const COMPILERS = ["cc", "gcc", "clang"];

/** How a build went: the program's path and how it was linked (or that it was there already), or why there is none. */
export type NativeBuild =
  | {
    readonly ok: true;
    readonly path: string;
    readonly built: "freestanding" | "static" | "dynamic" | "before";
  }
  | { readonly ok: false; readonly reason: string };

const decoder = new TextDecoder();

/**
 * The builds tried, in this order: freestanding (its own entry and system calls, no C library: a C library's start
 * was most of the program's time), on the processors its source has system calls for; static; linked as usual.
 */
const LINKINGS: readonly ("freestanding" | "static" | "dynamic")[] = [
  ...(Deno.build.arch === "x86_64" || Deno.build.arch === "aarch64" ? ["freestanding" as const] : []),
  "static",
  "dynamic",
];

/** The compiler's flags of each build. */
const LINK_FLAGS = {
  // No stack protector (its canary lives where a C library's start puts it), no position independence (nothing
  // would relocate it), no builtins (a loop the compiler takes for strlen must not call one).
  freestanding: [
    "-static",
    "-nostdlib",
    "-ffreestanding",
    "-fno-stack-protector",
    "-fno-pie",
    "-no-pie",
    "-fno-asynchronous-unwind-tables",
    "-DSESSION_START_FREESTANDING",
  ],
  static: ["-static"],
  dynamic: [],
} as const;

/**
 * Whether a build starts and runs a program: itself, with no steps, whose usage line it writes and exits 125 (its
 * entry, its arguments, its exec and its exit, before anything relies on it).
 */
async function startsAsBuilt(program: string): Promise<boolean> {
  try {
    const output = await new Deno.Command(program, {
      args: ["--", program],
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    return output.code === 125 && decoder.decode(output.stderr).startsWith("usage: session-start ");
  } catch {
    return false;
  }
}

/**
 * Builds the session starter for `env`'s user, unless a build of this very source is there already; `env.PATH`
 * is where the compiler is looked for. Written to a temporary name beside its place, then renamed into it, so that
 * a call starting meanwhile finds the old program or the new one, never half of one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildSessionStart } from "./native.ts";
 * const built = await buildSessionStart({ HOME: "/nonexistent", PATH: "/nonexistent" });
 * assert.deepEqual(built, { ok: false, reason: "no C compiler (cc, gcc or clang) on PATH" });
 * ```
 */
export async function buildSessionStart(env: Readonly<Record<string, string>>): Promise<NativeBuild> {
  const compiler = COMPILERS.map((name) => findProgram(name, env.PATH ?? "")).find((path) =>
    path !== undefined
  );
  if (compiler === undefined) return { ok: false, reason: "no C compiler (cc, gcc or clang) on PATH" };
  const source = await Deno.readFile(SESSION_START_SOURCE);
  if (await sha256Hex(source) !== SESSION_START_SOURCE_DIGEST) {
    return { ok: false, reason: `${SESSION_START_SOURCE} is not the source this toolgate starts` };
  }
  let target: string;
  try {
    target = sessionStartPath(env);
  } catch (error) {
    // No HOME: no state folder to build it in.
    return { ok: false, reason: (error as Error).message };
  }
  if (builtSessionStart(env) !== undefined) return { ok: true, path: target, built: "before" };
  await Deno.mkdir(dirname(target), { recursive: true, mode: 0o700 });
  const partial = join(dirname(target), `.${crypto.randomUUID()}.partial`);
  let failure = "";
  for (const linked of LINKINGS) {
    // No -Werror: a newer compiler's new warning must not cost a user the build.
    const output = await new Deno.Command(compiler, {
      args: ["-O2", "-Wall", ...LINK_FLAGS[linked], "-o", partial, SESSION_START_SOURCE],
      clearEnv: true,
      env: { PATH: env.PATH ?? "/usr/bin:/bin" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (output.success && await startsAsBuilt(partial)) {
      await Deno.chmod(partial, 0o755);
      await Deno.rename(partial, target);
      return { ok: true, path: target, built: linked };
    }
    failure = output.success
      ? `the ${linked} build does not start`
      : decoder.decode(output.stderr).trim().split("\n").slice(-3).join("\n");
  }
  await Deno.remove(partial).catch(() => {});
  return { ok: false, reason: `${compiler} could not build it: ${failure}` };
}
