/**
 * What a rewired host entry starts: the installed `toolgate` command by its absolute path (`deno task install`
 * puts it in `~/.local/bin`; else the first on PATH), or, where none is installed, the runtime running this very
 * launcher, so that a host starting it from any folder, with a PATH of its own, finds it all the same.
 *
 * Not here: installing the command (`build/install.ts`), what `serve --server` serves (`commands/serve_mcp.ts`).
 *
 * @module
 */
import { dirname, join } from "../base/paths.ts";
import { findProgram } from "../base/find_program.ts";
import { bundleEntry, packaging, TOOLGATE_ROOT } from "../manifest/tool_belt.ts";
import type { HostLaunch } from "./host_format.ts";

/**
 * The files the lookup looks at (the launcher grants reading them): the installed command's places.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { toolgateCandidates } from "./toolgate_command.ts";
 * assertEquals(toolgateCandidates({ HOME: "/home/me", PATH: "/usr/bin" }), ["/home/me/.local/bin/toolgate", "/usr/bin/toolgate"]);
 * ```
 */
export function toolgateCandidates(env: Readonly<Record<string, string>>): string[] {
  const home = env.HOME ? [join(env.HOME, ".local", "bin", "toolgate")] : [];
  const path = (env.PATH ?? "").split(":").filter((dir) => dir.startsWith("/")).map((dir) =>
    join(dir, "toolgate")
  );
  return [...new Set([...home, ...path])];
}

/**
 * The program and leading arguments that start toolgate from any folder.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { toolgateProgram } from "./toolgate_command.ts";
 * const program = toolgateProgram({ HOME: "/nonexistent", PATH: "" });
 * assertEquals(program[0], Deno.execPath()); // none installed: this runtime and toolgate's launcher
 * ```
 */
export function toolgateProgram(env: Readonly<Record<string, string>>): string[] {
  const home = env.HOME ? join(env.HOME, ".local", "bin") : undefined;
  const installed = (home === undefined ? undefined : findProgram("toolgate", home)) ??
    findProgram("toolgate", (env.PATH ?? "").split(":").filter((dir) => dir.startsWith("/")).join(":"));
  if (installed !== undefined) return [installed];
  const launcher = packaging() === "source"
    ? ["--config", join(TOOLGATE_ROOT, "deno.json"), join(TOOLGATE_ROOT, "src", "launch.ts")]
    : ["--no-config", join(dirname(bundleEntry()), "launch.js")];
  return [
    Deno.execPath(),
    "run",
    "--quiet",
    "--no-prompt",
    "--allow-read",
    "--allow-env",
    "--allow-run",
    ...launcher,
  ];
}

/**
 * The entry a host starts one server by: `toolgate serve --cwd PROJECT --server NAME`.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { serverLaunch } from "./toolgate_command.ts";
 * const launch = serverLaunch(["/home/me/.local/bin/toolgate"], "/srv/p", "fs");
 * assertEquals(launch, { command: "/home/me/.local/bin/toolgate", args: ["serve", "--cwd", "/srv/p", "--server", "fs"] });
 * ```
 */
export function serverLaunch(program: readonly string[], project: string, server: string): HostLaunch {
  return { command: program[0], args: [...program.slice(1), "serve", "--cwd", project, "--server", server] };
}
