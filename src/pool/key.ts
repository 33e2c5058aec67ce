/**
 * Where the pool's signing key comes from, for callers and workers alike: a file of the user's own (0600, never
 * through a link: `--pool-key-file PATH`, else `TOOLGATE_POOL_KEY_FILE`), else the secret `TOOLGATE_POOL_KEY` of
 * toolgate's secret store.
 *
 * @module
 */
import { readPrivateText } from "../state/private_file.ts";
import { secretStoreFile, StateDirError } from "../state/state.ts";
import { POOL_KEY_FILE_ENV } from "./address.ts";
import { importPoolKey, type PoolSigningKey } from "./signing.ts";

/** The secret store's name for the pool key. */
export const POOL_KEY_SECRET = "TOOLGATE_POOL_KEY";

/** How to set a pool key up, for messages. */
export const POOL_KEY_HELP =
  `store one with \`head -c 32 /dev/urandom | base64 | toolgate secrets set ${POOL_KEY_SECRET}\` on every ` +
  `caller and worker (the same value), or name a file of yours (mode 0600) with --pool-key-file PATH or ` +
  POOL_KEY_FILE_ENV;

/**
 * A pool key that cannot be used: the message names where it was looked for and what is wrong.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PoolKeyError } from "./key.ts";
 * const problem = new PoolKeyError("the pool key file /srv/pool.key does not exist");
 * assert.ok(problem instanceof Error);
 * assert.equal(problem.message, "the pool key file /srv/pool.key does not exist");
 * ```
 */
export class PoolKeyError extends Error {
  /** A pool key problem, said for a person. */
  constructor(message: string) {
    super(message);
    this.name = "PoolKeyError";
  }
}

/** The pool key, and where it came from (for messages). */
export interface PoolKey {
  readonly key: PoolSigningKey;
  readonly from: string;
}

/**
 * The pool key of a run: from `file` when one is named (see `poolKeyFile` in `address.ts`), else from the secret store;
 * `undefined` when there is none. Throws {@linkcode PoolKeyError} for a file that is missing, someone else's, open
 * to others, a link, or a key too short; `StateDirError` for a secret store that cannot be read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { join } from "../base/paths.ts";
 * import { loadPoolKey } from "./key.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(join(dir, "pool.key"), "q7M2c3Jk0vV9yXl1oPz8wE4rT6uY5iB3nH2gF1dS0aQ=\n", { mode: 0o600 });
 * assert.equal((await loadPoolKey(join(dir, "pool.key"), { HOME: dir }))?.from, `the pool key file ${dir}/pool.key`);
 * ```
 */
export async function loadPoolKey(
  file: string | undefined,
  env: Readonly<Record<string, string>>,
): Promise<PoolKey | undefined> {
  if (file !== undefined) {
    const from = `the pool key file ${file}`;
    let text: string | undefined;
    try {
      text = readPrivateText(file, "the pool key file");
    } catch (error) {
      throw new PoolKeyError(
        error instanceof StateDirError ? error.message : `cannot read ${from}: ${(error as Error).message}`,
      );
    }
    if (text === undefined) throw new PoolKeyError(`${from} does not exist`);
    return { key: await importOrSay(text, from), from };
  }
  try {
    // A look first: without a store, nothing of it is loaded.
    Deno.lstatSync(secretStoreFile(env));
  } catch {
    return undefined;
  }
  const { SecretStore } = await import("../state/secret_store.ts");
  const value = (await new SecretStore({ env }).values())[POOL_KEY_SECRET];
  if (value === undefined) return undefined;
  const from = `the secret ${POOL_KEY_SECRET}`;
  return { key: await importOrSay(value, from), from };
}

async function importOrSay(text: string, from: string): Promise<PoolSigningKey> {
  try {
    return await importPoolKey(text, from);
  } catch (error) {
    throw new PoolKeyError((error as Error).message);
  }
}
