/**
 * The permission flags `deno task compile` bakes into the binary. A binary cannot work its set out at each start
 * as the `toolgate` command does, so it carries one fixed set: its built-in tool belt in the folder it runs from
 * (the workspace is `.`), the state folder of the user who builds it, the endpoint set at build (the default
 * one), and loopback, any port (a local model's endpoint, `serve --http` and `--console`). At each start the
 * binary checks the run's own needs against this set and says in one line what it lacks
 * (`src/launcher/fixed_grants.ts`).
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { fileURLToPath } from "node:url";
import { helperPaths, helperPrograms } from "../launcher/launch_plan.ts";
import { derivePermissions, toFlags } from "../launcher/own_grants.ts";
import { configRoot, stateRoot } from "../state/state.ts";
import { packagesRoot } from "../packages/packages_root.ts";
import { endpointFromEnv } from "../agent/limits.ts";

/**
 * Loopback by every name, any port: where a local model answers, and where `serve --http` listens.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LOOPBACK } from "./flags.ts";
 * assert.ok(LOOPBACK.includes("127.0.0.1"));
 * ```
 */
export const LOOPBACK: readonly string[] = ["127.0.0.1", "localhost", "[::1]"];

/** The repository's root folder. */
export const ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The flags baked into the binary at `output`, for the environment `env` of the user who builds it; `runtime` is
 * what starts the built-in tools (the binary itself; Deno, for a bundle run with `deno run`).
 */
export function compileFlags(
  output: string,
  env: Readonly<Record<string, string>>,
  runtime: string = output,
): string[] {
  const helpers = helperPrograms(env.PATH ?? "/usr/local/bin:/usr/bin:/bin", env);
  const set = derivePermissions({
    workspace: ".",
    manifestPath: join(".", "tools.json"),
    programs: [],
    toolEnv: ["TOOLGATE_FETCH_ALLOW_HOSTS"],
    code: [output, runtime],
    stateDirs: [stateRoot(env), configRoot(env)],
    // Package servers run from their pinned installs (src/packages/), read at each start.
    readFiles: [packagesRoot(env)],
    writeFiles: [],
    endpoint: endpointFromEnv(env),
    helpers: helperPaths(helpers),
  });
  // The runtime starts the built-in tools (the binary runs itself in tool mode).
  set.run = [...new Set([...set.run, runtime])];
  set.net = [...new Set([...set.net, ...LOOPBACK])];
  return toFlags(set);
}
