/**
 * Credentials bound to hosts (a manifest tool's `credentials`): the tool receives a placeholder in its environment,
 * and the egress proxy puts the stored secret into requests to the hosts it is bound to, nowhere else. This module
 * holds the manifest entry's shape and checks, and the placeholder's form.
 *
 * @module
 */

/** One credential of a tool: which secret, under which variable, for which hosts, and where in the request. */
export interface CredentialBinding {
  /** The stored secret's name (upper case), as `secrets` names one. */
  readonly secret: string;
  /** The variable the tool finds the placeholder in. */
  readonly env: string;
  /** The hosts (each `host` or `host:port`) the value may go to; each is in the profile's host list too. */
  readonly hosts: readonly string[];
  /** The request header that carries it (the placeholder in it is replaced, or the header is added). */
  readonly header?: string;
  /** How an added header's value is made: `{}` stands for the secret (default `{}`). */
  readonly format?: string;
  /** Or: the query parameter that carries it. */
  readonly query?: string;
}

/** One call's credential: its binding, the secret's value, and the placeholder the tool was given. */
export interface CallCredential {
  readonly binding: CredentialBinding;
  readonly value: string;
  readonly placeholder: string;
}

/** The form of every placeholder: fixed, so that the proxy (and a person reading a log) knows one. */
export const PLACEHOLDER_PATTERN: RegExp = /^toolgate-cred-[0-9a-f]{32}$/;

/**
 * A new placeholder: `toolgate-cred-` and 32 random hex digits, new for each call.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newPlaceholder, PLACEHOLDER_PATTERN } from "./credentials.ts";
 * assert.ok(PLACEHOLDER_PATTERN.test(newPlaceholder()));
 * ```
 */
export function newPlaceholder(): string {
  return `toolgate-cred-${crypto.getRandomValues(new Uint8Array(16)).toHex()}`;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** An HTTP header name (a token of RFC 9110). */
const HEADER = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HOST = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;
const FIELDS = new Set(["secret", "env", "hosts", "header", "format", "query"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Checks a tool's (or an MCP server's, `owner`) `credentials` against its profile's host list (`net`: a list,
 * `true` or `false`). Each problem is one message naming the entry (`credentials[0].hosts[1]: ...`), pushed to
 * `errors`; the bindings come back when there is none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkCredentials } from "./credentials.ts";
 * const errors: string[] = [];
 * checkCredentials([{ secret: "k", env: "K", hosts: ["api.example.com"], header: "X-Key" }], ["api.example.com"], errors);
 * assert.deepEqual(errors, []);
 * ```
 */
export function checkCredentials(
  raw: unknown,
  net: readonly string[] | boolean,
  errors: string[],
  owner: "tool" | "server" = "tool",
): CredentialBinding[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) {
    errors.push("credentials must be an array");
    return [];
  }
  const out: CredentialBinding[] = [];
  const envs = new Set<string>();
  raw.forEach((entry, i) => {
    const at = `credentials[${i}]`;
    const own: string[] = [];
    if (!isRecord(entry)) {
      errors.push(`${at} must be an object`);
      return;
    }
    for (const key of Object.keys(entry)) {
      if (!FIELDS.has(key)) own.push(`${at}: unknown field ${JSON.stringify(key)}`);
    }
    const { secret, env, hosts, header, format, query } = entry;
    if (typeof secret !== "string" || !NAME.test(secret.trim())) {
      own.push(`${at}.secret must be a secret name (letters, digits, _), got ${JSON.stringify(secret)}`);
    }
    if (typeof env !== "string" || !NAME.test(env.trim())) {
      own.push(`${at}.env must be a variable name (letters, digits, _), got ${JSON.stringify(env)}`);
    } else if (envs.has(env.trim())) {
      own.push(`${at}.env: ${env.trim()} is given by another credential already`);
    } else envs.add(env.trim());
    if (!Array.isArray(hosts) || hosts.length === 0) {
      own.push(`${at}.hosts must be a non-empty array of hosts (host or host:port)`);
    } else {
      hosts.forEach((host, j) => {
        if (typeof host !== "string" || !HOST.test(host.trim())) {
          own.push(`${at}.hosts[${j}] must be a host or host:port, got ${JSON.stringify(host)}`);
        } else if (!Array.isArray(net)) {
          own.push(
            `${at}.hosts[${j}]: ${host} is bound, but the tool's profile has no host list ("net": [...]); a ` +
              `bound secret goes out only through toolgate's egress proxy`,
          );
        } else if (!boundHostListed(host.trim(), net)) {
          own.push(
            `${at}.hosts[${j}]: ${host} is not in the ${owner}'s profile host list (${net.join(", ")})`,
          );
        }
      });
    }
    if ((header === undefined) === (query === undefined)) {
      own.push(`${at} must name exactly one of "header" or "query"`);
    }
    if (header !== undefined && (typeof header !== "string" || !HEADER.test(header))) {
      own.push(`${at}.header must be an HTTP header name, got ${JSON.stringify(header)}`);
    }
    if (query !== undefined && (typeof query !== "string" || query === "" || /[&=#\s]/.test(query))) {
      own.push(`${at}.query must be a query parameter name, got ${JSON.stringify(query)}`);
    }
    if (format !== undefined) {
      if (header === undefined) own.push(`${at}.format applies to a header only`);
      if (typeof format !== "string" || format.split("{}").length !== 2 || /[\r\n]/.test(format)) {
        own.push(
          `${at}.format must hold "{}" exactly once (where the secret goes), got ${JSON.stringify(format)}`,
        );
      }
    }
    errors.push(...own);
    if (own.length > 0) return;
    out.push(Object.freeze({
      secret: (secret as string).trim().toUpperCase(),
      env: (env as string).trim(),
      hosts: Object.freeze((hosts as string[]).map((host) => host.trim())),
      ...(header === undefined
        ? {}
        : { header: header as string, format: (format as string | undefined) ?? "{}" }),
      ...(query === undefined ? {} : { query: query as string }),
    }));
  });
  return out;
}

