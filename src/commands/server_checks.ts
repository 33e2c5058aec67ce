/**
 * What `validate` and `doctor` say of a manifest's MCP servers without starting them: a stdio server's program
 * found (on PATH, or at its path), the paths its arguments name there, the secrets it names in the store or the
 * environment, and what its profile gets here (reads, writes, network; confined, unconfined or refused); for
 * `doctor`, a package server's install too (the one `toolgate trust` made, unchanged).
 *
 * Not here: starting a server and its start's failures (`gateway/upstream.ts`, `gateway/start_hint.ts`), the
 * entry's own rules (`manifest/server_spec.ts`).
 *
 * @module
 */
import { serverEntryOf } from "../packages/package_entry.ts";
import { installedServer } from "../packages/installed_server.ts";
import { isAbsolute, resolve } from "../base/paths.ts";
import { findProgram } from "../base/find_program.ts";
import type { ServerSpec } from "../manifest/server_spec.ts";
import type { SandboxMode, SandboxSupport } from "../sandbox/sandbox.ts";
import { describeProfile, outlook } from "./profile_outlook.ts";
import { SecretStore } from "../state/secret_store.ts";

/** What one server gets here, and why it cannot start when it cannot. */
export interface ServerOutlook {
  /** The server's name in `mcpServers`. */
  readonly server: string;
  /** `stdio` or `http`. */
  readonly transport: "stdio" | "http";
  /** A stdio server's program as found here; `null` when it is not found; an HTTP server's URL. */
  readonly program: string | null;
  /** What its profile reads besides the system and the workspace. */
  readonly reads: readonly string[];
  /** Its profile in a few words (writes, network). */
  readonly detail: string;
  /**
   * How it runs here: confined, unconfined, or refused (it writes or reaches the network and cannot be confined);
   * absent when confinement was not looked at (`validate`).
   */
  readonly runs?: "confined" | "unconfined" | "refused";
  /** Errors: it cannot start here. */
  readonly errors: readonly ServerFinding[];
  /** Warnings: it may start, and fail (a path its arguments name is missing, a secret is not stored). */
  readonly warnings: readonly ServerFinding[];
}

/** One thing in a server's way, and what to do about it. */
export interface ServerFinding {
  /** What is wrong, naming the server: `mcpServers "fs": ...`. */
  readonly problem: string;
  /** What to do. */
  readonly fix: string;
}

/** What the checks need of the run. */
export interface ServerCheckContext {
  /** The PATH a server is looked up on. */
  readonly path: string;
  /** The workspace: relative programs and paths resolve there, as the gateway resolves them. */
  readonly workspace: string;
  /** Is a secret of this name stored, or in the environment? */
  readonly hasSecret: (name: string) => boolean;
  /** What confinement can do here, and the mode; absent: not looked at. */
  readonly sandbox?: { readonly support: SandboxSupport; readonly mode: SandboxMode };
  /**
   * The environment and the manifest's real path, to look for a package server's install (`toolgate trust`
   * makes it); absent: not looked at.
   */
  readonly installs?: { readonly env: Readonly<Record<string, string>>; readonly manifest: string };
}

/** Does `path` exist here? `undefined` when toolgate may not look. */
function exists(path: string): boolean | undefined {
  try {
    Deno.statSync(path);
    return true;
  } catch (error) {
    return error instanceof Deno.errors.NotFound ? false : undefined;
  }
}

/** The arguments that name a path (absolute, or `./` and `../` against the workspace), resolved. */
function pathArgs(args: readonly string[], workspace: string): string[] {
  return args.filter((arg) => isAbsolute(arg) || arg.startsWith("./") || arg.startsWith("../"))
    .map((arg) => resolve(workspace, arg));
}

/**
 * What one server gets here and what stands in its way, found without starting it.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { serverOutlook } from "./server_checks.ts";
 * import type { ServerSpec } from "../manifest/server_spec.ts";
 * const server = {
 *   name: "gone", transport: "stdio", command: "no-such-program-here", args: [], env: {}, headers: {},
 *   profile: { name: "none", read: [], write: [], net: false, env: [], limits: {} }, secrets: [],
 *   credentials: [], readOnly: [], deny: [],
 * } as unknown as ServerSpec;
 * const seen = serverOutlook(server, {
 *   path: "/usr/bin:/bin", workspace: "/srv/p", hasSecret: () => false,
 * });
 * equal(seen.errors[0].problem, 'mcpServers "gone": the program no-such-program-here is not found on PATH (/usr/bin:/bin)');
 * ```
 */
