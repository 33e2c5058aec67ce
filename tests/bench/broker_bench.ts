/**
 * The credential broker's cost (issue 28): one HTTPS request through the egress proxy to a loopback server with a
 * credential bound to it (the proxy terminates the client's TLS, puts the secret in, and opens its own TLS to the
 * server) against the same request through today's opaque tunnel (the client's TLS goes to the server itself),
 * paired and interleaved in one run. Target: at most 5 ms added at the median.
 *
 * The client speaks to the proxy's socket as the sandbox's bridge does (its call line, then CONNECT); the client,
 * the proxy and the server share this process, so the figures are of the work, not of a sandbox start.
 *
 * @module
 */
import net from "node:net";
import tls from "node:tls";
import { EgressProxy } from "../../src/sandbox/egress_proxy.ts";
import { CertificateAuthority } from "../../src/sandbox/run_ca.ts";
import { type CallCredential, newPlaceholder } from "../../src/manifest/credentials.ts";
import { shuffled } from "./sandbox_bench.ts";

/** The issue's target: milliseconds the broker may add to a request at the median. */
export const TARGET_ADDED_MS = 5;
const ROUNDS = 40;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** One request, as a client in the sandbox makes it: through the proxy's socket, CONNECT, TLS, GET, the answer. */
function request(
  socket: string,
  token: string,
  port: number,
  ca: string,
  authorization: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const conn = net.connect({ path: socket });
    conn.once("error", reject);
    conn.write(
      `toolgate-call ${token}\r\nCONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`,
    );
    let head = "";
    const onData = (chunk: Uint8Array) => {
      head += new TextDecoder().decode(chunk);
      if (!head.includes("\r\n\r\n")) return;
      conn.off("data", onData);
      if (!head.startsWith("HTTP/1.1 200")) return reject(new Error(head));
      const secure = tls.connect({ socket: conn, ca, host: "127.0.0.1" }, () => {
        secure.write(
          `GET /bench HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: ${authorization}\r\n` +
            "Connection: close\r\n\r\n",
        );
      });
      let answer = "";
      secure.on("data", (data: Uint8Array) => answer += new TextDecoder().decode(data));
      secure.once("error", reject);
      secure.once("end", () => {
        secure.destroy();
        resolve(answer);
      });
    };
    conn.on("data", onData);
  });
}

/**
 * Paired, interleaved requests through the broker and through the tunnel: the medians of each, and the median of
 * the paired differences (what the broker adds).
 */
export async function benchBroker(): Promise<Record<string, number>> {
  const upstreamCa = await CertificateAuthority.create("toolgate bench upstream CA");
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, ...await upstreamCa.issue("127.0.0.1") },
    (req) => new Response(`got ${req.headers.get("authorization")?.length ?? 0}`),
  );
  const port = server.addr.port;
  const dir = await Deno.makeTempDir({ prefix: "toolgate_bench_broker_" });
  const proxy = EgressProxy.start(`${dir}/proxy.sock`, { upstreamCa: [upstreamCa.cert] });
  const host = `127.0.0.1:${port}`;
  const credential: CallCredential = {
    binding: { secret: "BENCH_TOKEN", env: "BENCH_TOKEN", hosts: [host], header: "Authorization" },
    value: "bench-secret-value-0123456789",
    placeholder: newPlaceholder(),
  };
  const tunnel = proxy.register([host]);
  const broker = proxy.register([host], undefined, [credential]);
  const runCa = (await proxy.authority()).cert;
  const viaTunnel = () => request(proxy.socket, tunnel.token, port, upstreamCa.cert, "Bearer plain");
  const viaBroker = () => request(proxy.socket, broker.token, port, runCa, credential.placeholder);
  try {
    // Warm both paths (the host's certificate is made at the first brokered request).
    for (let i = 0; i < 3; i++) {
      if (!(await viaTunnel()).includes("200 OK")) throw new Error("the tunnel's request failed");
      if (!(await viaBroker()).includes("200 OK")) throw new Error("the broker's request failed");
    }
    const times = { tunnel: [] as number[], broker: [] as number[] };
    const added: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const pair: Record<string, number> = {};
      for (const [name, run] of shuffled([["tunnel", viaTunnel], ["broker", viaBroker]] as const)) {
        const started = performance.now();
        await run();
        pair[name] = performance.now() - started;
        times[name].push(pair[name]);
      }
      added.push(pair.broker - pair.tunnel);
    }
    const result = {
      tunnel_median_ms: median(times.tunnel),
      broker_median_ms: median(times.broker),
      added_median_ms: median(added),
      target_added_ms: TARGET_ADDED_MS,
    };
    return result;
  } finally {
    tunnel.unregister();
    broker.unregister();
    proxy.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) console.log(await benchBroker());
