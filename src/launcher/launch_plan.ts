/**
 * The launch plan: from a command line, the environment and the folder it was typed in, the facts of the run
 * (manifest, workspace, endpoint, listening port, transcript files, helper programs) and the least Deno permission
 * set toolgate then runs under. Kept light (no manifest validation, no JSON Schema library): it runs before every
 * command.
 *
 * @module
 */
import { dirname, join, resolve } from "../base/paths.ts";
import { isWithin } from "../contract/relative_path.ts";
import { CGROUP_ENV, ownCgroups } from "../sandbox/cgroups.ts";
import { builtSessionStart } from "../sandbox/session_start.ts";
import { PROXY_SOCKET_ENV, UPSTREAM_CA_ENV } from "../sandbox/proxy_settings.ts";
import { derivePermissions, type PermissionSet, type RunFacts } from "./own_grants.ts";
import { endpointFromEnv } from "../agent/limits.ts";
import { findProgram } from "../base/find_program.ts";
import { PORT_VALUE, withOptionalValue } from "../base/optional_value.ts";
import { credentialFiles, parsePoolUrl, poolKeyFile } from "../pool/address.ts";
import { configRoot, stateRoot } from "../state/state.ts";
import { TOOLGATE_CODE } from "../manifest/tool_belt.ts";
import { locateManifest } from "../manifest/manifest_location.ts";
import { programReads, realOr, trustedFacts } from "./manifest_facts.ts";
import { tracesEndpoint } from "../run/tracing.ts";
import { packagesRoot } from "../packages/packages_root.ts";
import { installGrants } from "../packages/registry_settings.ts";

/**
 * Options that take a value, of every command: their value is never the command's name. A test keeps this list
 * equal to the commands' own option tables.
 */
export const VALUE_OPTIONS: ReadonlySet<string> = new Set([
  "tools",
  // `trust --update NAME`: the package servers to install again (src/packages/).
  "update",
  "tool-timeout",
  "kill-grace",
  "max-output-bytes",
  "cwd",
  "audit-dir",
  "sandbox",
  "format",
  "prompt",
  "prompt-file",
  "system",
  "system-file",
  "base-url",
  "model",
  "api-key",
  "max-steps",
  "http-timeout",
  "http-retries",
  "http-max-bytes",
  "temperature",
  "save-messages",
  "load-messages",
  "output",
  "http",
  "console",
  "host",
  "token",
  "allow-tools",
  "approve-hosts",
  "max-calls",
  "max-session-calls",
  "max-jobs",
  "max-session-jobs",
  "max-sessions",
  "session-idle",
  "sse-poll",
  "executor",
  "pool-key-file",
  "nats",
  "concurrency",
  "name",
  "from-mcp",
  "apply",
  "undo",
  "server",
  "max-jobs",
  "max-session-jobs",
  "tool",
  "outcome",
  "since",
]);

/**
 * The commands that read and check the manifest but never start a tool (and `import`, which writes it): their
 * runs get no grant to start the tools' programs, and the launcher never reads what those programs need (for a
 * 1,000-tool manifest, a run list of 1,000 programs alone costs Deno some 40 ms at start).
 */
export const CHECK_ONLY: ReadonlySet<string> = new Set(["validate", "lint", "import"]);

/** Options that, given without a command, mean the agent loop. */
export const AGENT_TRIGGERS: ReadonlySet<string> = new Set(["prompt", "prompt-file", "load-messages"]);

/** A command line read the way toolgate reads it: the command, and the last value of each option. */
export interface ScannedArgs {
  /** The command's name (`run` for the agent loop), or `undefined` (help, version, a mistake). */
  readonly command?: string;
  readonly values: ReadonlyMap<string, string>;
  readonly flags: ReadonlySet<string>;
}

/**
 * Reads a command line without judging it (the command itself reports mistakes): `--name value`, `--name=value`
 * and agentcli's single-dash spellings; the command is the first word that is not an option's value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scanArgs } from "./launch_plan.ts";
 * const scanned = scanArgs(["-tools", "t.json", "call", "get_time", "{}"]);
 * assert.equal(scanned.command, "call");
 * assert.equal(scanned.values.get("tools"), "t.json");
 * ```
 */
export function scanArgs(given: readonly string[]): ScannedArgs {
  const argv = withOptionalValue(given, "console", "0", PORT_VALUE);
  const values = new Map<string, string>();
  const flags = new Set<string>();
  let command: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i];
    if (token === "--") break;
    const match = /^--?([A-Za-z][A-Za-z0-9-]*)(?:=(.*))?$/s.exec(token);
    if (match) {
      const [, name, inline] = match;
      if (VALUE_OPTIONS.has(name)) {
        const value = inline ?? argv[++i];
        if (value !== undefined) values.set(name, value);
        if (command === undefined && AGENT_TRIGGERS.has(name)) command = "run";
      } else flags.add(name);
      continue;
    }
    if (command === undefined) command = token;
  }
  return { command, values, flags };
}

