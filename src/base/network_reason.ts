/**
 * Why a connection failed, in the words a person acts on: connection refused, no such host, TLS to a port that
 * speaks plain HTTP, a certificate not trusted. Deno's `fetch` says only "fetch failed" and keeps the reason in
 * the error's `cause`; this reads it there.
 *
 * Not here: retrying (`agent/chat_client.ts`), the gateway's upstream errors (`gateway/upstream.ts`).
 *
 * @module
 */

/** The error's own message and those of its causes, outermost first. */
function messages(error: unknown): string[] {
  const found: string[] = [];
  let at: unknown = error;
  for (let depth = 0; depth < 5 && at !== undefined && at !== null; depth++) {
    found.push(at instanceof Error ? at.message : String(at));
    at = at instanceof Error ? at.cause : undefined;
  }
  return found;
}

/**
 * One line saying why a request could not be sent (no URL in it: the caller names where it went).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { networkReason } from "./network_reason.ts";
 * const refused = new TypeError("fetch failed", {
 *   cause: new Error("client error (Connect): tcp connect error: Connection refused (os error 111)"),
 * });
 * assert.equal(networkReason(refused), "connection refused (nothing listens on that port)");
 * assert.equal(networkReason(new Error("something else")), "something else");
 * ```
 */
export function networkReason(error: unknown): string {
  const all = messages(error);
  const text = all.join(" | ");
  if (/connection refused/i.test(text)) return "connection refused (nothing listens on that port)";
  if (/name or service not known|no address associated|nodename nor servname|no such host/i.test(text)) {
    return "no such host (the name does not resolve)";
  }
  if (/dns error|failed to lookup address/i.test(text)) {
    return `the host name could not be looked up: ${innermost(all)}`;
  }
  if (/InvalidContentType|corrupt message|wrong version number|http request to an https server/i.test(text)) {
    return "TLS to a port that speaks plain HTTP (write http://, not https://)";
  }
  if (/certificate|UnknownIssuer|invalid peer certificate/i.test(text)) {
    return `the server's TLS certificate is not trusted: ${innermost(all)}`;
  }
  if (/connection reset|broken pipe|connection closed/i.test(text)) {
    return `the connection was closed: ${innermost(all)}`;
  }
  return innermost(all);
}

/** The deepest message, without Deno's "error sending request for url (...)" preamble. */
function innermost(all: readonly string[]): string {
  const last = all.at(-1) ?? "";
  return last.replace(/^error sending request for url \([^)]*\):\s*/, "").replace(/\s+/g, " ").trim().slice(
    0,
    300,
  );
}
