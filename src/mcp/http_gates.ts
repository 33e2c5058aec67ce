/**
 * The gates every request to the MCP HTTP server passes before it reaches a session: the bearer token, compared in
 * constant time, and the `Origin` (against DNS rebinding). The server (`http_server.ts`) re-exports the checks.
 *
 * @module
 */
const encoder = new TextEncoder();

/**
 * A check of `Authorization` headers against `token` whose time depends on nothing but the header's length, which
 * its sender knows: every byte given is compared (against the token's byte at that place, the token repeated),
 * wherever the two first differ, so neither a common prefix nor the token's length shows in the timing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bearerCheck } from "./http_gates.ts";
 * const check = bearerCheck("s3cret");
 * assert.ok(check("Bearer s3cret"));
 * assert.equal(check("Bearer guess"), false);
 * assert.equal(check(null), false);
 * ```
 */
export function bearerCheck(token: string): (header: string | null) => boolean {
  const expected = encoder.encode(token);
  if (expected.length === 0) throw new Error("bearerCheck needs a token");
  return (header) => {
    const match = /^Bearer[ \t]+(\S.*)$/i.exec(header ?? "");
    // A missing header still costs one comparison, so that it cannot be told from a wrong token by its timing.
    const given = encoder.encode(match ? match[1].trim() : "");
    // Hashing both sides first (SHA-256 in script) cost every request more than the rest of the gates.
    let differ = given.length ^ expected.length;
    for (let i = 0; i < given.length; i++) differ |= given[i] ^ expected[i % expected.length];
    return differ === 0 && match !== null;
  };
}

/**
 * A hostname as a URL writes it: an IPv6 address in brackets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostForUrl } from "./http_gates.ts";
 * assert.equal(hostForUrl("::1"), "[::1]");
 * assert.equal(hostForUrl("127.0.0.1"), "127.0.0.1");
 * ```
 */
export function hostForUrl(hostname: string): string {
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}

/** Is `hostname` (as a URL has it: IPv6 in brackets) the loopback interface? */
function isLoopback(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return host === "localhost" || host.endsWith(".localhost") || host === "::1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Addresses that bind every interface: no one host is "this server" for an Origin. */
const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", "[::]"]);

/**
 * A check of `Origin` headers for a server bound to `hostname`: no header (a client that is not a browser) passes;
 * an origin whose host is a loopback name or address, or the very host the server was bound to, passes; any other
 * (another site, `null`) does not. A browser page of another site reaching a local server through DNS rebinding
 * names its own site as the origin.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { originCheck } from "./http_gates.ts";
 * const check = originCheck("127.0.0.1");
 * assert.ok(check(null));
 * assert.ok(check("http://localhost:5173"));
 * assert.equal(check("https://evil.example"), false);
 * ```
 */
export function originCheck(hostname: string): (origin: string | null) => boolean {
  const own = WILDCARD_HOSTS.has(hostname) ? undefined : hostForUrl(hostname).toLowerCase();
  return (origin) => {
    if (origin === null) return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return false;
    return isLoopback(url.hostname) || url.hostname.toLowerCase() === own;
  };
}
