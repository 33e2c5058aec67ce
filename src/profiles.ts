/**
 * Permission profiles: what a tool may touch once confined, in Deno's permission vocabulary (read, write, net,
 * env) plus resource limits. A manifest entry names one (`permissions/NAME.json` beside the manifest, or one that
 * toolgate ships) or writes one inline; a tool that says nothing gets `default`.
 *
 * @module
 */
import { join } from "node:path";
import { isRecord } from "./contract.ts";
import defaultProfile from "../permissions/default.json" with { type: "json" };
import networkProfile from "../permissions/network.json" with { type: "json" };
import noneProfile from "../permissions/none.json" with { type: "json" };
import workspaceProfile from "../permissions/workspace.json" with { type: "json" };

/**
 * Resource limits, applied with `prlimit` inside the sandbox.
 *
 * @example
 * ```ts
 * import type { ResourceLimits } from "./profiles.ts";
 * const limits: ResourceLimits = { cpuSeconds: 60, processes: 64 };
 * ```
 */
export interface ResourceLimits {
  /** CPU time, in seconds (`RLIMIT_CPU`). */
  readonly cpuSeconds?: number;
  /** The largest file the tool may write, in bytes (`RLIMIT_FSIZE`). */
  readonly fileSizeBytes?: number;
  /** The most processes (`RLIMIT_NPROC`). */
  readonly processes?: number;
}

/**
 * What a confined tool may touch.
 *
 * @example
 * ```ts
 * import { resolveProfile } from "./profiles.ts";
 * const result = resolveProfile({ write: ["out"], net: false }, "/srv/project");
 * result.ok && result.profile.read; // ["/"]: reading defaults to everything
 * ```
 */
export interface PermissionProfile {
  /** The profile's name, or `inline`. */
  readonly name: string;
  /** Paths visible read-only; `/` (the default) means the whole filesystem. */
  readonly read: readonly string[];
  /** Paths the tool may write, relative ones against its working directory. */
  readonly write: readonly string[];
  /** No network, all of it, or (not enforceable by the sandbox, so treated as all of it) named hosts. */
  readonly net: boolean | readonly string[];
  /** Variables passed to the tool, added to its envPassthrough. */
  readonly env: readonly string[];
  /** Resource limits, applied inside the sandbox. */
  readonly limits: ResourceLimits;
}

/** The profiles toolgate ships; `permissions/NAME.json` beside a manifest overrides one of the same name. */
export const BUILTIN_PROFILES: Readonly<Record<string, unknown>> = {
  default: defaultProfile,
  none: noneProfile,
  workspace: workspaceProfile,
  network: networkProfile,
};

const PROFILE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const PROFILE_FIELDS = new Set(["description", "read", "write", "net", "env", "limits"]);
const LIMIT_FIELDS = new Set(["cpuSeconds", "fileSizeBytes", "processes"]);

/** A profile, or the reasons it is not one. */
export type ProfileResult = { ok: true; profile: PermissionProfile } | { ok: false; errors: string[] };

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
  const read = value.read === undefined ? ["/"] : stringList(value.read, "read", errors);
  const write = stringList(value.write, "write", errors);
  let net: boolean | string[] = false;
  if (typeof value.net === "boolean") net = value.net;
  else if (Array.isArray(value.net) && value.net.every((h) => typeof h === "string" && h.trim() !== "")) {
    net = value.net.length === 0 ? false : value.net as string[];
  } else if (value.net !== undefined) {
    errors.push("permissions.net must be false, true, or an array of host names");
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
  const limits: Record<string, number> = {};
  if (value.limits !== undefined) {
    if (!isRecord(value.limits)) errors.push("permissions.limits must be an object");
    else {
      for (const [key, limit] of Object.entries(value.limits)) {
        if (!LIMIT_FIELDS.has(key)) errors.push(`permissions.limits: unknown field ${JSON.stringify(key)}`);
        else if (typeof limit !== "number" || !Number.isInteger(limit) || limit <= 0) {
          errors.push(`permissions.limits.${key} must be a positive integer`);
        } else limits[key] = limit;
      }
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, profile: Object.freeze({ name, read, write, net, env, limits: Object.freeze(limits) }) };
}

/**
 * Resolves a manifest entry's `permissions` (a name, an inline object, or absent) against `manifestDir`.
 *
 * @example
 * ```ts
 * import { resolveProfile } from "./profiles.ts";
 * const result = resolveProfile("none", "/srv/project"); // a profile file there wins over the built-in one
 * result.ok && result.profile.net; // false
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
  if (Object.hasOwn(BUILTIN_PROFILES, value)) return parseProfile(BUILTIN_PROFILES[value], value);
  return {
    ok: false,
    errors: [`permissions: unknown profile ${JSON.stringify(value)} (no permissions/${value}.json)`],
  };
}

/**
 * Does the profile let the tool reach the network?
 *
 * @example
 * ```ts
 * import { allowsNetwork, resolveProfile } from "./profiles.ts";
 * const result = resolveProfile("network", "/srv/project");
 * result.ok && allowsNetwork(result.profile); // true
 * ```
 */
export function allowsNetwork(profile: PermissionProfile): boolean {
  return profile.net !== false;
}
