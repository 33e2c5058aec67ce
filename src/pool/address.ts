/**
 * Where the worker pool is, and how toolgate authenticates to it: a `nats://` or `tls://` URL (several, separated
 * by commas), and the credentials of the usual NATS variables (`NATS_CREDS`, `NATS_NKEY`, `NATS_USER` and
 * `NATS_PASSWORD`, `NATS_TOKEN`, `NATS_CA`, `NATS_CERT`, `NATS_KEY`), and the file of the pool's signing key. Kept
 * free of the NATS client: the launcher reads it to grant the run its hosts and files.
 *
 * @module
 */

import { resolve } from "../base/paths.ts";

/** Variables the pool's connection reads: the NATS tools' own names. */
export const NATS_ENV = [
  "NATS_URL",
  "NATS_CREDS",
  "NATS_NKEY",
  "NATS_USER",
  "NATS_PASSWORD",
  "NATS_TOKEN",
  "NATS_CA",
  "NATS_CERT",
  "NATS_KEY",
] as const;

/** Of {@linkcode NATS_ENV}, the variables that name files toolgate (or the NATS client) reads. */
export const NATS_FILE_ENV = ["NATS_CREDS", "NATS_NKEY", "NATS_CA", "NATS_CERT", "NATS_KEY"] as const;

/**
 * A pool's address, read from its URL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePoolUrl } from "./address.ts";
 * const address = parsePoolUrl("tls://nats.example.com");
 * assert.ok(typeof address !== "string");
 * assert.deepEqual(address.servers, ["nats.example.com:4222"]);
 * ```
 */
export interface PoolAddress {
  /** `host:port` of each server. */
  readonly servers: readonly string[];
  /** A `tls://` URL: the connection must be encrypted. */
  readonly tls: boolean;
  /** The URL as it may be shown: never its user, password or token. */
  readonly shown: string;
  /** A user and password, or a token (a user alone), written in the URL. */
  readonly user?: string;
  readonly pass?: string;
}

const DEFAULT_PORT = 4222;

/**
 * Reads a pool URL: `nats://HOST[:PORT]` or `tls://HOST[:PORT]` (port 4222 by default), several separated by
 * commas, all of one scheme; a user and password (`nats://u:p@host`) or a token (`nats://t@host`) may be written in
 * it, though a variable keeps them out of the process list. Returns the address, or what is wrong with the URL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePoolUrl } from "./address.ts";
 * assert.deepEqual(parsePoolUrl("nats://127.0.0.1:4222,nats://127.0.0.1:4223"), {
 *   servers: ["127.0.0.1:4222", "127.0.0.1:4223"],
 *   tls: false,
 *   shown: "nats://127.0.0.1:4222,nats://127.0.0.1:4223",
 *   user: undefined,
 *   pass: undefined,
 * });
 * assert.equal(parsePoolUrl("http://example.com"), 'must start with nats:// or tls:// (got "http://example.com")');
 * ```
 */
export function parsePoolUrl(text: string): PoolAddress | string {
  const parts = text.split(",").map((part) => part.trim());
  const servers: string[] = [];
  const shown: string[] = [];
  let scheme: string | undefined;
  let user: string | undefined;
  let pass: string | undefined;
  for (const part of parts) {
    const match = /^(nats|tls):\/\/(.+)$/i.exec(part);
    if (!match) return `must start with nats:// or tls:// (got ${JSON.stringify(hideSecret(part))})`;
    const kind = match[1].toLowerCase();
    if (scheme !== undefined && kind !== scheme) {
      return "must use one scheme for every server (nats:// or tls://)";
    }
    scheme = kind;
    let url: URL;
    try {
      // URL reads host, port and user info the same way for any special-looking scheme written as http.
      url = new URL(`http://${match[2]}`);
    } catch {
      return `has no valid host (got ${JSON.stringify(hideSecret(part))})`;
    }
    if ((url.pathname !== "/" && url.pathname !== "") || url.search !== "" || url.hash !== "") {
      return `must name a host and port only (got ${JSON.stringify(hideSecret(part))})`;
    }
    if (url.hostname === "") return `has no host (got ${JSON.stringify(hideSecret(part))})`;
    if (url.username !== "") {
      user = decodeURIComponent(url.username);
      pass = url.password === "" ? undefined : decodeURIComponent(url.password);
    }
    const host = `${url.hostname}:${url.port === "" ? DEFAULT_PORT : url.port}`;
    servers.push(host);
    shown.push(`${kind}://${host}`);
  }
  return { servers, tls: scheme === "tls", shown: shown.join(","), user, pass };
}

/** A URL with its user info (a password, a token) replaced: for messages. */
function hideSecret(text: string): string {
  return text.replace(/\/\/[^@/]*@/, "//***@");
}

/**
 * The files the connection reads, from the environment (for the launcher's read grant).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { credentialFiles } from "./address.ts";
 * assert.deepEqual(credentialFiles({ NATS_CREDS: "/etc/toolgate/pool.creds" }), ["/etc/toolgate/pool.creds"]);
 * ```
 */
export function credentialFiles(env: Readonly<Record<string, string>>): string[] {
  return NATS_FILE_ENV.map((name) => env[name]).filter((path): path is string => !!path);
}

/** The variable that names a pool key file. */
export const POOL_KEY_FILE_ENV = "TOOLGATE_POOL_KEY_FILE";

/**
 * The pool key file a run names: `--pool-key-file` (given as `option`), else `TOOLGATE_POOL_KEY_FILE`, made
 * absolute against `cwd`; `undefined` when neither names one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { poolKeyFile } from "./address.ts";
 * assert.equal(poolKeyFile(undefined, { TOOLGATE_POOL_KEY_FILE: "pool.key" }, "/srv/app"), "/srv/app/pool.key");
 * ```
 */
export function poolKeyFile(
  option: string | undefined,
  env: Readonly<Record<string, string>>,
  cwd: string,
): string | undefined {
  const named = option ?? (env[POOL_KEY_FILE_ENV] || undefined);
  return named === undefined ? undefined : resolve(cwd, named);
}
