/**
 * Permission profiles: what a tool may touch once confined, in Deno's permission vocabulary (read, write, net,
 * env) plus resource limits. A manifest entry names one (a shipped one, or `permissions/NAME.json` beside the
 * manifest for any other name) or writes one inline; a tool that says nothing gets `default`.
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import defaultProfile from "../../permissions/default.json" with { type: "json" };
import networkProfile from "../../permissions/network.json" with { type: "json" };
import noneProfile from "../../permissions/none.json" with { type: "json" };
import workspaceProfile from "../../permissions/workspace.json" with { type: "json" };
import { visibleToken } from "../base/text.ts";

/**
 * Resource limits of a confined call: `prlimit` inside the sandbox, and a cgroup around it where one can be made.
 *
 * @example
 * ```ts
 * import type { ResourceLimits } from "./profiles.ts";
 * import { DEFAULT_LIMITS } from "./profiles.ts";
 * const limits: ResourceLimits = { ...DEFAULT_LIMITS, processes: 64, memoryBytes: 512 * 1024 * 1024 };
 * ```
 */
export interface ResourceLimits {
  /** CPU time, in seconds (`RLIMIT_CPU`). */
  readonly cpuSeconds: number;
  /** The largest file the tool may write, in bytes (`RLIMIT_FSIZE`). */
  readonly fileSizeBytes: number;
  /** The most processes of the call's tree (a pids cgroup; `RLIMIT_NPROC` where the kernel applies it). */
  readonly processes: number;
  /** The most memory of the call's tree (a memory cgroup; else `RLIMIT_DATA` per process). */
  readonly memoryBytes: number;
  /** The size of each private tmpfs (`/tmp`, `/dev/shm`). */
  readonly tmpfsBytes: number;
}

/**
 * The limits of a profile that sets none, or leaves some out: every confined call has all five.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DEFAULT_LIMITS } from "./profiles.ts";
 * assert.equal(DEFAULT_LIMITS.tmpfsBytes, 268435456); // 256 MiB
 * ```
 */
export const DEFAULT_LIMITS: ResourceLimits = Object.freeze({
  cpuSeconds: 300,
  fileSizeBytes: 1024 * 1024 * 1024,
  processes: 256,
  memoryBytes: 2 * 1024 * 1024 * 1024,
  tmpfsBytes: 256 * 1024 * 1024,
});

/**
 * What a confined tool may touch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveProfile } from "./profiles.ts";
 * const result = resolveProfile({ write: ["out"], net: false }, "/srv/project");
 * assert.ok(result.ok);
 * assert.deepEqual(result.profile.read, []); // nothing besides what every tool sees
 * ```
 */
export interface PermissionProfile {
  /** The profile's name, or `inline`. */
  readonly name: string;
  /**
   * Paths visible read-only besides what every tool sees (the system folders, the workspace, its own files);
   * relative ones against the working directory. `/` shows the whole filesystem.
   */
  readonly read: readonly string[];
  /** Paths the tool may write, relative ones against its working directory. */
  readonly write: readonly string[];
  /** No network, all of it, or named hosts. */
  readonly net: boolean | readonly string[];
  /** Variables passed to the tool, added to its envPassthrough. */
  readonly env: readonly string[];
  /** Resource limits, applied inside the sandbox. */
  readonly limits: ResourceLimits;
}

/**
 * The profiles toolgate ships. Their names are reserved: a `permissions/NAME.json` of the same name beside a
 * manifest is ignored (with a warning), so that a file a tool manages to plant there can never widen them.
 */
export const BUILTIN_PROFILES: Readonly<Record<string, unknown>> = {
  default: defaultProfile,
  none: noneProfile,
  workspace: workspaceProfile,
  network: networkProfile,
};

