/**
 * The digests of a trusted manifest's files, kept between runs in toolgate's state folder (`<state>/trust/`,
 * hidden from every tool) so that the trust check before each command reads only the files that changed: by path,
 * each file's identity and times when it was read, settled, and the SHA-256 of its bytes then. One file per
 * manifest (named by a digest of its real path), replaced whole, so it never holds more than that manifest's files.
 *
 * @module
 */
import { dirname, join } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import { ensurePrivateDir } from "../state/private_dir.ts";
import { readPrivateText, writePrivateText } from "../state/private_file.ts";
import { fnv1a64 } from "../state/state.ts";
import type { KnownDigests } from "./file_pins.ts";
import { trustDir } from "./trust_record.ts";

const VERSION = 1;

function digestFile(stateDir: string, realPath: string): string {
  return join(trustDir(stateDir), `digests-${fnv1a64(realPath)}.json`);
}

/**
 * The digests kept for the manifest at `realPath` (empty when none are). Strict (the default): the file is used only
 * when it is this user's, 0600, one link, never a link; `strict: false` just reads it (the
 * launcher, whose trust check only narrows toolgate's own grants: the run checks again, strictly).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readKnownDigests } from "./trust_digests.ts";
 * assert.equal(readKnownDigests(await Deno.makeTempDir(), "/srv/project/tools.json").size, 0);
 * ```
 */
export function readKnownDigests(
  stateDir: string,
  realPath: string,
  options: { strict?: boolean } = {},
): KnownDigests {
  const file = digestFile(stateDir, realPath);
  let text: string | undefined;
  try {
    text = options.strict === false
      ? Deno.readTextFileSync(file)
      : readPrivateText(file, "the trust digests");
  } catch {
    // Missing, or (strict) not this user's private file: not used, and replaced by the next keep.
    return new Map();
  }
  if (text === undefined) return new Map();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return new Map();
  }
  if (!isRecord(value) || value.version !== VERSION || value.manifest !== realPath) return new Map();
  if (!isRecord(value.files)) return new Map();
  const known = new Map<string, string>();
  for (const [path, entry] of Object.entries(value.files)) {
    if (typeof entry === "string" && /^\S+ sha256:[0-9a-f]{64}$/.test(entry)) known.set(path, entry);
  }
  return known;
}

/**
 * Keeps `digests` for the manifest at `realPath` when they differ from `known` (what was read at the start); a
 * state folder that cannot take them only means the next run reads the files again.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keepDigests, readKnownDigests } from "./trust_digests.ts";
 * const state = await Deno.makeTempDir();
 * keepDigests(state, "/srv/project/tools.json", new Map(), new Map([["/srv/project/tools/bin/t", "1:2:3:4:5 sha256:" + "0".repeat(64)]]));
 * assert.equal(readKnownDigests(state, "/srv/project/tools.json").size, 1);
 * ```
 */
export function keepDigests(
  stateDir: string,
  realPath: string,
  known: KnownDigests,
  digests: KnownDigests,
): void {
  if (known.size === digests.size && [...digests].every(([path, entry]) => known.get(path) === entry)) return;
  try {
    ensurePrivateDir(trustDir(stateDir), dirname(stateDir));
    const files = Object.fromEntries([...digests].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0));
    writePrivateText(
      digestFile(stateDir, realPath),
      JSON.stringify({ version: VERSION, manifest: realPath, files }) + "\n",
    );
  } catch {
    // Not kept: the next run reads the files again.
  }
}
