/**
 * The secret store: values a person gave toolgate (`toolgate secrets set`, `store_secret`) for the tools that
 * declare them, kept outside every workspace in `<config>/secrets.json` (0600, in a 0700 folder, never through a
 * link), each value encrypted at rest with AES-256-GCM (Web Crypto) and bound to its name. The key is not beside
 * the file: it lives in the desktop keyring through `secret-tool` where there is one, else in a key file in the
 * state folder (`<state>/secrets.key`, 0600), another folder than the store's.
 *
 * @module
 */
import { ENV_NAME_PATTERN } from "../base/env_name.ts";
import { dirname, join } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import { ensurePrivateDir } from "./private_dir.ts";
import { readOrMakeKey, readPrivateText, writePrivateText } from "./private_file.ts";
import { findProgram } from "../base/find_program.ts";
import { configRoot, secretStoreFile, StateDirError, stateRoot } from "./state.ts";

/** Where the key of a store lives: the desktop keyring (`secret-tool`), or a key file in the state folder. */
export type KeySource = "keyring" | "file";

/** One stored secret as `toolgate secrets list` shows it: its name and when it was set, never its value. */
export interface StoredSecret {
  readonly name: string;
  /** ISO 8601, UTC. */
  readonly setAt: string;
}

/** The attributes the key is stored under in the desktop keyring. */
const KEYRING_ATTRIBUTES: readonly string[] = ["service", "toolgate", "key", "secret-store"];

const KEY_BYTES = 32;
const IV_BYTES = 12;
const FORMAT_VERSION = 1;

/** One encrypted entry of the file. */
interface Entry {
  readonly set: string;
  readonly iv: string;
  readonly data: string;
}

/** The file's content. */
interface StoreFile {
  readonly version: number;
  readonly key: KeySource;
  readonly secrets: Record<string, Entry>;
}

/** How a {@linkcode SecretStore} finds its files and its key. */
export interface SecretStoreOptions {
  /** The environment that places the config and state folders (and PATH, where `secret-tool` is looked for). */
  readonly env: Readonly<Record<string, string>>;
  /** The `secret-tool` program, or `null` for none (default: looked for on the environment's PATH). */
  readonly keyring?: string | null;
}

const toBase64 = (bytes: Uint8Array): string => bytes.toBase64();
const fromBase64 = (text: string): Uint8Array<ArrayBuffer> => Uint8Array.fromBase64(text);

/** Binds a value to its name: an entry moved under another name does not decrypt. */
const boundTo = (name: string): Uint8Array<ArrayBuffer> =>
  new TextEncoder().encode(`toolgate-secret:${name}`);

/**
 * Checks a secret's name; throws a `SyntaxError` naming it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkSecretName } from "./secret_store.ts";
 * assert.equal(checkSecretName("GITHUB_TOKEN"), "GITHUB_TOKEN");
 * ```
 */
export function checkSecretName(name: string): string {
  if (!ENV_NAME_PATTERN.test(name)) {
    throw new SyntaxError(`invalid secret name ${JSON.stringify(name)} (must match [A-Z_][A-Z0-9_]*)`);
  }
  return name;
}

/**
 * toolgate's secret store.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SecretStore } from "./secret_store.ts";
 * const home = await Deno.makeTempDir(); // your HOME: ~/.config/toolgate/secrets.json, ~/.local/state/toolgate
 * const store = new SecretStore({ env: { HOME: home }, keyring: null });
 * await store.set("GITHUB_TOKEN", "ghp_example");
 * assert.deepEqual(store.list().map((entry) => entry.name), ["GITHUB_TOKEN"]);
 * assert.deepEqual(await store.values(), { GITHUB_TOKEN: "ghp_example" });
 * ```
 */
export class SecretStore {
  /** The store file: `<config>/secrets.json`. */
  readonly path: string;
  /** The key file, used where there is no keyring: `<state>/secrets.key`. */
  readonly keyPath: string;
  readonly #keyring: string | undefined;
  readonly #configRoot: string;
  readonly #stateRoot: string;
  #key?: Promise<CryptoKey>;

