/**
 * The credential broker inside the egress proxy: for a CONNECT to a host a credential is bound to, it terminates
 * the tool's TLS with a certificate of the run's CA, reads each request in the clear with toolgate's one strict
 * HTTP/1.1 reader (a framing oddity, a bare CR or LF, a second or odd `Content-Length` is refused, never sent on),
 * refuses one that carries a placeholder where it does not belong or names another `Host`, puts the secret where
 * it belongs, and sends the request on over its own TLS connection, which verifies the real server as any client
 * would, with the bound host's own `Host` and none of the tool's routing fields (`Forwarded`, `X-Forwarded-*`).
 * What comes back is decoded and has the secret masked (`broker_answer.ts`).
 *
 * One request per connection: the request goes up with `Connection: close` and the answer comes back with it, so
 * that the end of each answer is the end of its connection.
 *
 * Not here: the answer's side (`broker_answer.ts`); reading HTTP/1.1 (`src/contract/http1.ts`).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { Duplex } from "node:stream";
import tls from "node:tls";
import type { CallCredential } from "../manifest/credentials.ts";
import type { CertPair } from "./run_ca.ts";
import { decodeURIComponentSafe } from "./proxy_wire.ts";
import {
  ByteReader,
  fieldValues,
  Http1Error,
  readBody,
  readRequestHead,
  requestFraming,
  type RequestHead,
} from "../contract/http1.ts";
import { relayAnswer } from "./broker_answer.ts";
import { MAX_BODY } from "./http_body.ts";

/** Where a placeholder was found where it does not belong, or `undefined` when the request is clean. */
export function misplaced(
  credentials: readonly CallCredential[],
  bound: readonly CallCredential[],
  where: { readonly target: string; readonly headers: readonly string[]; readonly body?: Uint8Array },
): string | undefined {
  for (const credential of credentials) {
    const { placeholder, binding } = credential;
    const here = bound.includes(credential);
    // The bound query parameter is where it may be; anywhere else in the URL (raw or decoded) it may not.
    const url = new URL(where.target, "http://placeholder.invalid");
    const queryName = here ? binding.query : undefined;
    const rest = [...url.searchParams].filter(([name]) => name !== queryName).map(([n, v]) => `${n}=${v}`);
    const seen = `${decodeURIComponentSafe(url.pathname)} ${rest.join("&")}`;
    const rawRest = queryName === undefined ? where.target : where.target.split("?")[0];
    if (seen.includes(placeholder) || rawRest.includes(placeholder)) {
      return placed(credential, here, "the URL");
    }
    for (const line of where.headers) {
      if (!line.includes(placeholder)) continue;
      const name = line.slice(0, line.indexOf(":")).trim().toLowerCase();
      if (!(here && binding.header !== undefined && name === binding.header.toLowerCase())) {
        return placed(credential, here, `the header ${name}`);
      }
    }
    if (where.body !== undefined && Buffer.from(where.body).includes(placeholder)) {
      return placed(credential, here, "the request body");
    }
  }
  return undefined;
}

function placed(credential: CallCredential, here: boolean, where: string): string {
  const { secret, header, query } = credential.binding;
  const home = header !== undefined ? `the header ${header}` : `the query parameter ${query}`;
  return here
    ? `the placeholder of the credential ${secret} was in ${where}; it is bound to ${home} only`
    : `the placeholder of the credential ${secret} was sent to a host it is not bound to (in ${where})`;
}

/** A Node stream over a Deno connection, for `node:tls` to serve TLS on. */
function duplexOf(conn: Deno.Conn): Duplex {
  const reader = conn.readable.getReader();
  const writer = conn.writable.getWriter();
  return new Duplex({
    read() {
      reader.read().then(
        ({ done, value }) => this.push(done ? null : value),
        () => this.push(null),
      );
    },
    write(chunk: Uint8Array, _encoding, callback) {
      writer.write(chunk).then(() => callback(), (error) => callback(error));
    },
    final(callback) {
      writer.close().then(() => callback(), () => callback());
    },
    destroy(_error, callback) {
      reader.cancel().catch(() => {});
      writer.abort().catch(() => {});
      callback(null);
    },
  });
}

function writeTo(socket: tls.TLSSocket, bytes: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => socket.write(bytes, (error) => error ? reject(error) : resolve()));
}

/** What the broker needs for one tunnel to a bound host. */
export interface BrokerTunnel {
  readonly host: string;
  readonly port: number;
  /** The certificate the tool is shown for `host`, signed by the run's CA. */
  readonly pair: CertPair;
  /** Every credential of the call (a placeholder of another one is refused here too). */
  readonly credentials: readonly CallCredential[];
  /** Those bound to this host. */
  readonly bound: readonly CallCredential[];
  /** Extra CA certificates (PEM) toolgate trusts for upstreams, besides the system's roots. */
  readonly upstreamCa?: readonly string[];
  readonly dialMs: number;
  /** A request refused: the reason, for the audit line. */
  readonly onRefused: (reason: string) => void;
  /** Each upstream connection opened, so the call's end can cut it. */
  readonly track: (conn: Deno.Conn) => void;
}

