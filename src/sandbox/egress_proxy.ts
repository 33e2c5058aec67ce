/**
 * The filtering proxy outside the sandbox that enforces a profile's host list: an HTTP proxy (CONNECT for TLS,
 * absolute-form requests for plain HTTP) on a Unix socket that is bound into the sandbox, letting through only
 * connections to the listed hosts. A confined tool with a host list has no network of its own: this proxy is
 * its only way out, so a host that is not listed is out of reach whatever the tool does.
 *
 * The proxy is one class whose registered calls, pending connections and caps are private state that every
 * decision on a connection (admit, dial, broker, forget) reads and changes. A connection's bytes are
 * `proxy_wire.ts`'s, plain HTTP is `plain_http.ts`'s, and its limits, its decisions and where its socket is are
 * `proxy_settings.ts`'s (exported from here too).
 *
 * @module
 */
import { type CallCredential, hostAllowed } from "../manifest/credentials.ts";
import type { CertificateAuthority } from "./run_ca.ts";
import { ByteReader } from "../contract/http1.ts";
import { nextHead, type PlainHead, servePlain } from "./plain_http.ts";
import { answer, decodeURIComponentSafe, pipe, shut, target } from "./proxy_wire.ts";
import { type EgressDecision, PROXY_LIMITS, type ProxyLimits } from "./proxy_settings.ts";

/** The most bytes of the call line. */
const MAX_CALL_LINE = 256;
const encoder = new TextEncoder();

/** One confined call the proxy serves: its host list, where its decisions go, and its open connections. */
interface Registered {
  readonly allow: readonly string[];
  readonly onDecision?: (decision: EgressDecision) => void;
  /** Its connections from the sandbox: what the cap counts. */
  readonly clients: Set<Deno.Conn>;
  /** Those and their upstreams: what its end cuts. */
  readonly ends: Set<Deno.Conn>;
  /** Its credentials bound to hosts: their placeholders are swapped or refused here. */
  readonly credentials: readonly CallCredential[];
}

/** The first line the bridge sends on each connection, naming the call it carries. */
const CALL_LINE = /^toolgate-call ([0-9a-f]{32})$/;

/** How long the proxy waits before it accepts again after a failed accept (out of file descriptors). */
const ACCEPT_BACKOFF_MS = 100;

/**
 * The egress proxy of one toolgate process: one Unix socket for every confined call with a host list. Each call
 * is registered under a random token that only its own sandbox's bridge is given; a connection that names no
 * registered token gets nothing. Whatever a tool does to it (a flood of connections, heads that never end, a
 * host that never answers) costs that call its connections, never toolgate its file descriptors or its life.
 *
 * @example
 * ```ts
 * import { EgressProxy } from "./egress_proxy.ts";
 * const proxy = EgressProxy.start(`${await Deno.makeTempDir()}/proxy.sock`);
 * const { token, unregister } = proxy.register(["api.example.com"]);
 * // bind proxy.socket into the sandbox, give the bridge `token`; when the call ends:
 * unregister();
 * proxy.close();
 * ```
 */
export class EgressProxy {
  readonly #listener: Deno.Listener;
  readonly #limits: ProxyLimits;
  readonly #calls = new Map<string, Registered>();
  readonly #open = new Set<Deno.Conn>();
  /** Connections that have not named their call yet, oldest first. */
  readonly #pending = new Set<Deno.Conn>();
  #closed = false;
  #authority?: Promise<CertificateAuthority>;

  private constructor(readonly socket: string, listener: Deno.Listener, limits: ProxyLimits) {
    this.#listener = listener;
    this.#limits = limits;
    // The proxy serves calls while they run; it must not keep toolgate alive on its own.
    listener.unref();
    void this.#accept();
  }

  /**
   * Listens on `socket` (a stale socket file there is replaced); only this user may connect. `limits` replace
   * the defaults ({@linkcode PROXY_LIMITS}) one by one.
   */
  static start(socket: string, limits: Partial<ProxyLimits> = {}): EgressProxy {
    try {
      Deno.removeSync(socket);
    } catch {
      // Nothing there.
    }
    const listener = Deno.listen({ transport: "unix", path: socket });
    Deno.chmodSync(socket, 0o600);
    return new EgressProxy(socket, listener, { ...PROXY_LIMITS, ...limits });
  }

  /**
   * Registers a call with its host list; returns the token its bridge sends, and how to forget the call (which
   * also cuts the connections it still holds).
   */
  register(
    allow: readonly string[],
    onDecision?: (decision: EgressDecision) => void,
    credentials: readonly CallCredential[] = [],
  ): { token: string; unregister: () => void } {
    const token = crypto.getRandomValues(new Uint8Array(16)).toHex();
    const call: Registered = { allow, onDecision, clients: new Set(), ends: new Set(), credentials };
    this.#calls.set(token, call);
    return {
      token,
      unregister: () => {
        this.#calls.delete(token);
        for (const conn of call.ends) shut(conn);
        call.ends.clear();
        call.clients.clear();
      },
    };
  }

