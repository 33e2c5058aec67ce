/**
 * The compiled binary's start-up check. The `toolgate` command works out each run's least grants and starts the
 * run under them; a binary cannot, since `deno compile` bakes one fixed set into it (`src/build/flags.ts`). So
 * the binary plans the run as the command would and asks Deno which of those grants it lacks: a run that needs
 * one is told so in one line before it starts, instead of failing half-way with Deno's `NotCapable` error and a
 * stack trace.
 *
 * @module
 */
import { planLaunch } from "./launch_plan.ts";
import type { PermissionSet, RunFacts } from "./own_grants.ts";
import { isWithin } from "../contract/relative_path.ts";
import { TOOLGATE_ROOT } from "../manifest/tool_belt.ts";

/** One grant a run needs, in Deno's words (`read`, `/srv/project`). */
export interface NeededGrant {
  readonly name: "read" | "write" | "run" | "env" | "net" | "sys";
  readonly value: string;
}

/** Asks whether a grant is held (Deno's permission query, or a stand-in in a test). */
export type GrantQuery = (grant: NeededGrant) => boolean;

/**
 * Deno's own answer for this process.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { HELD } from "./fixed_grants.ts";
 * assert.ok(HELD({ name: "env", value: "PATH" })); // where PATH may be read
 * ```
 */
export const HELD: GrantQuery = (grant) => {
  const descriptor: Deno.PermissionDescriptor = grant.name === "read" || grant.name === "write"
    ? { name: grant.name, path: grant.value }
    : grant.name === "run"
    ? { name: "run", command: grant.value }
    : grant.name === "env"
    ? { name: "env", variable: grant.value }
    : grant.name === "net"
    ? { name: "net", host: grant.value }
    : { name: "sys", kind: grant.value as Deno.SysPermissionDescriptor["kind"] };
  return Deno.permissions.querySync(descriptor).state === "granted";
};

/**
 * The grants of a planned run that `held` says this process lacks. toolgate's own code and its built-in belt's
 * folder are left out (a binary reads them from inside itself), and so are the manifest's programs (a tool whose program cannot be started is
 * answered with an envelope that says so, and a confined one needs only bubblewrap).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { missingGrants } from "./fixed_grants.ts";
 * const set = { read: ["/srv/p"], write: [], run: [], env: ["PATH"], net: ["127.0.0.1:8765"], sys: [] };
 * assert.deepEqual(missingGrants(set, { code: [], programs: [] }, (grant) => grant.name !== "net"), [{ name: "net", value: "127.0.0.1:8765" }]);
 * ```
 */
export function missingGrants(
  set: PermissionSet,
  facts: Pick<RunFacts, "code" | "programs">,
  held: GrantQuery,
): NeededGrant[] {
  const own = new Set(facts.code.filter((path) => path !== Deno.execPath()));
  const programs = new Set(facts.programs);
  const needed: NeededGrant[] = [
    ...set.read.filter((path) => !own.has(path) && !isWithin(path, TOOLGATE_ROOT)).map((value) => ({
      name: "read" as const,
      value,
    })),
    ...set.write.map((value) => ({ name: "write" as const, value })),
    ...set.run.filter((path) => !programs.has(path) && !own.has(path)).map((value) => ({
      name: "run" as const,
      value,
    })),
    ...set.env.map((value) => ({ name: "env" as const, value })),
    // The egress proxy's socket has a name made for each run: it shows as the hosts that need it.
    ...set.net.filter((host) => !host.startsWith("unix:")).map((value) => ({ name: "net" as const, value })),
    ...set.sys.map((value) => ({ name: "sys" as const, value })),
  ];
  return needed.filter((grant) => !held(grant));
}

/** The most grants named in the line; the rest are counted. */
const NAMED = 4;

/**
 * The one line that says what a run of the binary cannot do, and what to do instead.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fixedGrantsLine } from "./fixed_grants.ts";
 * const line = fixedGrantsLine([{ name: "net", value: "10.0.0.5:8000" }]);
 * assert.match(line, /^toolgate: this binary cannot do this run: it lacks net 10\.0\.0\.5:8000 \(/);
 * assert.match(line, /run the installed command instead \(deno task install\)/);
 * ```
 */
export function fixedGrantsLine(missing: readonly NeededGrant[]): string {
  const named = missing.slice(0, NAMED).map((grant) => `${grant.name} ${grant.value}`);
  if (missing.length > NAMED) named.push(`${missing.length - NAMED} more`);
  return `toolgate: this binary cannot do this run: it lacks ${
    named.join(", ")
  } (a compiled binary keeps the ` +
    "grants it was built with: the folder it runs in, its builder's state folders, loopback and the endpoint " +
    "set at build); run the installed command instead (deno task install), which grants each run what it needs\n";
}

/** What the start-up check found: the line to print, and whether the run stops (exit 2) or goes on. */
export interface FixedGrantsFinding {
  readonly line: string;
  readonly fatal: boolean;
}

/**
 * What to say of the missing grants: a run that lacks a file, a host, a program or a fact of the system stops
 * with {@linkcode fixedGrantsLine}; one that lacks only variables goes on with a warning, as toolgate reads only
 * the variables it may (a tool then gets none of those, and one that needs a secret is answered that it is
 * missing). Nothing missing: `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fixedGrantsFinding } from "./fixed_grants.ts";
 * assert.equal(fixedGrantsFinding([{ name: "env", value: "LANG" }])?.fatal, false);
 * assert.ok(fixedGrantsFinding([{ name: "read", value: "/srv/p" }])?.fatal);
 * ```
 */
export function fixedGrantsFinding(missing: readonly NeededGrant[]): FixedGrantsFinding | undefined {
  const fatal = missing.filter((grant) => grant.name !== "env");
  if (fatal.length > 0) return { line: fixedGrantsLine(fatal), fatal: true };
  if (missing.length === 0) return undefined;
  const names = missing.slice(0, NAMED).map((grant) => grant.value);
  if (missing.length > NAMED) names.push(`${missing.length - NAMED} more`);
  return {
    line: `toolgate: warning: this binary cannot read ${names.join(", ")} for its tools (a compiled binary ` +
      "reads only the variables it was built with); the installed command (deno task install) passes them\n",
    fatal: false,
  };
}

/**
 * Plans the run of `argv` typed in `cwd` as the `toolgate` command would, and says what this process lacks of
 * the grants it needs ({@linkcode fixedGrantsFinding}; `undefined`: it has them all). A plan that itself needs a
 * missing grant (a manifest outside every folder granted) is answered with that grant.
 *
 * @example
 * ```ts
 * import { fixedGrantsProblem } from "./fixed_grants.ts";
 * const found = await fixedGrantsProblem(["call", "get_time"], Deno.env.toObject(), Deno.cwd());
 * if (found !== undefined) console.error(found.line);
 * ```
 */
export async function fixedGrantsProblem(
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
  cwd: string,
  held: GrantQuery = HELD,
): Promise<FixedGrantsFinding | undefined> {
  try {
    const plan = await planLaunch(argv, env, cwd);
    return fixedGrantsFinding(missingGrants(plan.set, plan.facts, held));
  } catch (error) {
    if (!(error instanceof Deno.errors.NotCapable)) throw error;
    // Deno's words: `Requires read access to "/x", run again with the --allow-read flag`.
    const what = /Requires (\w+) access to "?([^",]+)"?/.exec(error.message);
    const name = what?.[1] as NeededGrant["name"] | undefined;
    return {
      line: fixedGrantsLine([{ name: name ?? "read", value: what?.[2] ?? error.message }]),
      fatal: true,
    };
  }
}