/** The helper programs toolgate may start, by absolute path. */
export interface HelperPrograms {
  readonly bwrap?: string;
  readonly sh?: string;
  readonly cat?: string;
  readonly kill?: string;
  /** Starts an unconfined tool in a session of its own, without forking the runtime. */
  readonly setsid?: string;
  /** Starts an unconfined tool in a session and cgroup of its own in one exec, where it is built. */
  readonly sessionStart?: string;
  /** Holds the secret store's key in the desktop keyring. */
  readonly secretTool?: string;
}

/**
 * The helper programs, found once on PATH (absolute paths: nothing is looked up again under the least set), and
 * the session starter in `env`'s state folder where it is built.
 */
export function helperPrograms(path: string, env: Readonly<Record<string, string>> = {}): HelperPrograms {
  return {
    bwrap: findProgram("bwrap", path),
    sh: findProgram("sh", "/bin:/usr/bin"),
    cat: findProgram("cat", "/bin:/usr/bin"),
    kill: findProgram("kill", path),
    // Where process_tree.ts looks for it.
    setsid: findProgram("setsid", "/usr/bin:/bin"),
    sessionStart: builtSessionStart(env),
    secretTool: findProgram("secret-tool", path),
  };
}

/** The helper programs that were found, as the run grant lists them. */
export function helperPaths(helpers: HelperPrograms): string[] {
  return Object.values(helpers).filter((p): p is string => p !== undefined);
}

