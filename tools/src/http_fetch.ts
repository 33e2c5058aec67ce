// http_fetch: GET or HEAD of an http(s) URL, refusing every IANA special-purpose address (IPv4 and IPv6: loopback,
// private, link-local, shared, documentation TEST-NETs, benchmarking, ...), multicast and IPv6 outside global
// unicast, IPv4-mapped forms included, after DNS resolution, and connecting to the very address it checked;
// redirects (at most 5) are checked again. TOOLGATE_FETCH_ALLOW_HOSTS (host or host:port, comma-separated) names
// local hosts that may be reached anyway, for testing.
import { lookup } from "node:dns/promises";
import { isIPLiteral, refusedAddress } from "../lib/address.ts";
import { readStdinArgs } from "../lib/args.ts";
import { errorMessage, invalidArgs, runTool, ToolFailure } from "../lib/envelope.ts";
import { http1Request, type Http1Response, HttpProtocolError } from "../lib/http1.ts";
import { HTTP_FETCH_ARGS } from "../schemas/http_fetch.ts";
import {
  type Destination,
  type HostEntry,
  hostListed,
  parseHostList,
  urlDestination,
} from "../lib/host_list.ts";

const ALLOW_HOSTS_VARIABLE = "TOOLGATE_FETCH_ALLOW_HOSTS";
const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = "toolgate-http_fetch/0.1";

/** The hosts `TOOLGATE_FETCH_ALLOW_HOSTS` names, parsed as `--approve-hosts` is (an entry not a host fails). */
function allowedHosts(text: string | undefined): HostEntry[] {
  try {
    return parseHostList(text ?? "");
  } catch (error) {
    throw new ToolFailure("execution_error", `${ALLOW_HOSTS_VARIABLE}: ${errorMessage(error)}`);
  }
}

function refuse(url: URL, message: string, hop: number): ToolFailure {
  const prefix = hop === 0 ? "" : `redirect ${hop} to ${url.href}: `;
  return new ToolFailure("rejected", `${prefix}${message}`, {
    field: "url",
    expected: "a public http(s) URL",
  });
}

/** Where an http(s) URL connects: the host and port `--approve-hosts` is matched against, read the same way. */
function destinationOf(url: URL): Destination {
  const destination = urlDestination(url);
  if (destination === undefined) throw new Error(`not an http(s) URL: ${url.href}`);
  return destination;
}

/** Checks a URL and resolves its host to addresses that may be connected to, or throws a failure. */
async function vet(url: URL, allow: readonly HostEntry[], hop: number): Promise<string[]> {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    if (hop === 0) {
      throw invalidArgs("url", `unsupported scheme ${url.protocol}`, "an http:// or https:// URL");
    }
    throw refuse(url, `unsupported scheme ${url.protocol}`, hop);
  }
  if (url.username !== "" || url.password !== "") {
    if (hop === 0) {
      throw invalidArgs("url", "credentials in the URL are not supported", "a URL without user:password@");
    }
    throw refuse(url, "credentials in the URL are not supported", hop);
  }
  const destination = destinationOf(url);
  const host = destination.host;
  const allowed = hostListed(allow, destination);
  let addresses: string[];
  if (isIPLiteral(host)) {
    addresses = [host];
  } else {
    try {
      const found = await lookup(host, { all: true, verbatim: true });
      addresses = found.map((entry) => entry.address);
    } catch (error) {
      throw new ToolFailure(
        "execution_error",
        `cannot resolve ${JSON.stringify(host)}: ${errorMessage(error)}`,
        {
          field: "url",
        },
      );
    }
    if (addresses.length === 0) {
      throw new ToolFailure("execution_error", `${JSON.stringify(host)} has no addresses`, { field: "url" });
    }
  }
  if (!allowed) {
    // Every address must pass: a name with one public and one private address is refused as a whole.
    for (const address of addresses) {
      const reason = refusedAddress(address);
      if (reason !== undefined) {
        const via = address === host ? "" : `, which ${host} resolves to`;
        throw refuse(url, `refused to connect to ${address} (${reason} address)${via}`, hop);
      }
    }
  }
  return addresses;
}