const PROFILE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** One host of a profile's list: a name or an IP literal, with a port or not. */
const HOST_ENTRY = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)(:\d{1,5})?$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const PROFILE_FIELDS = new Set(["description", "read", "write", "net", "env", "limits"]);
const LIMIT_FIELDS = new Set(Object.keys(DEFAULT_LIMITS));
/** Below this, a tmpfs or a memory limit leaves a program no room to start. */
const MIN_BYTES = 1024 * 1024;

/** A profile, or the reasons it is not one; `warning` when a file was passed over. */
export type ProfileResult = { ok: true; profile: PermissionProfile; warning?: string } | {
  ok: false;
  errors: string[];
};

function stringList(value: unknown, field: string, errors: string[]): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || v === "" || v.includes("\0"))) {
    errors.push(`permissions.${field} must be an array of non-empty paths`);
    return [];
  }
  return value as string[];
}

/** Checks a profile's JSON; error messages start at `permissions`, for the manifest's `tool[i] "NAME": ` prefix. */
export function parseProfile(value: unknown, name: string): ProfileResult {
  if (!isRecord(value)) return { ok: false, errors: ["permissions must be a profile name or an object"] };
  const errors: string[] = [];
  for (const key of Object.keys(value)) {
    if (!PROFILE_FIELDS.has(key)) errors.push(`permissions: unknown field ${JSON.stringify(key)}`);
  }
  const read = stringList(value.read, "read", errors);
  const write = stringList(value.write, "write", errors);
  let net: boolean | string[] = false;
  if (typeof value.net === "boolean") net = value.net;
  else if (Array.isArray(value.net) && value.net.every((h) => typeof h === "string" && HOST_ENTRY.test(h))) {
    net = value.net.length === 0 ? false : value.net.map((h: string) => h.toLowerCase());
  } else if (value.net !== undefined) {
    errors.push(
      'permissions.net must be false, true, or an array of hosts ("api.example.com", "api.example.com:443", ' +
        '"[::1]:8080"): each one exactly, no wildcard, no scheme',
    );
  }
  const env: string[] = [];
  for (const [j, entry] of (Array.isArray(value.env) ? value.env : []).entries()) {
    const upper = typeof entry === "string" ? entry.trim().toUpperCase() : "";
    if (!ENV_NAME.test(upper)) {
      errors.push(
        `permissions.env[${j}]: invalid name ${JSON.stringify(entry)} (must match [A-Z_][A-Z0-9_]*)`,
      );
    } else if (!env.includes(upper)) env.push(upper);
  }
  if (value.env !== undefined && !Array.isArray(value.env)) {
    errors.push("permissions.env must be an array of names");
  }
  const limits: Record<string, number> = { ...DEFAULT_LIMITS };
  if (value.limits !== undefined) {
    if (!isRecord(value.limits)) errors.push("permissions.limits must be an object");
    else {
      for (const [key, limit] of Object.entries(value.limits)) {
        if (!LIMIT_FIELDS.has(key)) errors.push(`permissions.limits: unknown field ${JSON.stringify(key)}`);
        else if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit <= 0) {
          errors.push(`permissions.limits.${key} must be a positive integer`);
        } else if ((key === "memoryBytes" || key === "tmpfsBytes") && limit < MIN_BYTES) {
          errors.push(`permissions.limits.${key} must be at least ${MIN_BYTES} (1 MiB)`);
        } else limits[key] = limit;
      }
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  const frozenLimits = Object.freeze(limits) as unknown as ResourceLimits;
  return { ok: true, profile: Object.freeze({ name, read, write, net, env, limits: frozenLimits }) };
}

/**
 * The profile a manifest entry names: its `permissions`, else `none` for a tool that declares itself
 * `readOnly` (its own word, held by the sandbox: it writes nowhere and reaches no network), else `default`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { declaredProfile } from "./profiles.ts";
 * assert.equal(declaredProfile({ readOnly: true }), "none");
 * assert.equal(declaredProfile({ permissions: "network", readOnly: true }), "network");
 * assert.equal(declaredProfile({}), "default");
 * ```
 */
export function declaredProfile(entry: Readonly<Record<string, unknown>>): unknown {
  if (entry.permissions !== undefined) return entry.permissions;
  return entry.readOnly === true ? "none" : "default";
}

/**
 * Resolves a manifest entry's `permissions` (a name, an inline object, or absent) against `manifestDir`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveProfile } from "./profiles.ts";
 * const result = resolveProfile("none", "/srv/project"); // a profile file there wins over the built-in one
 * assert.ok(result.ok);
 * assert.equal(result.profile.net, false);
 * ```
 */
export function resolveProfile(
  value: unknown,
  manifestDir: string,
  cache: Map<string, ProfileResult> = new Map(),
): ProfileResult {
  if (value === undefined) return resolveProfile("default", manifestDir, cache);
  if (isRecord(value)) return parseProfile(value, "inline");
  if (typeof value !== "string" || !PROFILE_NAME.test(value)) {
    return { ok: false, errors: ["permissions must be a profile name or an object"] };
  }
  const cached = cache.get(value);
  if (cached) return cached;
  const result = loadNamedProfile(value, manifestDir);
  cache.set(value, result);
  return result;
}

function loadNamedProfile(value: string, manifestDir: string): ProfileResult {
  const file = join(manifestDir, "permissions", `${value}.json`);
  let text: string | undefined;
  try {
    text = Deno.readTextFileSync(file);
  } catch {
    text = undefined;
  }
  if (Object.hasOwn(BUILTIN_PROFILES, value)) {
    const builtin = parseProfile(BUILTIN_PROFILES[value], value);
    if (text === undefined || !builtin.ok || sameJson(text, BUILTIN_PROFILES[value])) return builtin;
    return {
      ...builtin,
      warning: `permissions: ${file} is ignored: "${value}" is a shipped profile and cannot be redefined ` +
        `(give yours another name)`,
    };
  }
  if (text !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      return { ok: false, errors: [`permissions: ${file}: ${(error as Error).message}`] };
    }
    const result = parseProfile(parsed, value);
    return result.ok ? result : { ok: false, errors: result.errors.map((e) => `${e} (in ${file})`) };
  }
  return {
    ok: false,
    errors: [`permissions: unknown profile ${JSON.stringify(value)} (no permissions/${value}.json)`],
  };
}

