/**
 * The `mcpServers` block of a manifest, checked: each server in the shape of Claude Desktop's configuration (a
 * stdio `command`/`args`/`env`, or a Streamable HTTP `url`/`headers`) plus toolgate's own keys, every error naming
 * the server (`mcpServers "fs": ...`); and the `mcp__SERVER__TOOL` names its tools are listed by.
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import { type PermissionProfile, type ProfileResult, resolveProfile } from "./profiles.ts";
import { checkCredentials, type CredentialBinding } from "./credentials.ts";

/**
 * One checked server of `mcpServers`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkServers } from "./server_spec.ts";
 * const errors: string[] = [];
 * const [fs] = checkServers({ fs: { command: "npx", args: ["-y", "x"] } }, "/srv/p", new Map(), errors, []);
 * assert.equal(fs.transport, "stdio");
 * ```
 */
export interface ServerSpec {
  /** The server's name, the `SERVER` of `mcp__SERVER__TOOL`. */
  readonly name: string;
  /** How toolgate talks to it. */
  readonly transport: "stdio" | "http";
  /** A stdio server's program, as written (a name looked up on PATH, or a path). */
  readonly command?: string;
  /** A stdio server's arguments. */
  readonly args: readonly string[];
  /** Variables set for a stdio server, as written. */
  readonly env: Readonly<Record<string, string>>;
  /** An HTTP server's endpoint. */
  readonly url?: string;
  /** Headers sent to an HTTP server; `${NAME}` stands for the secret NAME. */
  readonly headers: Readonly<Record<string, string>>;
  /** What a stdio server may touch once confined (default `none`); an HTTP server's reach is its host. */
  readonly profile: PermissionProfile;
  /** Secret names the server gets (as variables, or in `headers`), upper-cased. */
  readonly secrets: readonly string[];
  /**
   * Secrets bound to hosts (a stdio server's): the server gets placeholders, the egress proxy puts the values into
   * its requests to those hosts only (`src/manifest/credentials.ts`).
   */
  readonly credentials: readonly CredentialBinding[];
  /** Each call's wall-clock limit in seconds; the caller's default when absent. */
  readonly timeoutSec?: number;
  /**
   * How long the server has to answer `initialize` at each start, in seconds ({@linkcode START_TIMEOUT_SEC} when
   * absent): past it the start fails at once with the server's last stderr lines.
   */
  readonly startTimeoutSec?: number;
  /** The server's tools the user declares read-only. */
  readonly readOnly: readonly string[];
  /** The only tools exposed, when given. */
  readonly allow?: readonly string[];
  /** Tools never exposed. */
  readonly deny: readonly string[];
  /** A package server's install may run its lifecycle scripts (npm's `install` scripts, building an sdist). */
  readonly allowScripts?: boolean;
}

/**
 * The name toolgate lists an upstream tool by (Claude Code's convention).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gatewayName } from "./server_spec.ts";
 * assert.equal(gatewayName("fs", "read_file"), "mcp__fs__read_file");
 * ```
 */
export function gatewayName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`;
}

/**
 * The server a `mcp__SERVER__TOOL` name belongs to, or `undefined` for another name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serverOfName } from "./server_spec.ts";
 * assert.equal(serverOfName("mcp__fs__read_file"), "fs");
 * assert.equal(serverOfName("get_time"), undefined);
 * ```
 */
export function serverOfName(name: string): string | undefined {
  const match = /^mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__/.exec(name);
  return match?.[1];
}

/** A server name usable in `mcp__SERVER__TOOL`: tool-name characters, no double underscore. */
export const SERVER_NAME_PATTERN = /^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const MAX_TIMEOUT_SEC = Math.floor((2 ** 31 - 1) / 1000);
const KNOWN_KEYS = new Set([
  "type",
  "command",
  "args",
  "env",
  "url",
  "headers",
  "permissions",
  "secrets",
  "credentials",
  "timeoutSec",
  "startTimeoutSec",
  "readOnly",
  "allow",
  "deny",
  "disabled",
  "allowScripts",
]);
/** How long a server has to answer `initialize` when its entry names no `startTimeoutSec`. */
export const START_TIMEOUT_SEC = 10;