/**
 * The tool's request fields the broker never sends on: hop-by-hop and proxy fields, the framing (the broker's
 * own), `Host` (the bound host's), the fields a front end routes or trusts by (`Forwarded`, `X-Forwarded-*`,
 * ...), and `Range`/`If-Range`/`Expect` (a ranged answer could hold a piece of a secret too short to mask; the
 * body is sent whole).
 */
const DROPPED =
  /^(connection|keep-alive|proxy-[a-z-]*|transfer-encoding|content-length|accept-encoding|te|trailer|upgrade|host|forwarded|x-forwarded-[a-z-]*|x-real-ip|x-original-[a-z-]*|x-host|x-rewrite-url|range|if-range|expect)$/i;

/** `host[:port]` as a request's Host names the tunnel's end (the port left out where it is 443). */
function authorityOf(host: string, port: number): string {
  return port === 443 ? host : `${host}:${port}`;
}

/** Whether a request's `Host` names the tunnel's host and port. */
function sameHost(value: string, host: string, port: number): boolean {
  const named = value.toLowerCase();
  const bare = host.toLowerCase();
  return named === `${bare}:${port}` || (port === 443 && named === bare);
}

/**
 * Serves one CONNECT tunnel (already answered `200`) to a bound host: TLS with the tool, then one request, read
 * strictly (`src/contract/http1.ts`), checked and completed with the secret, over TLS to the host with the host's own
 * `Host`; the answer back decoded and masked (`broker_answer.ts`).
 *
 * @example Not run as a doc test: it needs a sandboxed client's connection and an upstream to dial.
 * ```ts ignore
 * await brokerTunnel(conn, { host, port, pair, credentials, bound, dialMs: 10_000, onRefused, track });
 * ```
 */
export async function brokerTunnel(client: Deno.Conn, tunnel: BrokerTunnel): Promise<void> {
  const socket = new tls.TLSSocket(duplexOf(client), {
    isServer: true,
    cert: tunnel.pair.cert,
    key: tunnel.pair.key,
    ALPNProtocols: ["http/1.1"],
  });
  socket.on("error", () => socket.destroy());
  const reader = new ByteReader(socket[Symbol.asyncIterator]());
  const refuse = async (status: string, reason: string) => {
    tunnel.onRefused(reason);
    const body = `toolgate proxy: refused: ${reason}\n`;
    await writeTo(
      socket,
      Buffer.from(
        `HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nContent-Length: ${
          Buffer.byteLength(body)
        }\r\nConnection: close\r\n\r\n${body}`,
      ),
    ).catch(() => {});
  };
  let upstream: Deno.TlsConn | undefined;
  try {
    let head: RequestHead | undefined;
    let body: Uint8Array;
    try {
      head = await readRequestHead(reader);
      if (head === undefined) return;
      body = await readBody(reader, requestFraming(head), MAX_BODY);
    } catch (error) {
      if (!(error instanceof Http1Error)) throw error;
      if (error.fault === "cut short") return;
      return await refuse(
        error.fault === "too large" ? "413 Content Too Large" : "400 Bad Request",
        `a request the broker does not read: ${error.message}`,
      );
    }
    const { method, target, version } = head;
    if (!target.startsWith("/")) {
      return await refuse("400 Bad Request", "not an HTTP/1.1 request in origin form");
    }
    const named = fieldValues(head.fields, "host")[0];
    const authority = authorityOf(tunnel.host, tunnel.port);
    if (named !== undefined && !sameHost(named, tunnel.host, tunnel.port)) {
      return await refuse(
        "421 Misdirected Request",
        `the request's Host ${
          JSON.stringify(named)
        } is not ${authority}, the host its credential is bound to`,
      );
    }
    // A value that cannot go in a header as it is (a control byte would end the field; a byte past ASCII would
    // go up in a form the masker does not look for) goes nowhere.
    const unfit = tunnel.bound.find((c) =>
      c.binding.header !== undefined && !/^[\t\x20-\x7e]*$/.test(c.value)
    );
    if (unfit !== undefined) {
      return await refuse(
        "502 Bad Gateway",
        `the value of the credential ${unfit.binding.secret} has a character a header cannot carry (a control ` +
          `character or one past ASCII)`,
      );
    }
    const rawHeaders = head.fields.map(([name, value]) => `${name}: ${value}`);
    const reason = misplaced(tunnel.credentials, tunnel.bound, { target, headers: rawHeaders, body });
    if (reason !== undefined) return await refuse("403 Forbidden", reason);
    const kept = head.fields.filter(([name]) => !DROPPED.test(name)).map(([name, value]) =>
      `${name}: ${value}`
    );
    const { path, headers } = withSecrets(target, kept, tunnel.bound);
    // Framing is the broker's (the body is whole); the answer is asked for uncompressed (and decoded if not).
    headers.unshift(`Host: ${authority}`);
    headers.push("Accept-Encoding: identity", "Connection: close");
    if (body.length > 0 || !/^(GET|HEAD|DELETE|OPTIONS)$/i.test(method)) {
      headers.push(`Content-Length: ${body.length}`);
    }
    try {
      upstream = await dialTls(tunnel);
      tunnel.track(upstream);
      await upstream.handshake();
    } catch (error) {
      const why = error instanceof DOMException ? `no connection within ${tunnel.dialMs} ms` : String(error);
      return await refuse("502 Bad Gateway", `cannot reach ${tunnel.host}:${tunnel.port} (${why})`);
    }
    await upstream.write(
      Buffer.concat([
        Buffer.from(`${method} ${path} HTTP/1.1\r\n${headers.join("\r\n")}\r\n\r\n`, "latin1"),
        body,
      ]),
    );
    const refused = await relayAnswer(
      upstream,
      { method, version },
      tunnel.bound.map((c) => c.value),
      (bytes) => writeTo(socket, bytes),
    );
    if (refused !== undefined) {
      await refuse("502 Bad Gateway", `${tunnel.host}:${tunnel.port} sent ${refused}`);
    }
  } finally {
    try {
      upstream?.close();
    } catch {
      // Closed already.
    }
    // The TLS close, then the connection's: the duplex closes the connection once all is written.
    await new Promise<void>((resolve) => {
      socket.once("close", () => resolve());
      socket.end();
    });
  }
}

