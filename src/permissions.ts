/**
 * toolgate's own Deno permissions: the least set that lets it run a manifest (derived, like a lockfile), and a
 * look at what it was actually granted, so that a broader grant shows (or, locked, refuses to start).
 *
 * @module
 */
import { isAbsolute, relative } from "node:path";
import type { Manifest } from "./manifest.ts";
import { stateRoot } from "./state.ts";

/** Variables toolgate itself reads. */
export const OWN_ENV = [
  "PATH",
  "HOME",
  "XDG_STATE_HOME",
  "XDG_CONFIG_HOME",
  "TOOLGATE_TOOLS",
  "TOOLGATE_SANDBOX",
  "TOOLGATE_REDACT",
  "TOOLGATE_MCP_TOKEN",
  "OAI_BASE_URL",
  "OAI_MODEL",
  "OAI_API_KEY",
  "OPENAI_API_KEY",
  "OAI_HTTP_TIMEOUT",
  "OAI_HTTP_RETRIES",
] as const;

/** The default chat-completions endpoint, when neither `--base-url` nor `OAI_BASE_URL` says otherwise. */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1";

/**
 * The state folder as the kept set writes it, for `deno task`, which expands `$HOME` (and nothing like
 * `${XDG_STATE_HOME:-...}`): the XDG default. A user who sets `XDG_STATE_HOME` prints a set of their own with
 * `toolgate permissions`, which reads the environment.
 */
export const KEPT_STATE_ROOT = "$HOME/.local/state/toolgate";

/** A permission set in Deno's vocabulary; lists are scopes, `true` is unscoped (never produced here). */
export interface PermissionSet {
  read: string[];
  write: string[];
  run: string[];
  env: string[];
  net: string[];
}

/** What the set is derived from. */
export interface DeriveOptions {
  readonly manifest: Manifest;
  /** Paths are written relative to this folder when inside it (for `deno.json` tasks), else absolute. */
  readonly relativeTo?: string;
  /** The LLM endpoint the agent loop talks to. */
  readonly baseUrl?: string;
  /**
   * The environment that places toolgate's state folder (`stateRoot(env)`, absolute). Without it, the folder is
   * written {@linkcode KEPT_STATE_ROOT}, for the static set a `deno.json` task holds.
   */
  readonly env?: Readonly<Record<string, string>>;
}

function hostPort(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
  return `${parsed.hostname}:${port}`;
}

/**
 * The least permission set for running `manifest`: read of the manifest's folder (the manifest, its tools/bin,
 * its profiles), of the working directory and of toolgate's state folder (where the audit log and its key live,
 * checked before use); write of the state folder only; run of bubblewrap, of `kill`
 * (to end a process group without an unscoped --allow-run) and of each tool's program (for unconfined runs);
 * env of the variables toolgate reads and the tools' passthrough names; net of the endpoint's host:port only.
 *
 * @example
 * ```ts
 * import { derivePermissions, toFlags } from "./permissions.ts";
 * // toFlags(derivePermissions({ manifest, relativeTo: Deno.cwd() })).join(" ")
 * ```
 */
export function derivePermissions(options: DeriveOptions): PermissionSet {
  const { manifest } = options;
  const show = (path: string): string => {
    if (options.relativeTo === undefined) return path;
    const rel = relative(options.relativeTo, path);
    if (rel === "") return ".";
    return rel.startsWith("..") || isAbsolute(rel) ? path : `./${rel}`;
  };
  const programs = [...new Set(manifest.tools.map((tool) => show(tool.program)))];
  const passthrough = manifest.tools.flatMap((tool) => tool.envPassthrough);
  // Absolute, never shown relative: the state folder is the user's, wherever the task runs.
  const state = options.env === undefined ? KEPT_STATE_ROOT : stateRoot(options.env);
  return {
    read: [...new Set([show(manifest.dir), ".", state])],
    write: [state],
    run: ["bwrap", "kill", ...programs],
    env: [...new Set([...OWN_ENV, ...passthrough])],
    net: [hostPort(options.baseUrl ?? DEFAULT_BASE_URL)],
  };
}

/** The set as `deno run` flags, `--no-prompt` first. */
export function toFlags(set: PermissionSet): string[] {
  const flags = ["--no-prompt"];
  for (const name of ["read", "write", "run", "env", "net"] as const) {
    if (set[name].length > 0) flags.push(`--allow-${name}=${set[name].join(",")}`);
  }
  return flags;
}

/** The set as a `permissions` entry of `deno.json` (used with `deno run -P=toolgate`). */
export function toDenoJson(set: PermissionSet): { permissions: { toolgate: PermissionSet } } {
  return { permissions: { toolgate: set } };
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
    "any program may be started; toolgate needs bwrap, kill and the tools only",
  ],
  [
    { name: "read" },
    "--allow-read",
    "every file may be read; toolgate needs the manifest's folder, the cwd and its state folder",
  ],
  [{ name: "write" }, "--allow-write", "every file may be written; toolgate needs its state folder only"],
  [
    { name: "env" },
    "--allow-env",
    "every variable may be read; toolgate needs its own and the passthrough names",
  ],
  [{ name: "net" }, "--allow-net", "every host may be reached; toolgate needs the LLM endpoint only"],
  [{ name: "sys" }, "--allow-sys", "toolgate needs no system information"],
  [{ name: "ffi" }, "--allow-ffi", "toolgate loads no native library"],
];

/**
 * The grants of this process that are broader than toolgate needs (`-A` shows as all of them).
 *
 * @example
 * ```ts
 * import { broadGrants } from "./permissions.ts";
 * for (const grant of broadGrants()) console.error(`${grant.flag}: ${grant.why}`);
 * ```
 */
export function broadGrants(): BroadGrant[] {
  return UNSCOPED.filter(([descriptor]) => Deno.permissions.querySync(descriptor).state === "granted")
    .map(([, flag, why]) => ({ flag, why }));
}