/** The longest `startTimeoutSec` an entry may name (a first start that compiles or unpacks is slow). */
const MAX_START_TIMEOUT_SEC = 300;

/** `${NAME}` in a header value: the secret NAME's value goes there. */
export const HEADER_SECRET = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

const quote = (value: string): string => JSON.stringify(value);

function stringArray(value: unknown, key: string, own: string[]): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
    own.push(`${key} must be an array of strings`);
    return undefined;
  }
  return value as string[];
}

function stringMap(value: unknown, key: string, own: string[]): Record<string, string> {
  if (value === undefined) return {};
  if (!isRecord(value) || Object.values(value).some((v) => typeof v !== "string")) {
    own.push(`${key} must be an object of strings`);
    return {};
  }
  return value as Record<string, string>;
}

/**
 * Checks a manifest's `mcpServers` value: the servers it runs (a `disabled: true` one is left out), each error
 * pushed as `mcpServers "NAME": ...`, each unknown key warned of.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkServers } from "./server_spec.ts";
 * const errors: string[] = [];
 * checkServers({ fs: { url: "ftp://x" } }, "/srv/p", new Map(), errors, []);
 * assert.deepEqual(errors, ['mcpServers "fs": url must be an http or https URL (got "ftp://x")']);
 * ```
 */
