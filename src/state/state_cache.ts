/**
 * Small caches in toolgate's state folder (`<state>/cache/NAME.json`): what is expensive to find out and depends
 * only on a key (the sandbox probe, keyed by the host and the binaries; checked schemas, keyed by the manifest's
 * bytes). A cache is a hint, never a trust boundary: an entry whose key differs is ignored, any trouble reading or
 * writing one is silent, and a write lands whole (a temporary file, then a rename) with mode 0600.
 *
 * @module
 */
import { join } from "../base/paths.ts";

/** A cached value and the key it was found for. */
interface Entry<T> {
  readonly key: string;
  readonly value: T;
}

function file(stateDir: string, name: string): string {
  return join(stateDir, "cache", `${name}.json`);
}

/**
 * The value cached under `name` for `key`, or `undefined` (none, another key, unreadable).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readCache, writeCache } from "./state_cache.ts";
 * const state = await Deno.makeTempDir();
 * writeCache(state, "probe", "host-1", { ok: true });
 * assert.deepEqual(readCache<{ ok: boolean }>(state, "probe", "host-1"), { ok: true });
 * assert.equal(readCache(state, "probe", "host-2"), undefined);
 * ```
 */
export function readCache<T>(stateDir: string, name: string, key: string): T | undefined {
  try {
    const entry = JSON.parse(Deno.readTextFileSync(file(stateDir, name))) as Entry<T>;
    return entry.key === key ? entry.value : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `path` is a folder itself, not a link to one. */
function isRealDir(path: string): boolean {
  try {
    const info = Deno.lstatSync(path);
    return info.isDirectory && !info.isSymlink;
  } catch {
    return false;
  }
}

/**
 * Caches `value` under `name` for `key`. It silently does nothing when the folder cannot be written, and it never
 * creates the state folder nor follows a link to it: a cache is not a reason to leave a trace where toolgate was
 * told to write nothing (`--no-audit`), nor to write where a link points.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readCache, writeCache } from "./state_cache.ts";
 * const state = await Deno.makeTempDir();
 * writeCache(state, "probe", "host-1", { ok: true });
 * assert.deepEqual(readCache(state, "probe", "host-1"), { ok: true });
 * assert.equal(readCache(state, "probe", "host-2"), undefined); // another key: not this entry
 * ```
 */
export function writeCache<T>(stateDir: string, name: string, key: string, value: T): void {
  const target = file(stateDir, name);
  const temp = `${target}.${Deno.pid}.tmp`;
  try {
    if (!isRealDir(stateDir)) return;
    const folder = join(stateDir, "cache");
    try {
      Deno.mkdirSync(folder, { mode: 0o700 });
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
    if (!isRealDir(folder)) return;
    Deno.writeTextFileSync(temp, JSON.stringify({ key, value } satisfies Entry<T>), {
      mode: 0o600,
      createNew: true,
    });
    Deno.renameSync(temp, target);
  } catch {
    try {
      Deno.removeSync(temp);
    } catch {
      // Nothing was written.
    }
  }
}
