/**
 * toolgate's own Deno grants (a tool's confinement is its profile, `profiles.ts`, read from `permissions/`): the
 * least set for one run, derived at launch from what the run touches (the manifest, the workspace, the endpoint,
 * the port `serve --http` listens on, transcript files), and a look at what this process was actually granted, so
 * that a broader grant shows (or, `--locked`, refuses to start).
 *
 * @module
 */
import { SYSTEM_PATHS } from "../sandbox/sandbox.ts";
import { dirname, isAbsolute, relative } from "../base/paths.ts";
import { STATE_ENV } from "../state/state.ts";
import { UPSTREAM_CA_ENV } from "../sandbox/proxy_settings.ts";
import { NATS_ENV, POOL_KEY_FILE_ENV } from "../pool/address.ts";
import { OTEL_ENV } from "../run/tracing.ts";
import { INSTALL_ENV } from "../packages/packages_root.ts";
import { RESIDENT_ARGS_ENV, RESIDENT_ENV, RESIDENT_MAC_ENV } from "./resident_wire.ts";

/** Variables toolgate itself reads. */
export const OWN_ENV = [
  "PATH",
  ...STATE_ENV,
  "TOOLGATE_TOOLS",
  "TOOLGATE_SANDBOX",
  "TOOLGATE_REDACT",
  "TOOLGATE_MCP_TOKEN",
  "TOOLGATE_BWRAP",
  "TOOLGATE_CGROUP",
  "TOOLGATE_PROXY_SOCKET",
  UPSTREAM_CA_ENV,
  // The front end's ask for a resident server after a warm run, and the recorded command line it runs.
  RESIDENT_ENV,
  RESIDENT_MAC_ENV,
  RESIDENT_ARGS_ENV,
  // Asks a bundle run under fixed flags for the compiled binary's start-up check (the tests do).
  "TOOLGATE_CHECK_GRANTS",
  "OAI_BASE_URL",
  "OPENAI_BASE_URL",
  "OAI_MODEL",
  "OAI_API_KEY",
  "OPENAI_API_KEY",
  "OAI_HTTP_TIMEOUT",
  "OAI_HTTP_RETRIES",
  "OAI_HTTP_MAX_BYTES",
  "NO_COLOR",
  // The worker pool's address and credentials, under the names the NATS tools use, and its signing key's file.
  ...NATS_ENV,
  POOL_KEY_FILE_ENV,
  // The OpenTelemetry variables (read, set or not; the SDK loads only when one names an endpoint).
  ...OTEL_ENV,
  // Where package servers are installed, and the package managers' settings `trust` reads (src/packages/).
  ...INSTALL_ENV,
] as const;

/** A permission set in Deno's vocabulary; every list is a scope (an unscoped grant is never produced here). */
export interface PermissionSet {
  read: string[];
  write: string[];
  run: string[];
  env: string[];
  net: string[];
  sys: string[];
}

/** What one run touches: the facts the least set is derived from. */
export interface RunFacts {
  /** The workspace (the tools' cwd), absolute. */
  readonly workspace: string;
  /** The manifest file, absolute (the built-in belt's own when none is given). */
  readonly manifestPath: string;
  /** The programs the manifest's tools start (for unconfined runs), absolute. */
  readonly programs: readonly string[];
  /** Variables the tools may receive (their passthrough names and their profiles'). */
  readonly toolEnv: readonly string[];
  /** The hosts of profiles' host lists: the egress proxy connects to them on the tools' behalf. */
  readonly egressHosts?: readonly string[];
  /** The egress proxy's Unix socket (Deno scopes one by its exact path). */
  readonly proxySocket?: string;
  /** toolgate's own code (its repository, or the bundle file) and the runtime that runs it. */
  readonly code: readonly string[];
  /** toolgate's state and config folders, and an audit folder given by hand. */
  readonly stateDirs: readonly string[];
  /** Files the run reads besides (prompt, system prompt, a transcript to resume). */
  readonly readFiles: readonly string[];
  /** Files the run writes (a transcript), each with the temporary file beside it: read and written. */
  readonly writeFiles: readonly string[];
  /** The chat endpoint's URL (the agent loop), if the run talks to one. */
  readonly endpoint?: string;
  /** The OTLP traces endpoint's URL, when the OpenTelemetry variables name one (`tracesEndpoint`). */
  readonly otlpEndpoint?: string;
  /** Where `serve --http` listens, if it does. */
  readonly listen?: { readonly hostname: string; readonly port: number };
  /** Where `--console` listens (loopback: `serve`, `run`, `worker`), if it does. */
  readonly consoleListen?: { readonly hostname: string; readonly port: number };
  /**
   * The helper programs it starts: bwrap, sh (which makes, sets and joins a call's cgroups), cat (which tells a
   * process's cgroups), kill (to signal a process group), setsid (which starts an unconfined tool in its own
   * session), and the session starter where it is built (setsid and the cgroup's shell in one).
   */
  readonly helpers: readonly string[];
  /**
   * The worker pool a run reaches (`worker`, or `--executor`): its servers (`host:port`), the credential and TLS
   * files the NATS variables name and the signing key's file, and whether the run is a worker (which names itself
   * by the host's name).
   */
  readonly pool?: {
    readonly servers: readonly string[];
    readonly files: readonly string[];
    readonly worker: boolean;
  };
}

/** The folders a sandbox probe looks at: the system folders, and the files it masks. */
const PROBED = [
  ...SYSTEM_PATHS,
  // The boot a cached probe belongs to.
  "/proc/sys/kernel/random/boot_id",
];