  /**
   * The run's certificate authority, made at the first call with a credential: in memory only, this process's
   * own, never reused by another run.
   */
  authority(): Promise<CertificateAuthority> {
    return this.#authority ??= import("./run_ca.ts").then(({ CertificateAuthority }) =>
      CertificateAuthority.create(`toolgate run ${Deno.pid} ${new Date().toISOString()}`)
    );
  }

  async #accept(): Promise<void> {
    while (!this.#closed) {
      let conn: Deno.Conn;
      try {
        conn = await this.#listener.accept();
      } catch (error) {
        if (
          this.#closed || error instanceof Deno.errors.BadResource || error instanceof Deno.errors.Interrupted
        ) {
          return;
        }
        // Out of file descriptors (EMFILE, ENFILE) or a client gone before its accept: this connection is lost,
        // the proxy is not. Wait a little for descriptors to come back rather than spin.
        await new Promise((resolve) => setTimeout(resolve, ACCEPT_BACKOFF_MS));
        continue;
      }
      this.#serve(conn).catch(() => shut(conn));
    }
  }

  async #serve(conn: Deno.Conn): Promise<void> {
    // A connection that has not named its call yet belongs to no call's count. The bridge names it at once, so
    // past the cap the oldest of them goes: a tool that opens connections and says nothing loses its own, and
    // cannot keep another call's bridge out.
    if (this.#pending.size >= this.#limits.pending) {
      const oldest = this.#pending.values().next().value;
      if (oldest !== undefined) {
        this.#pending.delete(oldest);
        shut(oldest);
      }
    }
    this.#pending.add(conn);
    this.#open.add(conn);
    let call: Registered | undefined;
    // A head that takes too long (a slow client, or one that sends half and waits) is cut where it stands.
    const slow = setTimeout(() => shut(conn), this.#limits.headMs);
    Deno.unrefTimer(slow);
    let upstream: Deno.Conn | undefined;
    try {
      const reader = new ByteReader(conn);
      const callLine = await reader.line(MAX_CALL_LINE).catch(() => undefined);
      this.#pending.delete(conn);
      if (callLine === undefined) return;
      const token = CALL_LINE.exec(callLine)?.[1] ?? "";
      call = this.#calls.get(token);
      if (!call) return await answer(conn, "403 Forbidden", "toolgate proxy: not a call this proxy serves\n");
      if (call.clients.size >= this.#limits.perCall) return;
      call.clients.add(conn);
      call.ends.add(conn);
      const first = await nextHead(reader);
      clearTimeout(slow);
      if (first === undefined) return;
      if ("refused" in first) {
        return await answer(conn, "400 Bad Request", `toolgate proxy: ${first.refused}\n`);
      }
      const registered = call;
      if (first.method !== "CONNECT") {
        // Plain HTTP: each request on the connection is checked and sent to its own host.
        const placeholders = registered.credentials.map((c) => c.placeholder);
        const scan = placeholders.length === 0 ? undefined : await import("./credential_broker.ts");
        let current = { host: "", port: 0 };
        await servePlain(conn, reader, first, {
          admit: async (request) => {
            const where = await this.#admit(conn, registered, request);
            if (where === undefined) return undefined;
            current = where;
            const dialled = await this.#dial(conn, registered, token, where);
            return dialled && { upstream: dialled, path: where.path ?? "/" };
          },
          forward: scan && ((chunks, up) =>
            // A placeholder in a body the proxy can read cuts the connection.
            scan.scanPipe(new Uint8Array(), ReadableStream.from(chunks), up, placeholders, (placeholder) => {
              const credential = registered.credentials.find((c) => c.placeholder === placeholder)!;
              registered.onDecision?.({
                host: current.host,
                port: current.port,
                allowed: false,
                reason:
                  `the placeholder of the credential ${credential.binding.secret} was in a plain HTTP ` +
                  `request's body; the connection was cut`,
              });
              shut(conn);
              shut(up);
            })),
          closed: (up) => this.#forget(registered, up),
        });
        return;
      }
      const where = await this.#admit(conn, registered, first);
      if (where === undefined) return;
      // What the client sent past the CONNECT's head (a TLS hello that did not wait for the answer).
      const rest = reader.rest();
      const bound = registered.credentials.filter((c) =>
        hostAllowed(where.host, where.port, c.binding.hosts)
      );
      if (bound.length > 0) return await this.#broker(conn, registered, token, where, bound, rest);
      upstream = await this.#dial(conn, registered, token, where);
      if (upstream === undefined) return;
      await conn.write(encoder.encode("HTTP/1.1 200 Connection Established\r\n\r\n"));
      if (rest.length > 0) await upstream.write(rest);
      await Promise.allSettled([pipe(conn, upstream), pipe(upstream, conn)]);
    } finally {
      clearTimeout(slow);
      this.#pending.delete(conn);
      for (const end of [conn, upstream]) {
        if (end === undefined) continue;
        shut(end);
        this.#open.delete(end);
        call?.clients.delete(end);
        call?.ends.delete(end);
      }
    }
  }

  /**
   * Checks one request (a CONNECT, or a plain-HTTP request, each of a kept-alive connection's): its host against
   * the call's list, a credential's placeholder in its head. Returns its target, or `undefined` once the client
   * was answered with the refusal (and the decision recorded).
   */
  async #admit(
    conn: Deno.Conn,
    call: Registered,
    request: PlainHead,
  ): Promise<{ host: string; port: number; path?: string } | undefined> {
    const { method, uri, text } = request;
    const where = method && uri ? target(method, uri) : undefined;
    if (!where) {
      await answer(conn, "400 Bad Request", "toolgate proxy: CONNECT or an http:// URL\n");
      return undefined;
    }
    const allowed = hostAllowed(where.host, where.port, call.allow);
    call.onDecision?.({ host: where.host, port: where.port, allowed });
    if (!allowed) {
      await answer(
        conn,
        "403 Forbidden",
        `toolgate proxy: ${where.host}:${where.port} is not in this tool's host list\n`,
      );
      return undefined;
    }
    const placeholders = call.credentials.map((c) => c.placeholder);
    const inHead = placeholders.find((p) => text.includes(p) || decodeURIComponentSafe(text).includes(p));
    if (inHead !== undefined) {
      const bound = call.credentials.filter((c) => hostAllowed(where.host, where.port, c.binding.hosts));
      const credential = call.credentials.find((c) => c.placeholder === inHead)!;
      const reason = method === "CONNECT"
        ? `the placeholder of the credential ${credential.binding.secret} was in a CONNECT request's head`
        : bound.includes(credential)
        ? `the placeholder of the credential ${credential.binding.secret} was sent in plain HTTP; a bound ` +
          `secret goes out over HTTPS only`
        : `the placeholder of the credential ${credential.binding.secret} was sent to a host it is not ` +
          `bound to (in a plain HTTP request)`;
      call.onDecision?.({ host: where.host, port: where.port, allowed: false, reason });
      await answer(conn, "403 Forbidden", `toolgate proxy: refused: ${reason}\n`);
      return undefined;
    }
    return where;
  }

  /**
   * Opens the connection to an allowed host, counted with the call's; `undefined` once the client was answered
   * (the host out of reach) or the call ended meanwhile.
   */
  async #dial(
    conn: Deno.Conn,
    call: Registered,
    token: string,
    where: { host: string; port: number },
  ): Promise<Deno.Conn | undefined> {
    let upstream: Deno.Conn;
    try {
      upstream = await Deno.connect({
        hostname: where.host.replace(/^\[|\]$/g, ""),
        port: where.port,
        signal: AbortSignal.timeout(this.#limits.dialMs),
      });
    } catch (error) {
      // A host that does not answer, or no file descriptor left (EMFILE): this connection fails, not toolgate.
      const why = error instanceof DOMException
        ? `no connection within ${this.#limits.dialMs} ms`
        : (error as Error).message;
      await answer(conn, "502 Bad Gateway", `toolgate proxy: ${why}\n`);
      return undefined;
    }
    // The call ended while the host was dialled: nothing is carried for it any more.
    if (!this.#calls.has(token)) {
      shut(upstream);
      return undefined;
    }
    this.#open.add(upstream);
    call.ends.add(upstream);
    return upstream;
  }

  /** An upstream connection closed: no longer the call's. */
  #forget(call: Registered, upstream: Deno.Conn): void {
    this.#open.delete(upstream);
    call.ends.delete(upstream);
  }

  /** A CONNECT to a host a credential is bound to: TLS ends here, and the broker carries the request. */
  async #broker(
    conn: Deno.Conn,
    call: Registered,
    token: string,
    where: { host: string; port: number },
    bound: readonly CallCredential[],
    rest: Uint8Array,
  ): Promise<void> {
    if (rest.length > 0) {
      // A client that sends its TLS hello before the proxy's answer: not one the broker serves.
      return await answer(conn, "400 Bad Request", "toolgate proxy: wait for the CONNECT answer\n");
    }
    const [{ brokerTunnel }, authority] = await Promise.all([
      import("./credential_broker.ts"),
      this.authority(),
    ]);
    const pair = await authority.issue(where.host);
    if (!this.#calls.has(token)) return;
    await conn.write(encoder.encode("HTTP/1.1 200 Connection Established\r\n\r\n"));
    await brokerTunnel(conn, {
      host: where.host,
      port: where.port,
      pair,
      credentials: call.credentials,
      bound,
      upstreamCa: this.#limits.upstreamCa,
      dialMs: this.#limits.dialMs,
      onRefused: (reason) =>
        call.onDecision?.({ host: where.host, port: where.port, allowed: false, reason }),
      track: (upstream) => {
        this.#open.add(upstream);
        call.ends.add(upstream);
      },
    });
  }

  /** Stops listening, cuts every connection, removes the socket. */
  close(): void {
    this.#closed = true;
    try {
      this.#listener.close();
    } catch {
      // Already closed.
    }
    for (const conn of this.#open) shut(conn);
    this.#open.clear();
    try {
      Deno.removeSync(this.socket);
    } catch {
      // Already gone.
    }
  }
}
