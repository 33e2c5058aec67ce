/**
 * The user's records of trusted manifests, in toolgate's state folder (`<state>/trust/`, hidden from every tool):
 * one file per manifest, named by a digest of its real path, written whole, read only when it is this user's and
 * nobody else's.
 *
 * @module
 */
import { dirname, join } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import { ensurePrivateDir } from "../state/private_dir.ts";
import { readPrivateText, writePrivateText } from "../state/private_file.ts";
import { fnv1a64 } from "../state/state.ts";
import { type ManifestContent, TRUST_VERSION, type TrustSummary } from "./trust.ts";

/** The user's record that they trusted a manifest's content. */
export interface TrustRecord {
  readonly version: number;
  /** The manifest's real path. */
  readonly manifest: string;
  readonly digest: string;
  /** When it was trusted (ISO 8601). */
  readonly trustedAt: string;
  readonly summary: TrustSummary;
}

/** The folder of trust records in toolgate's state folder. */
export function trustDir(stateDir: string): string {
  return join(stateDir, "trust");
}

function recordFile(stateDir: string, realPath: string): string {
  return join(trustDir(stateDir), `${fnv1a64(realPath)}.json`);
}

function asRecord(text: string | undefined, realPath: string): TrustRecord | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || value.version !== TRUST_VERSION || value.manifest !== realPath) return undefined;
  if (typeof value.digest !== "string" || !isRecord(value.summary)) return undefined;
  return value as unknown as TrustRecord;
}

/**
 * The record of the manifest at `realPath`, or `undefined` when it was never trusted. Strict (the default): the
 * file must be this user's, 0600, one link, never a link (a `StateDirError` says what is wrong); `strict: false`
 * just reads it (the launcher, which holds no uid grant, and whose reading only narrows toolgate's own grants).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readTrustRecord } from "./trust_record.ts";
 * assert.equal(readTrustRecord(await Deno.makeTempDir(), "/srv/project/tools.json"), undefined); // never trusted
 * ```
 */
export function readTrustRecord(
  stateDir: string,
  realPath: string,
  options: { strict?: boolean } = {},
): TrustRecord | undefined {
  const file = recordFile(stateDir, realPath);
  if (options.strict === false) {
    try {
      return asRecord(Deno.readTextFileSync(file), realPath);
    } catch {
      return undefined;
    }
  }
  return asRecord(readPrivateText(file, "the trust record"), realPath);
}

/**
 * Records that the user trusts `content`, replacing any earlier record of the same manifest.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readManifestContent } from "./trust.ts";
 * import { readTrustRecord, writeTrustRecord } from "./trust_record.ts";
 * const content = await readManifestContent("tools.json");
 * assert.ok(content);
 * const state = await Deno.makeTempDir();
 * writeTrustRecord(state, content, new Date());
 * assert.equal(readTrustRecord(state, content.realPath)?.digest, content.digest);
 * ```
 */
export function writeTrustRecord(stateDir: string, content: ManifestContent, now: Date): TrustRecord {
  const record: TrustRecord = {
    version: TRUST_VERSION,
    manifest: content.realPath,
    digest: content.digest,
    trustedAt: now.toISOString(),
    summary: content.summary,
  };
  ensurePrivateDir(trustDir(stateDir), dirname(stateDir));
  writePrivateText(recordFile(stateDir, content.realPath), JSON.stringify(record, null, 2) + "\n");
  return record;
}

/**
 * Forgets the record of the manifest at `realPath`; whether there was one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { forgetTrust } from "./trust_record.ts";
 * assert.equal(forgetTrust(await Deno.makeTempDir(), "/srv/project/tools.json"), false);
 * ```
 */
export function forgetTrust(stateDir: string, realPath: string): boolean {
  try {
    Deno.removeSync(recordFile(stateDir, realPath));
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