export function checkServers(
  value: Record<string, unknown>,
  dir: string,
  profiles: Map<string, ProfileResult>,
  errors: string[],
  warnings: string[],
): ServerSpec[] {
  const servers: ServerSpec[] = [];
  for (const [name, entry] of Object.entries(value)) {
    const prefix = `mcpServers ${quote(name)}: `;
    const own: string[] = [];
    if (!SERVER_NAME_PATTERN.test(name) || name.length > 32) {
      own.push(
        "the name must be 1 to 32 of A-Z a-z 0-9 - _, without a double underscore (tools are mcp__SERVER__TOOL)",
      );
    }
    if (!isRecord(entry)) {
      errors.push(`${prefix}must be an object`);
      continue;
    }
    for (const key of Object.keys(entry)) {
      if (!KNOWN_KEYS.has(key)) warnings.push(`${prefix}unknown field ${quote(key)} (ignored)`);
    }
    const type = entry.type;
    if (type !== undefined && !["stdio", "http", "streamable-http"].includes(type as string)) {
      own.push(
        type === "sse"
          ? 'type "sse" is not supported: toolgate speaks Streamable HTTP ("http") and stdio'
          : `type must be "stdio" or "http" (got ${JSON.stringify(type)})`,
      );
    }
    const hasCommand = entry.command !== undefined;
    const hasUrl = entry.url !== undefined;
    if (hasCommand === hasUrl) own.push('needs exactly one of "command" (stdio) and "url" (Streamable HTTP)');
    if (hasCommand && (typeof entry.command !== "string" || entry.command.trim() === "")) {
      own.push("command must be a non-empty string");
    }
    const args = stringArray(entry.args, "args", own) ?? [];
    const env = stringMap(entry.env, "env", own);
    for (const variable of Object.keys(env)) {
      if (!ENV_NAME.test(variable.toUpperCase())) own.push(`env: invalid name ${quote(variable)}`);
    }
    let url: string | undefined;
    if (hasUrl) {
      const parsed = typeof entry.url === "string" && URL.canParse(entry.url)
        ? new URL(entry.url)
        : undefined;
      if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
        own.push(`url must be an http or https URL (got ${JSON.stringify(entry.url)})`);
      } else url = parsed.href;
    }
    if (!hasUrl && entry.headers !== undefined) own.push("headers is for a server with a url");
    if (hasUrl && (entry.args !== undefined || entry.env !== undefined)) {
      own.push("args and env are for a server with a command");
    }
    const headers = stringMap(entry.headers, "headers", own);
    const secrets: string[] = [];
    for (const [j, secret] of (stringArray(entry.secrets, "secrets", own) ?? []).entries()) {
      const upper = secret.trim().toUpperCase();
      if (!ENV_NAME.test(upper)) {
        own.push(`secrets[${j}]: invalid name ${quote(secret)} (must match [A-Z_][A-Z0-9_]*)`);
      } else if (!secrets.includes(upper)) secrets.push(upper);
    }
    for (const [header, text] of Object.entries(headers)) {
      for (const match of text.matchAll(HEADER_SECRET)) {
        if (!secrets.includes(match[1].toUpperCase())) {
          own.push(`headers ${quote(header)} names the secret ${match[1]}, which "secrets" does not list`);
        }
      }
    }
    const timeout = entry.timeoutSec;
    if (
      timeout !== undefined &&
      (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout <= 0 || timeout > MAX_TIMEOUT_SEC)
    ) {
      own.push(
        `timeoutSec must be a positive integer up to ${MAX_TIMEOUT_SEC} (got ${JSON.stringify(timeout)})`,
      );
    }
    const startTimeout = entry.startTimeoutSec;
    if (
      startTimeout !== undefined &&
      (typeof startTimeout !== "number" || !Number.isInteger(startTimeout) || startTimeout <= 0 ||
        startTimeout > MAX_START_TIMEOUT_SEC)
    ) {
      own.push(
        `startTimeoutSec must be a positive integer up to ${MAX_START_TIMEOUT_SEC} (got ${
          JSON.stringify(startTimeout)
        })`,
      );
    }
    const readOnly = stringArray(entry.readOnly, "readOnly", own) ?? [];
    const allow = stringArray(entry.allow, "allow", own);
    const deny = stringArray(entry.deny, "deny", own) ?? [];
    if (entry.disabled !== undefined && typeof entry.disabled !== "boolean") {
      own.push("disabled must be a boolean");
    }
    if (entry.allowScripts !== undefined && (typeof entry.allowScripts !== "boolean" || hasUrl)) {
      own.push("allowScripts must be a boolean, for a server with a command");
    }
    let profile: PermissionProfile | undefined;
    if (hasUrl) {
      // What policy sees of an HTTP server: it reaches its host (toolgate's own client does), so it is never free.
      if (url !== undefined) {
        const host = new URL(url).host;
        profile = Object.freeze({
          name: "http",
          read: [],
          write: [],
          net: Object.freeze([host]),
          env: [],
          limits: resolveProfile("none", dir, profiles).ok
            ? (resolveProfile("none", dir, profiles) as { profile: PermissionProfile }).profile.limits
            : ({} as PermissionProfile["limits"]),
        });
      }
    } else {
      const resolved = resolveProfile(entry.permissions ?? "none", dir, profiles);
      if (!resolved.ok) own.push(...resolved.errors);
      else {
        profile = resolved.profile;
        if (resolved.warning !== undefined && !warnings.includes(resolved.warning)) {
          warnings.push(resolved.warning);
        }
      }
    }
    let credentials: CredentialBinding[] = [];
    if (hasUrl && entry.credentials !== undefined) {
      own.push(
        "credentials is for a server with a command (toolgate runs it behind its egress proxy); an HTTP server's " +
          '"headers" name secrets',
      );
    } else if (profile !== undefined) {
      credentials = checkCredentials(entry.credentials, profile.net, own, "server");
    }
    errors.push(...own.map((message) => prefix + message));
    if (own.length > 0 || profile === undefined || entry.disabled === true) continue;
    servers.push(Object.freeze({
      name,
      transport: hasUrl ? "http" as const : "stdio" as const,
      command: hasCommand ? entry.command as string : undefined,
      args: Object.freeze([...args]),
      env: Object.freeze({ ...env }),
      url,
      headers: Object.freeze({ ...headers }),
      profile,
      secrets: Object.freeze(secrets),
      credentials: Object.freeze(credentials),
      timeoutSec: timeout as number | undefined,
      startTimeoutSec: startTimeout as number | undefined,
      readOnly: Object.freeze([...readOnly]),
      allow: allow && Object.freeze([...allow]),
      deny: Object.freeze([...deny]),
      ...(entry.allowScripts === true ? { allowScripts: true } : {}),
    }));
  }
  return servers;
}