  /** Throws {@linkcode StateDirError} when neither XDG folder nor HOME places toolgate's folders. */
  constructor(options: SecretStoreOptions) {
    this.#configRoot = configRoot(options.env);
    this.#stateRoot = stateRoot(options.env);
    this.path = secretStoreFile(options.env);
    this.keyPath = join(this.#stateRoot, "secrets.key");
    this.#keyring = options.keyring === null
      ? undefined
      : options.keyring ?? findProgram("secret-tool", options.env.PATH ?? "/usr/local/bin:/usr/bin:/bin");
  }

  /** Whether the store file exists (nothing is read, no key is asked for). */
  exists(): boolean {
    try {
      Deno.lstatSync(this.path);
      return true;
    } catch {
      return false;
    }
  }

  /** The stored names and when each was set, by name; no key is needed. */
  list(): StoredSecret[] {
    const file = this.#read();
    if (file === undefined) return [];
    return Object.entries(file.secrets).map(([name, entry]) => ({ name, setAt: entry.set }))
      .sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  }

  /** Where the key of this store lives (or would, for a store not made yet). */
  keySource(): KeySource {
    return this.#read()?.key ?? (this.#keyring !== undefined ? "keyring" : "file");
  }

  /** Every stored value, decrypted, by name. Throws {@linkcode StateDirError} when one cannot be decrypted. */
  async values(): Promise<Record<string, string>> {
    const file = this.#read();
    if (file === undefined || Object.keys(file.secrets).length === 0) return {};
    const key = await this.#cryptoKey(file.key);
    const out: Record<string, string> = {};
    for (const [name, entry] of Object.entries(file.secrets)) {
      try {
        const plain = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: fromBase64(entry.iv), additionalData: boundTo(name) },
          key,
          fromBase64(entry.data),
        );
        out[name] = new TextDecoder().decode(plain);
      } catch {
        throw new StateDirError(
          `the secret ${name} in ${this.path} does not decrypt with its key (${
            file.key === "keyring" ? "from the desktop keyring" : this.keyPath
          }): the key changed or the file was altered; set it again (toolgate secrets set ${name})`,
        );
      }
    }
    return out;
  }

  /** Stores `value` under `name` (replacing any earlier one), encrypted. */
  async set(name: string, value: string, now: Date = new Date()): Promise<void> {
    checkSecretName(name);
    const file = this.#read() ?? { version: FORMAT_VERSION, key: await this.#newKeySource(), secrets: {} };
    const key = await this.#cryptoKey(file.key);
    const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
    const data = new Uint8Array(
      await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: boundTo(name) },
        key,
        new TextEncoder().encode(value),
      ),
    );
    const entry: Entry = { set: now.toISOString(), iv: toBase64(iv), data: toBase64(data) };
    this.#write({ ...file, secrets: { ...file.secrets, [name]: entry } });
  }

  /** Removes `name`; false when it was not stored. */
  remove(name: string): boolean {
    const file = this.#read();
    if (file === undefined || !Object.hasOwn(file.secrets, name)) return false;
    const secrets = { ...file.secrets };
    delete secrets[name];
    this.#write({ ...file, secrets });
    return true;
  }

  #read(): StoreFile | undefined {
    let text: string | undefined;
    try {
      // The folder is checked before the file is opened: a link or a folder open to others is refused.
      if (this.exists()) ensurePrivateDir(this.#configRoot, dirname(this.#configRoot));
      text = readPrivateText(this.path, "the secret store");
    } catch (error) {
      if (error instanceof StateDirError) throw error;
      throw new StateDirError(`cannot read the secret store ${this.path}: ${(error as Error).message}`);
    }
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new StateDirError(
        `the secret store ${this.path} is not JSON (remove it and set the secrets again)`,
      );
    }
    if (
      !isRecord(value) || value.version !== FORMAT_VERSION ||
      (value.key !== "keyring" && value.key !== "file") ||
      !isRecord(value.secrets) ||
      !Object.entries(value.secrets).every(([name, entry]) =>
        ENV_NAME_PATTERN.test(name) && isRecord(entry) && typeof entry.set === "string" &&
        typeof entry.iv === "string" && typeof entry.data === "string"
      )
    ) {
      throw new StateDirError(
        `the secret store ${this.path} is not one toolgate wrote (remove it and set the secrets again)`,
      );
    }
    return value as unknown as StoreFile;
  }

  #write(file: StoreFile): void {
    try {
      ensurePrivateDir(this.#configRoot, dirname(this.#configRoot));
      writePrivateText(this.path, JSON.stringify(file, null, 2) + "\n");
    } catch (error) {
      if (error instanceof StateDirError) throw error;
      throw new StateDirError(`cannot write the secret store ${this.path}: ${(error as Error).message}`);
    }
  }

  /** The key source of a new store: the keyring when `secret-tool` can store a key there, else a key file. */
  async #newKeySource(): Promise<KeySource> {
    if (this.#keyring === undefined) return "file";
    try {
      if (await this.#keyringLookup() !== undefined) return "keyring";
      const key = crypto.getRandomValues(new Uint8Array(KEY_BYTES));
      await this.#keyringRun(
        ["store", "--label=toolgate secret store key", ...KEYRING_ATTRIBUTES],
        toBase64(key),
      );
      return await this.#keyringLookup() !== undefined ? "keyring" : "file";
    } catch {
      // No keyring session (no D-Bus, locked, refused): the key file it is, and the README says what guards it.
      return "file";
    }
  }

  #cryptoKey(source: KeySource): Promise<CryptoKey> {
    return this.#key ??= (async () => {
      let raw: Uint8Array;
      if (source === "keyring") {
        let found: Uint8Array | undefined;
        try {
          found = this.#keyring === undefined ? undefined : await this.#keyringLookup();
        } catch (error) {
          throw new StateDirError(
            `the secret store's key is in the desktop keyring, and secret-tool cannot give it: ${
              (error as Error).message
            }`,
          );
        }
        if (found === undefined) {
          throw new StateDirError(
            `the secret store's key is in the desktop keyring, which has none now${
              this.#keyring === undefined ? " (secret-tool is not on PATH)" : ""
            }; remove ${this.path} and set the secrets again`,
          );
        }
        raw = found;
      } else {
        ensurePrivateDir(this.#stateRoot, dirname(this.#stateRoot));
        raw = readOrMakeKey(this.keyPath, KEY_BYTES, "the secret store's key");
      }
      return await crypto.subtle.importKey("raw", raw as Uint8Array<ArrayBuffer>, "AES-GCM", false, [
        "encrypt",
        "decrypt",
      ]);
    })();
  }

  /** The key in the keyring, or `undefined` when it holds none. */
  async #keyringLookup(): Promise<Uint8Array | undefined> {
    const text = (await this.#keyringRun(["lookup", ...KEYRING_ATTRIBUTES])).trim();
    if (text === "") return undefined;
    const key = fromBase64(text);
    if (key.length !== KEY_BYTES) {
      throw new Error(`the keyring's key holds ${key.length} bytes, not ${KEY_BYTES}`);
    }
    return key;
  }

  /**
   * Runs `secret-tool` (its stdin the key, never an argument: argv is visible to every process). A lookup that
   * finds nothing exits 1 without output: that is an empty answer, not a failure.
   */
  async #keyringRun(args: readonly string[], input = ""): Promise<string> {
    const child = new Deno.Command(this.#keyring!, {
      args: [...args],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(input)).catch(() => {});
    await writer.close().catch(() => {});
    const output = await child.output();
    const stdout = new TextDecoder().decode(output.stdout);
    const stderr = new TextDecoder().decode(output.stderr).trim();
    const notFound = args[0] === "lookup" && output.code === 1 && stdout.trim() === "" && stderr === "";
    if (output.success || notFound) return stdout;
    throw new Error(
      `secret-tool ${args[0]} exited ${output.code}${stderr === "" ? "" : `: ${stderr.slice(0, 200)}`}`,
    );
  }
}