function hostPort(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
  return `${parsed.hostname}:${port}`;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/**
 * The least permission set for one run: read of the manifest's folder, the workspace, toolgate's own code and
 * state, the system folders the sandbox probe looks at, and the files the run reads; write of the state folder,
 * the call cgroups and the transcript only; run of the helper programs, the runtime (built-in tools) and each
 * tool's program; env of the variables toolgate reads and those the tools receive; net of the endpoint and the
 * listening address only; sys of the uid (root is confined differently).
 *
 * @example Not run as a doc test: it needs the launcher's facts about the run (launch_plan.ts's example runs it).
 * ```ts ignore
 * import { derivePermissions, toFlags } from "./own_grants.ts";
 * const flags = toFlags(derivePermissions(facts)).join(" ");
 * // "--no-prompt --allow-read=... --allow-write=/home/me/.local/state/toolgate --allow-run=/usr/bin/bwrap,..."
 * ```
 */
export function derivePermissions(facts: RunFacts): PermissionSet {
  const net: string[] = [];
  if (facts.endpoint !== undefined) net.push(hostPort(facts.endpoint));
  if (facts.otlpEndpoint !== undefined) net.push(hostPort(facts.otlpEndpoint));
  for (const listen of [facts.listen, facts.consoleListen]) {
    if (listen === undefined) continue;
    const host = listen.hostname.includes(":") ? `[${listen.hostname}]` : listen.hostname;
    // Port 0 is any free port: only the host can be named ahead.
    net.push(listen.port === 0 ? host : `${host}:${listen.port}`);
  }
  // Deno's net scope names a host (any port) or host:port, as the profiles' lists do.
  net.push(...facts.egressHosts ?? []);
  if (facts.proxySocket !== undefined) net.push(`unix:${facts.proxySocket}`);
  net.push(...facts.pool?.servers ?? []);
  return {
    read: unique([
      dirname(facts.manifestPath),
      facts.workspace,
      ...facts.code,
      ...facts.stateDirs,
      ...facts.readFiles,
      // A file is written through a temporary file renamed over it, and Deno's rename needs read of both names.
      ...facts.writeFiles,
      ...facts.pool?.files ?? [],
      ...PROBED,
    ]),
    write: unique([...facts.stateDirs, ...facts.writeFiles]),
    run: unique([
      ...facts.helpers,
      ...facts.code.filter((path) => path === Deno.execPath()),
      ...facts.programs,
    ]),
    env: unique([...OWN_ENV, ...facts.toolEnv]),
    net: unique(net),
    sys: facts.pool?.worker ? ["uid", "hostname"] : ["uid"],
  };
}

/**
 * The set as `deno run` flags, `--no-prompt` first; paths relative to `relativeTo` when given and inside it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toFlags } from "./own_grants.ts";
 * assert.deepEqual(toFlags({ read: ["/srv/p"], write: [], run: [], env: ["PATH"], net: [], sys: [] }, "/srv/p"), ["--no-prompt", "--allow-read=.", "--allow-env=PATH"]);
 * ```
 */
export function toFlags(set: PermissionSet, relativeTo?: string): string[] {
  const show = (path: string): string => {
    if (relativeTo === undefined || !isAbsolute(path)) return path;
    const rel = relative(relativeTo, path);
    if (rel === "") return ".";
    return rel.startsWith("..") || isAbsolute(rel) ? path : `./${rel}`;
  };
  const flags = ["--no-prompt"];
  for (const name of ["read", "write", "run", "env", "net", "sys"] as const) {
    const values = name === "read" || name === "write" || name === "run" ? set[name].map(show) : set[name];
    if (values.length > 0) flags.push(`--allow-${name}=${values.join(",")}`);
  }
  return flags;
}

/** A grant broader than toolgate needs. */
export interface BroadGrant {
  readonly flag: string;
  readonly why: string;
}

const UNSCOPED: [Deno.PermissionDescriptor, string, string][] = [
  [
    { name: "run" },
    "--allow-run",
    "any program may be started; toolgate needs bwrap, sh, kill, setsid, its runtime and the tools only",
  ],
  [
    { name: "read" },
    "--allow-read",
    "every file may be read; toolgate needs the manifest's folder, the workspace and its own state",
  ],
  [{ name: "write" }, "--allow-write", "every file may be written; toolgate needs its state folder only"],
  [
    { name: "env" },
    "--allow-env",
    "every variable may be read; toolgate needs its own and the tools' passthrough names",
  ],
  [
    { name: "net" },
    "--allow-net",
    "every host may be reached; toolgate needs the LLM endpoint, the worker pool's servers and the OTLP endpoint only",
  ],
  [{ name: "sys" }, "--allow-sys", "toolgate needs the uid (and a worker the host's name) only"],
  [{ name: "ffi" }, "--allow-ffi", "toolgate loads no native library"],
];

/**
 * The grants of this process that are broader than toolgate needs (`-A` shows as all of them).
 *
 * @example
 * ```ts
 * import { broadGrants } from "./own_grants.ts";
 * for (const grant of broadGrants()) console.error(`${grant.flag}: ${grant.why}`);
 * ```
 */
export function broadGrants(): BroadGrant[] {
  return UNSCOPED.filter(([descriptor]) => Deno.permissions.querySync(descriptor).state === "granted")
    .map(([, flag, why]) => ({ flag, why }));
}