/** Is `text` the JSON of `value` (the shipped profile files themselves, beside toolgate's own manifest)? */
function sameJson(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}

/**
 * Does the profile let the tool reach the network?
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { allowsNetwork, resolveProfile } from "./profiles.ts";
 * const result = resolveProfile("network", "/srv/project");
 * assert.ok(result.ok && allowsNetwork(result.profile));
 * ```
 */
export function allowsNetwork(profile: Pick<PermissionProfile, "net">): boolean {
  return profile.net !== false;
}

/**
 * Can a tool with this profile change anything or send anything off the machine? (Its private /tmp does not
 * count: it is gone when the call ends.)
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hasSideEffects, resolveProfile } from "./profiles.ts";
 * const none = resolveProfile("none", "/srv/project");
 * assert.ok(none.ok);
 * assert.equal(hasSideEffects(none.profile), false);
 * ```
 */
export function hasSideEffects(profile: PermissionProfile): boolean {
  return profile.write.length > 0 || allowsNetwork(profile);
}

/**
 * What a profile lets a tool write and reach, in a few words.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { reachOf } from "./profiles.ts";
 * import { resolveProfile } from "./profiles.ts";
 * const none = resolveProfile("none", "/srv/project");
 * assert.equal(none.ok && reachOf(none.profile), "writes nothing; no network");
 * ```
 */
export function reachOf(profile: PermissionProfile): string {
  const writes = profile.write.length === 0
    ? "writes nothing"
    : `writes ${profile.write.map(visibleToken).join(", ")}`;
  const net = profile.net === false
    ? "no network"
    : profile.net === true
    ? "any host"
    : `hosts ${profile.net.map(visibleToken).join(", ")}`;
  return `${writes}; ${net}`;
}