export function serverOutlook(server: ServerSpec, context: ServerCheckContext): ServerOutlook {
  const name = `mcpServers ${JSON.stringify(server.name)}`;
  const errors: ServerFinding[] = [];
  const warnings: ServerFinding[] = [];
  const { sandbox } = context;
  const runs = server.transport === "http"
    ? "unconfined"
    : sandbox && outlook(server.profile, sandbox.support, sandbox.mode);
  let program: string | null = server.url ?? null;
  if (server.transport === "stdio") {
    const command = server.command ?? "";
    // A package runner's entry (npx, uvx, pipx run, deno run npm:) runs from the install `toolgate trust` makes,
    // under node or python3: the runner itself need not be here (src/packages/).
    const entry = serverEntryOf(command, server.args);
    const runtime = entry.kind === "package" ? (entry.ecosystem === "npm" ? "node" : "python3") : command;
    program = (runtime.includes("/")
      ? (exists(resolve(context.workspace, runtime)) === false
        ? undefined
        : resolve(context.workspace, runtime))
      : findProgram(runtime, context.path)) ?? null;
    // A package server runs only from the install trust made: one not made (its package index lacks it, no
    // network at trust) or changed since is said here, before a host starts it.
    const notInstalled = entry.kind === "package" && context.installs !== undefined
      ? installedServer(server, context.installs)
      : undefined;
    if (entry.kind === "unsupported") {
      errors.push({ problem: `${name}: ${entry.message}`, fix: "change the entry's command" });
    } else if (typeof notInstalled === "string") {
      errors.push({
        problem: `${name}: ${notInstalled}`,
        fix: "toolgate trust, in the manifest's folder",
      });
    } else if (program === null) {
      errors.push({
        problem: entry.kind === "package"
          ? `${name}: ${entry.written} runs under ${runtime}, which is not found on PATH (${context.path})`
          : runtime.includes("/")
          ? `${name}: the program ${runtime} does not exist`
          : `${name}: the program ${runtime} is not found on PATH (${context.path})`,
        fix: "install it, or name it by its absolute path in the entry's command",
      });
    }
    for (const path of pathArgs(server.args, context.workspace)) {
      if (exists(path) === false) {
        warnings.push({
          problem: `${name}: its arguments name ${path}, which does not exist`,
          fix: "correct the path in the entry's args",
        });
      }
    }
    if (runs === "refused") {
      errors.push({
        problem: `${name}: it cannot be confined here${
          sandbox?.support.ok === false ? ` (${sandbox.support.reason})` : ""
        }, and its profile lets it write or reach the network, so it does not start`,
        fix: "install bubblewrap (apt-get install bubblewrap) and allow user namespaces, or run with " +
          "--sandbox off to run it unconfined, as you",
      });
    }
  }
  for (const secret of [...server.secrets, ...server.credentials.map((c) => c.secret)]) {
    if (!context.hasSecret(secret)) {
      warnings.push({
        problem: `${name}: it needs the secret ${secret}, which is neither stored nor in the environment`,
        fix: `toolgate secrets set ${secret}`,
      });
    }
  }
  return {
    server: server.name,
    transport: server.transport,
    program,
    reads: server.profile.read,
    detail: describeProfile(server.profile),
    runs,
    errors,
    warnings,
  };
}

/** Where {@linkcode serverOutlooks} looks: the environment, the folder, and (for `doctor`) confinement. */
export interface ServerLookup {
  readonly env: Readonly<Record<string, string>>;
  /** Reads named variables beyond `env` (a scoped grant), as `Io.readEnv`. */
  readonly readEnv?: (names: readonly string[]) => Record<string, string>;
  /** The workspace. */
  readonly cwd: string;
  readonly sandbox?: ServerCheckContext["sandbox"];
  /** The manifest's real path: a package server's install is looked for (see {@linkcode ServerCheckContext}). */
  readonly manifest?: string;
}

/**
 * What each server gets here ({@linkcode serverOutlook}), a secret counted when toolgate's store holds its name
 * (no key is asked for) or the environment sets it.
 *
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { serverOutlooks } from "./server_checks.ts";
 * deepEqual(serverOutlooks([], { env: {}, cwd: "/srv/p" }), []);
 * ```
 */
export function serverOutlooks(servers: readonly ServerSpec[], lookup: ServerLookup): ServerOutlook[] {
  if (servers.length === 0) return [];
  const { env, readEnv } = lookup;
  let stored = new Set<string>();
  try {
    stored = new Set(new SecretStore({ env, keyring: null }).list().map((secret) => secret.name));
  } catch {
    // No state folder, or no store: every secret comes from the environment.
  }
  const context: ServerCheckContext = {
    path: env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    workspace: lookup.cwd,
    hasSecret: (name) => stored.has(name) || (env[name] ?? readEnv?.([name])[name] ?? "") !== "",
    sandbox: lookup.sandbox,
    installs: lookup.manifest === undefined ? undefined : { env, manifest: lookup.manifest },
  };
  return servers.map((server) => serverOutlook(server, context));
}