/**
 * A TLS connection to the bound host, verified against the system's roots and the upstream CAs, with Nagle's
 * algorithm off: the request goes in one write right after the handshake's last flight, and with Nagle on it
 * would wait for that flight's ACK, which the server delays (40 ms on Linux).
 */
async function dialTls(tunnel: BrokerTunnel): Promise<Deno.TlsConn> {
  const hostname = tunnel.host.replace(/^\[|\]$/g, "");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DOMException("timed out", "TimeoutError")), tunnel.dialMs);
  });
  const dialing = Deno.connect({ hostname, port: tunnel.port });
  try {
    const tcp = await Promise.race([dialing, late]);
    tcp.setNoDelay(true);
    tunnel.track(tcp);
    return await Deno.startTls(tcp, {
      hostname,
      caCerts: tunnel.upstreamCa && tunnel.upstreamCa.length > 0 ? [...tunnel.upstreamCa] : undefined,
    });
  } catch (error) {
    // A connection that came after the deadline is closed, not left behind.
    dialing.then((conn) => conn.close(), () => {}).catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** The request's target and headers with each bound credential put in. */
function withSecrets(
  target: string,
  headers: readonly string[],
  bound: readonly CallCredential[],
): { path: string; headers: string[] } {
  let path = target;
  const out = [...headers];
  for (const { binding, value, placeholder } of bound) {
    if (binding.header !== undefined) {
      const name = binding.header.toLowerCase();
      const at = out.findIndex((line) => line.slice(0, line.indexOf(":")).trim().toLowerCase() === name);
      if (at === -1) out.push(`${binding.header}: ${(binding.format ?? "{}").replace("{}", value)}`);
      else out[at] = out[at].replaceAll(placeholder, value);
    } else if (binding.query !== undefined) {
      const url = new URL(path, "http://placeholder.invalid");
      const current = url.searchParams.get(binding.query);
      url.searchParams.set(binding.query, current === null ? value : current.replaceAll(placeholder, value));
      path = `${url.pathname}${url.search}`;
    }
  }
  return { path, headers: out };
}

/**
 * Cuts a plain stream (a plain-HTTP request's body, later requests on its connection) where a placeholder
 * shows: the bytes before it go through, the placeholder never does.
 *
 * @example Not run as a doc test: a fragment of the broker, with a tunnel's streams in scope.
 * ```ts ignore
 * await scanPipe(new Uint8Array(), from.readable, to, ["toolgate-cred-..."], (placeholder) => record(placeholder));
 * ```
 */
export async function scanPipe(
  first: Uint8Array,
  from: ReadableStream<Uint8Array>,
  to: Deno.Conn,
  placeholders: readonly string[],
  onFound: (placeholder: string) => void,
): Promise<void> {
  const longest = Math.max(...placeholders.map((p) => p.length));
  let held = Buffer.alloc(0);
  /** Forwards what is safe of `chunk`; false once a placeholder showed. */
  const take = async (chunk: Uint8Array): Promise<boolean> => {
    const all = Buffer.concat([held, chunk]);
    const found = placeholders.find((p) => all.includes(p));
    if (found !== undefined) {
      await to.write(all.subarray(0, all.indexOf(found)));
      onFound(found);
      return false;
    }
    // Held back: only an end that may be the start of a placeholder (so a request is never stalled).
    let keep = Math.min(all.length, longest - 1);
    while (
      keep > 0 && !placeholders.some((p) => p.startsWith(all.subarray(all.length - keep).toString("latin1")))
    ) {
      keep--;
    }
    held = Buffer.from(all.subarray(all.length - keep));
    await to.write(all.subarray(0, all.length - keep));
    return true;
  };
  try {
    if (!await take(first)) return;
    for await (const chunk of from) if (!await take(chunk)) return;
    if (held.length > 0) await to.write(held);
  } catch {
    // One side went away.
  }
}
