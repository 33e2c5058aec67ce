/**
 * What doctor says of confinement here: whether user namespaces can be made, and what each profile the manifest
 * uses will get (confined, unconfined or refused). Read by the setup report (`setup_report.ts`).
 *
 * @module
 */
import { hasSideEffects, type PermissionProfile } from "../manifest/profiles.ts";
import type { SandboxMode, SandboxSupport } from "../sandbox/sandbox.ts";
import type { ProfileOutlook } from "./setup_report.ts";

/**
 * Whether user namespaces can be made, when bwrap could not tell: `user.max_user_namespaces` above 0 (`null` when
 * it cannot be read).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { userNamespacesAllowed } from "./profile_outlook.ts";
 * assert.ok([true, false, null].includes(userNamespacesAllowed())); // null where the sysctl cannot be read
 * ```
 */
export function userNamespacesAllowed(): boolean | null {
  try {
    return Number(Deno.readTextFileSync(USERNS_SYSCTL).trim()) > 0;
  } catch {
    return null;
  }
}

/** The sysctl that says how many user namespaces may be made (the launcher grants doctor its read). */
export const USERNS_SYSCTL = "/proc/sys/user/max_user_namespaces";

/**
 * What one profile gets here, given the sandbox support and the mode.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { outlook } from "./profile_outlook.ts";
 * import { BUILTIN_PROFILES, parseProfile } from "../manifest/profiles.ts";
 * const none = parseProfile(BUILTIN_PROFILES.none, "none");
 * assert.ok(none.ok);
 * assert.equal(outlook(none.profile, { ok: false, reason: "no bwrap" }, "auto"), "unconfined");
 * ```
 */
export function outlook(
  profile: PermissionProfile,
  support: SandboxSupport,
  mode: SandboxMode,
): ProfileOutlook["runs"] {
  if (mode === "off") return "unconfined";
  if (support.ok) return "confined";
  if (mode === "require" || hasSideEffects(profile)) return "refused";
  return "unconfined";
}

/**
 * A profile in a few words: what it writes and where it may reach.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeProfile } from "./profile_outlook.ts";
 * import { BUILTIN_PROFILES, parseProfile } from "../manifest/profiles.ts";
 * const none = parseProfile(BUILTIN_PROFILES.none, "none");
 * assert.ok(none.ok);
 * assert.equal(describeProfile(none.profile), "writes nothing; no network");
 * ```
 */
export function describeProfile(profile: PermissionProfile): string {
  const writes = profile.write.length === 0 ? "writes nothing" : `writes ${profile.write.join(", ")}`;
  const net = profile.net === false
    ? "no network"
    : profile.net === true
    ? "any host"
    : `only ${profile.net.join(", ")} (egress proxy)`;
  return `${writes}; ${net}`;
}