/** Opens a connection to one of the checked addresses, with TLS checked against the URL's host name. */
async function connect(url: URL, addresses: string[]): Promise<Deno.Conn> {
  let lastError: unknown;
  for (const address of addresses) {
    let conn: Deno.TcpConn;
    try {
      conn = await Deno.connect({
        hostname: address,
        port: Number(destinationOf(url).port),
        transport: "tcp",
      });
    } catch (error) {
      lastError = error;
      continue;
    }
    if (url.protocol === "http:") return conn;
    try {
      const tls = await Deno.startTls(conn, { hostname: destinationOf(url).host });
      // The handshake would otherwise wait for the first write: do it now, so its failure is reported as TLS.
      await tls.handshake();
      return tls;
    } catch (error) {
      try {
        conn.close();
      } catch {
        // Already closed by the failed handshake.
      }
      // A certificate that does not verify will not verify on a retry either.
      throw new ToolFailure("execution_error", `TLS with ${url.host} failed: ${errorMessage(error)}`, {
        retryable: false,
      });
    }
  }
  throw new ToolFailure("execution_error", `cannot connect to ${url.host}: ${errorMessage(lastError)}`);
}

function decodeText(body: Uint8Array, contentType: string | undefined): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? "")?.[1];
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body);
  } catch {
    return new TextDecoder().decode(body);
  }
}

await runTool(async () => {
  const {
    url: urlText,
    method,
    max_bytes: maxBytes,
    timeout_ms: timeoutMs,
    encoding,
    follow_redirects: followRedirects,
  } = await readStdinArgs(HTTP_FETCH_ARGS);

  let url: URL;
  try {
    url = new URL(urlText);
  } catch {
    throw invalidArgs("url", `not a valid URL: ${JSON.stringify(urlText)}`, "an http:// or https:// URL");
  }
  const allow = allowedHosts(Deno.env.get(ALLOW_HOSTS_VARIABLE));

  // One deadline for the whole call: resolution, connection, redirects and body.
  let conn: Deno.Conn | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let expired = false;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired = true;
      reject(new ToolFailure("timeout", `${url.href} did not complete within ${timeoutMs} ms`));
      try {
        conn?.close();
      } catch {
        // Already closed.
      }
    }, timeoutMs);
  });
  deadline.catch(() => {});
  const redirects: string[] = [];
  try {
    for (let hop = 0;; hop++) {
      const addresses = await Promise.race([vet(url, allow, hop), deadline]);
      const opened = connect(url, addresses);
      // A connection that completes after the deadline is closed, not leaked.
      opened.then((late) => expired && late.close(), () => {});
      conn = await Promise.race([opened, deadline]);
      let response: Http1Response;
      try {
        response = await Promise.race([
          http1Request(conn, {
            method,
            target: `${url.pathname}${url.search}`,
            host: url.host,
            headers: { "User-Agent": USER_AGENT, Accept: "*/*", "Accept-Encoding": "identity" },
            maxBytes,
          }),
          deadline,
        ]);
      } finally {
        try {
          conn.close();
        } catch {
          // Closed by the deadline.
        }
      }
      const location = response.headers["location"];
      if (followRedirects && REDIRECT_STATUSES.has(response.status) && location !== undefined) {
        if (redirects.length >= MAX_REDIRECTS) {
          const message = `more than ${MAX_REDIRECTS} redirects (last: ${url.href})`;
          throw new ToolFailure("execution_error", message, { retryable: false });
        }
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new ToolFailure("execution_error", `redirect to an invalid URL ${JSON.stringify(location)}`);
        }
        url = next;
        redirects.push(url.href);
        continue;
      }
      return {
        url: url.href,
        status: response.status,
        status_text: response.statusText,
        headers: response.headers,
        encoding,
        body: encoding === "base64"
          ? response.body.toBase64()
          : decodeText(response.body, response.headers["content-type"]),
        bytes: response.body.length,
        truncated: response.truncated,
        redirects,
      };
    }
  } catch (error) {
    if (error instanceof ToolFailure) throw error;
    if (error instanceof HttpProtocolError) {
      throw new ToolFailure("execution_error", `${url.href}: ${error.message}`);
    }
    throw new ToolFailure("execution_error", `${url.href}: ${errorMessage(error)}`);
  } finally {
    clearTimeout(timer);
  }
});
