/**
 * Hosts, one way for the policy and for `http_fetch`: where a URL connects (its host lower-cased, an IPv6
 * address without brackets, its port or the scheme's default), the host lists people write (`--approve-hosts`,
 * `TOOLGATE_FETCH_ALLOW_HOSTS`: `host`, `host:port`, `[v6]`, `[v6]:port`), and whether a destination is listed.
 * The host the policy approves is then the host the tool dials, read by the same code.
 *
 * Not here: what a call may do (`policy/risk.ts`), which addresses `http_fetch` refuses (`tools/lib/address.ts`).
 *
 * @module
 */

/** A host (lower-cased, IPv6 without brackets) and a port. */
export interface Destination {
  /** The host name or address, lower-cased; an IPv6 address without brackets. */
  readonly host: string;
  /** The port, the scheme's default when the URL names none. */
  readonly port: string;
}

/** An entry of a host list: a host, and a port when the entry names one (any port otherwise). */
export interface HostEntry {
  /** The host name or address, lower-cased; an IPv6 address without brackets. */
  readonly host: string;
  /** The port, without leading zeros; absent: every port. */
  readonly port?: string;
}

/**
 * Where an `http:` or `https:` URL connects, or `undefined` for another scheme.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { urlDestination } from "./host_list.ts";
 * assert.deepEqual(urlDestination(new URL("https://Example.COM/a")), { host: "example.com", port: "443" });
 * assert.deepEqual(urlDestination(new URL("http://[::1]:8080/")), { host: "::1", port: "8080" });
 * assert.equal(urlDestination(new URL("ftp://example.com/")), undefined);
 * ```
 */
export function urlDestination(url: URL): Destination | undefined {
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  const host = url.hostname.toLowerCase();
  return {
    host: host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host,
    port: url.port !== "" ? url.port : url.protocol === "https:" ? "443" : "80",
  };
}

/**
 * Parses a host list (`host`, `host:port`, `[v6]`, `[v6]:port`, comma-separated). Throws a `SyntaxError` naming
 * an entry that is not a host.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseHostList } from "./host_list.ts";
 * assert.deepEqual(parseHostList("api.example.com, 127.0.0.1:08080"), [{ host: "api.example.com" }, { host: "127.0.0.1", port: "8080" }]);
 * assert.throws(() => parseHostList("a b"), SyntaxError);
 * ```
 */
export function parseHostList(text: string): HostEntry[] {
  const entries: HostEntry[] = [];
  for (const raw of text.split(",")) {
    const item = raw.trim().toLowerCase();
    if (item === "") continue;
    const bracketed = /^\[([0-9a-f:.]+)\](?::(\d+))?$/.exec(item);
    const plain = /^([a-z0-9._-]+)(?::(\d+))?$/.exec(item);
    let host: string | undefined;
    let port: string | undefined;
    if (bracketed) [host, port] = [bracketed[1], bracketed[2]];
    else if (plain) [host, port] = [plain[1], plain[2]];
    // An IPv6 address without brackets has no room for a port.
    else if (/^[0-9a-f:.]+$/.test(item) && item.split(":").length > 2) host = item;
    if (host === undefined || (port !== undefined && Number(port) > 65535)) {
      throw new SyntaxError(
        `${JSON.stringify(raw.trim())} is not a host: write example.com, example.com:8443 or [::1]:8080`,
      );
    }
    entries.push(port === undefined ? { host } : { host, port: String(Number(port)) });
  }
  return entries;
}

/**
 * Whether a host list names the destination (its host, and its port when the entry gives one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostListed, parseHostList } from "./host_list.ts";
 * const list = parseHostList("example.com:8443, [::1]");
 * assert.ok(hostListed(list, { host: "::1", port: "80" }));
 * assert.ok(!hostListed(list, { host: "example.com", port: "443" }));
 * ```
 */
export function hostListed(entries: readonly HostEntry[], destination: Destination): boolean {
  return entries.some((entry) =>
    entry.host === destination.host && (entry.port === undefined || entry.port === destination.port)
  );
}