/** A bound host is listed when the list lets through every port the binding covers. */
function boundHostListed(host: string, net: readonly string[]): boolean {
  const match = /^(.*?)(?::(\d+))?$/.exec(host.startsWith("[") ? host.replace(/^(\[[^\]]+\])/, "$1") : host);
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : match?.[1] ?? host;
  const port = host.startsWith("[") ? /\]:(\d+)$/.exec(host)?.[1] : match?.[2];
  if (port !== undefined) return hostAllowed(name, Number(port), net);
  // No port: every port of the host must be listed, i.e. the host itself without one.
  return net.some((entry) => entry.trim().toLowerCase() === name.toLowerCase());
}

/**
 * The call's credential bound to `host:port`, if any.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { boundTo } from "./credentials.ts";
 * assert.deepEqual(boundTo([], "api.example.com", 443), []);
 * ```
 */
export function boundTo(
  credentials: readonly CallCredential[],
  host: string,
  port: number,
): CallCredential[] {
  return credentials.filter((c) => hostAllowed(host, port, c.binding.hosts));
}

/**
 * Does `host:port` match an entry of the list? An entry is `host` (any port), `host:port`, or an IP literal
 * (`[v6]` with a port); names compare without case, each host exactly.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostAllowed } from "./credentials.ts";
 * assert.ok(hostAllowed("api.example.com", 443, ["api.example.com"]));
 * assert.equal(hostAllowed("example.com", 80, ["example.com:443"]), false);
 * ```
 */
export function hostAllowed(host: string, port: number, allow: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  return allow.some((raw) => {
    const entry = raw.trim().toLowerCase();
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    const [pattern, entryPort] = bracketed
      ? [bracketed[1], bracketed[2]]
      : entry.split(":").length === 2
      ? entry.split(":")
      : [entry, undefined];
    if (entryPort !== undefined && Number(entryPort) !== port) return false;
    return name === pattern.replace(/\.$/, "");
  });
}
