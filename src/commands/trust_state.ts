/**
 * Whether the manifest a run would use is trusted here: by definition (named by the user, the built-in belt,
 * toolgate's own), as recorded in toolgate's state, changed since, or never. `doctor` reports it.
 *
 * Not here: what trust covers and records (`../manifest/trust.ts`), the gate a run passes (`trust_gate.ts`).
 *
 * @module
 */
import { type ManifestLocation, needsTrust } from "../manifest/manifest_location.ts";
import { readManifestContent } from "../manifest/trust.ts";
import { readTrustRecord } from "../manifest/trust_record.ts";
import { stateRoot } from "../state/state.ts";

/** The trust state of a manifest ([trust](../README.md#trust)). */
export interface TrustState {
  readonly state: "trusted" | "changed" | "untrusted";
  readonly detail: string;
}

/**
 * The trust state of the manifest a run would use: trusted by definition (named by the user, the belt, toolgate's
 * own), trusted as recorded, changed since it was trusted, or never trusted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { trustOf } from "./trust_state.ts";
 * const named = await trustOf({ path: "/srv/p/tools.json", source: "tools" }, {});
 * assert.equal(named.state, "trusted");
 * ```
 */
export async function trustOf(
  location: ManifestLocation,
  env: Readonly<Record<string, string>>,
  workspace?: string,
): Promise<TrustState> {
  if (!needsTrust(location)) {
    const by = location.source === "found" ? "toolgate's own manifest" : "named by you for this run";
    return { state: "trusted", detail: location.source === "belt" ? "the built-in tool belt" : by };
  }
  const content = await readManifestContent(location.path, undefined, { workspace });
  if (content === undefined) return { state: "untrusted", detail: "it cannot be read" };
  let record;
  try {
    record = readTrustRecord(stateRoot(env), content.realPath, { strict: false });
  } catch {
    record = undefined;
  }
  if (record === undefined) {
    return { state: "untrusted", detail: "never trusted: its tools run nothing until `toolgate trust`" };
  }
  return record.digest === content.digest
    ? { state: "trusted", detail: `trusted at ${record.trustedAt}` }
    : { state: "changed", detail: "changed since it was trusted: `toolgate trust` shows what changed" };
}