/** A launch: the flags toolgate's main entry runs under, and what it learns from the launcher. */
export interface LaunchPlan {
  readonly facts: RunFacts;
  readonly set: PermissionSet;
  /** Variables the launcher adds for the main process (the bwrap it resolved). */
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Plans the run of `argv` typed in `cwd` with `env`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { planLaunch } from "./launch_plan.ts";
 * import { toFlags } from "./own_grants.ts";
 * const plan = await planLaunch(["call", "get_time", "{}"], Deno.env.toObject(), Deno.cwd());
 * const flags = toFlags(plan.set);
 * assert.equal(flags[0], "--no-prompt");
 * assert.ok(flags.some((flag) => flag.startsWith("--allow-read=")));
 * ```
 */
export async function planLaunch(
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
  cwd: string,
): Promise<LaunchPlan> {
  const { command, values, flags } = scanArgs(argv);
  const at = (path: string) => resolve(cwd, path);
  // Searched from the workspace (`--cwd`), as the command itself does (commands/load.ts).
  const location = locateManifest(values.get("tools"), env, cwd, at(values.get("cwd") ?? "."));
  const manifestPath = location.path;
  // Nothing of a found manifest's programs, profiles, hosts or variables unless the user trusted its content, or
  // trusts it now: `trust` starts the manifest's MCP servers, as a run would, to pin their tools.
  const trusting = command === "trust" && !flags.has("forget");
  const workspace = realOr(at(values.get("cwd") ?? "."));
  const { facts: { programs, toolEnv, egressHosts: hosts, serverPaths }, readable } = await trustedFacts(
    location,
    env,
    trusting,
    workspace,
  );
  // `trust` installs package servers (src/packages/): it asks npm and python3 for their settings, and its egress
  // proxy reaches the registries they use here.
  const installs = trusting ? installGrants(manifestPath, env) : undefined;
  const egressHosts = [...hosts, ...installs?.hosts ?? []];
  const stateDirs: string[] = [];
  for (const root of [stateRoot, configRoot]) {
    try {
      stateDirs.push(root(env));
    } catch {
      // No HOME: the command says so when it needs a state folder.
    }
  }
  // Package servers' installs (src/packages/): read at each start, written by `trust`, which asks npm and python3.
  let packages: string | undefined;
  try {
    packages = packagesRoot(env);
  } catch {
    // No HOME: the command says so when it needs one.
  }
  const auditDir = values.get("audit-dir");
  if (auditDir !== undefined && !flags.has("no-audit")) stateDirs.push(at(auditDir));
  const readFiles = ["prompt-file", "system-file", "load-messages", "from-mcp"]
    .map((name) => values.get(name))
    .filter((value): value is string => value !== undefined && value !== "-")
    .map(at)
    .concat(readable);
  const startsTools = command === undefined || !CHECK_ONLY.has(command);
  // The CA certificates the credential broker trusts for bound hosts, when the user names a file of them. Read
  // only with an egress proxy (such a run is never recorded for the warm path, whose key holds no such variable).
  const upstreamCa = egressHosts.length > 0 ? env[UPSTREAM_CA_ENV] : undefined;
  if (upstreamCa && !upstreamCa.includes(",")) readFiles.push(at(upstreamCa));
  // What a tool's interpreter or runtime needs (one under the home folder): toolgate reads it to show it.
  if (startsTools) readFiles.push(...programReads(programs, env, workspace, manifestPath, stateDirs));
  // `validate` checks that each program is there: one outside the manifest's folder and the workspace lies
  // outside every folder granted above (and one inside needs no grant of its own: a long list of single files
  // makes every one of Deno's permission checks slower).
  if (command === "validate") {
    readFiles.push(
      ...programs.filter((program) =>
        !isWithin(program, dirname(manifestPath)) && !isWithin(program, workspace)
      ),
    );
  }
  const save = values.get("save-messages");
  const writeFiles = save === undefined ? [] : [at(save), `${at(save)}.tmp`];
  if (packages !== undefined && startsTools) (trusting ? writeFiles : readFiles).push(packages);
  readFiles.push(...installs?.reads ?? []);
  // doctor says whether user namespaces may be made where bubblewrap cannot tell.
  if (command === "doctor") readFiles.push("/proc/sys/user/max_user_namespaces");
  // Both say whether the paths an MCP server's arguments name exist (looked at, never read).
  if (command === "validate" || command === "doctor") readFiles.push(...serverPaths);
  // `init` writes its starter in the folder it was typed in, and nothing else.
  if (command === "init") writeFiles.push(at("tools.json"), at("tools"));
  // `init --from-mcp` and `import`: the hosts' files read, the project's tools.json and the rewired host's files.
  if (command === "import" || (command === "init" && values.has("from-mcp"))) {
    // Loaded for these commands only: every other start pays nothing for the hosts' formats.
    const { importGrants } = await import("./import_grants.ts");
    const grants = importGrants(argv, values, env, workspace, cwd);
    readFiles.push(...grants.read);
    writeFiles.push(...grants.write);
  }
  const isRun = command === "run";
  const endpoint = isRun ? values.get("base-url") ?? endpointFromEnv(env) : undefined;
  const port = command === "serve" ? values.get("http") : undefined;
  const listenPort = port === undefined ? undefined : Number(port);
  const consoleValue = command === "serve" || isRun || command === "worker"
    ? values.get("console")
    : undefined;
  const consolePort = consoleValue === undefined ? undefined : Number(consoleValue);
  const helpers = helperPrograms(env.PATH ?? "/usr/local/bin:/usr/bin:/bin", env);
  // Looked at (stat) before each use: it is started only where it is still there.
  if (helpers.sessionStart !== undefined) readFiles.push(helpers.sessionStart);
  // A worker, or a caller whose calls run on a worker pool: the pool's servers and the credential files.
  const poolUrl = command === "worker"
    ? values.get("nats") ?? (env.NATS_URL || undefined)
    : values.get("executor");
  const keyFile = poolKeyFile(values.get("pool-key-file"), env, cwd);
  const poolAddress = poolUrl === undefined || poolUrl === "local" ? undefined : parsePoolUrl(poolUrl);
  // Deno scopes a Unix socket by its exact path: the egress proxy's is chosen here, and granted. Its name is
  // short (16 hex digits): a socket's whole path fits in 107 bytes, and a long home folder takes most of them.
  const proxySocket = egressHosts.length > 0 && stateDirs.length > 0
    ? join(stateDirs[0], "proxy", `${crypto.getRandomValues(new Uint8Array(8)).toHex()}.sock`)
    : undefined;
  // Deno lets only --allow-all read /proc/self: hand the main entry this process's cgroups (the same as its own).
  const cgroupText = env[CGROUP_ENV] || ownCgroups();
  const facts: RunFacts = {
    workspace,
    manifestPath,
    // A command that only checks the manifest starts none of its programs.
    programs: startsTools ? programs : [],
    toolEnv,
    egressHosts,
    proxySocket,
    code: [TOOLGATE_CODE, Deno.execPath()],
    stateDirs,
    readFiles,
    writeFiles,
    endpoint: endpoint !== undefined && URL.canParse(endpoint) ? endpoint : undefined,
    // Spans go to the OTLP endpoint from every command that runs tools (and only when the variables name one).
    otlpEndpoint: startsTools ? tracesEndpoint(env) : undefined,
    listen: listenPort !== undefined && Number.isInteger(listenPort) && listenPort >= 0 && listenPort <= 65535
      ? { hostname: values.get("host") ?? "127.0.0.1", port: listenPort }
      : undefined,
    consoleListen: consolePort !== undefined && Number.isInteger(consolePort) && consolePort >= 0 &&
        consolePort <= 65535
      ? { hostname: "127.0.0.1", port: consolePort }
      : undefined,
    helpers: [...helperPaths(helpers), ...installs?.programs ?? []],
    pool: poolAddress === undefined || typeof poolAddress === "string" ? undefined : {
      servers: poolAddress.servers,
      // The NATS credential files, and the pool's signing key when a file holds it.
      files: [...credentialFiles(env).map(at), ...(keyFile === undefined ? [] : [keyFile])],
      worker: command === "worker",
    },
  };
  return {
    facts,
    set: derivePermissions(facts),
    env: {
      ...(helpers.bwrap === undefined ? {} : { TOOLGATE_BWRAP: helpers.bwrap }),
      ...(cgroupText === undefined ? {} : { [CGROUP_ENV]: cgroupText }),
      ...(proxySocket === undefined ? {} : { [PROXY_SOCKET_ENV]: proxySocket }),
    },
  };
}
