// The egress proxy routes each plain-HTTP request of a kept-alive connection by its own target. Before the fix,
// the proxy checked the first request's host, then piped the rest of the client's connection to that host: a
// second request naming another host went to the first one, unchecked (a host not in the list got nothing
// only because the bytes went to the first host instead).
import assert from "node:assert/strict";
import { join } from "node:path";
import { EgressProxy } from "../../src/sandbox/egress_proxy.ts";
import { type EgressDecision } from "../../src/sandbox/proxy_settings.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A loopback server that answers with its name and the path it was asked for, keeping its connections alive. */
function named(name: string) {
  const paths: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const path = new URL(request.url).pathname;
    paths.push(path);
    return new Response(`${name}${path}`);
  });
  return { server, paths, port: server.addr.port };
}

/** Reads one answer (head and a Content-Length body) from `conn`, leaving the connection open. */
async function readAnswer(conn: Deno.Conn): Promise<{ status: number; body: string }> {
  let bytes = new Uint8Array();
  const more = async () => {
    const chunk = new Uint8Array(4096);
    const n = await conn.read(chunk);
    if (n === null) throw new Error(`the proxy closed the connection after: ${decoder.decode(bytes)}`);
    const next = new Uint8Array(bytes.length + n);
    next.set(bytes);
    next.set(chunk.subarray(0, n), bytes.length);
    bytes = next;
  };
  for (;;) {
    const text = decoder.decode(bytes);
    const end = text.indexOf("\r\n\r\n");
    if (end !== -1) {
      const head = text.slice(0, end);
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? "0");
      if (bytes.length >= end + 4 + length) {
        return {
          status: Number(head.split(" ")[1]),
          body: decoder.decode(bytes.subarray(end + 4, end + 4 + length)),
        };
      }
    }
    await more();
  }
}

Deno.test("egress proxy: each request of a kept-alive connection goes to the host it names, checked on its own", async () => {
  const a = named("a");
  const b = named("b");
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const dir = await Deno.makeTempDir({ prefix: "toolgate_keepalive_" });
  const proxy = EgressProxy.start(join(dir, "proxy.sock"));
  const decisions: EgressDecision[] = [];
  const { token, unregister } = proxy.register(
    [`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`],
    (decision) => decisions.push(decision),
  );
  const conn = await Deno.connect({ transport: "unix", path: proxy.socket });
  try {
    const request = (port: number, path: string) =>
      conn.write(
        encoder.encode(`GET http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`),
      );
    await conn.write(encoder.encode(`toolgate-call ${token}\r\n`));
    await request(a.port, "/one");
    assert.deepEqual(await readAnswer(conn), { status: 200, body: "a/one" });
    // The same connection, another allowed host: it reaches that host, not the first one.
    await request(b.port, "/two");
    assert.deepEqual(await readAnswer(conn), { status: 200, body: "b/two" });
    await request(a.port, "/three");
    assert.deepEqual(await readAnswer(conn), { status: 200, body: "a/three" });
    assert.deepEqual(a.paths, ["/one", "/three"]);
    assert.deepEqual(b.paths, ["/two"]);
    // A host not in the list, on the same connection: refused by the proxy, reaching neither server.
    await request(closedPort, "/four");
    const refused = await readAnswer(conn);
    assert.equal(refused.status, 403);
    assert.match(refused.body, /not in this tool's host list/);
    assert.deepEqual([...a.paths, ...b.paths], ["/one", "/three", "/two"]);
    assert.deepEqual(
      decisions.map((d) => `${d.port === a.port ? "a" : d.port === b.port ? "b" : "other"} ${d.allowed}`),
      ["a true", "b true", "a true", "other false"],
    );
  } finally {
    conn.close();
    unregister();
    proxy.close();
    await a.server.shutdown();
    await b.server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("egress proxy: a request body and a pipelined next request each go where they belong", async () => {
  const bodies: string[] = [];
  const a = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    bodies.push(`a:${await request.text()}`);
    return new Response("from-a");
  });
  const b = named("b");
  const dir = await Deno.makeTempDir({ prefix: "toolgate_keepalive_" });
  const proxy = EgressProxy.start(join(dir, "proxy.sock"));
  const { token, unregister } = proxy.register([`127.0.0.1:${a.addr.port}`, `127.0.0.1:${b.port}`]);
  const conn = await Deno.connect({ transport: "unix", path: proxy.socket });
  try {
    const chunked = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    // Three requests written at once: a chunked body, a Content-Length body, then another host.
    await conn.write(encoder.encode(
      `toolgate-call ${token}\r\n` +
        `POST http://127.0.0.1:${a.addr.port}/c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}` +
        `POST http://127.0.0.1:${a.addr.port}/l HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz` +
        `GET http://127.0.0.1:${b.port}/after HTTP/1.1\r\nHost: y\r\n\r\n`,
    ));
    assert.deepEqual(await readAnswer(conn), { status: 200, body: "from-a" });
    assert.deepEqual(await readAnswer(conn), { status: 200, body: "from-a" });
    assert.deepEqual(await readAnswer(conn), { status: 200, body: "b/after" });
    assert.deepEqual(bodies, ["a:hello world", "a:xyz"]);
    assert.deepEqual(b.paths, ["/after"]);
  } finally {
    conn.close();
    unregister();
    proxy.close();
    await a.shutdown();
    await b.server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("egress proxy: a credential's placeholder in a plain-HTTP body cuts the connection before it goes up", async () => {
  const got: string[] = [];
  const a = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    got.push(await request.text());
    return new Response("from-a");
  });
  const dir = await Deno.makeTempDir({ prefix: "toolgate_keepalive_" });
  const proxy = EgressProxy.start(join(dir, "proxy.sock"));
  const placeholder = `toolgate-cred-${"0".repeat(32)}`;
  const decisions: EgressDecision[] = [];
  const { token, unregister } = proxy.register(
    [`127.0.0.1:${a.addr.port}`],
    (decision) => decisions.push(decision),
    [{
      binding: { secret: "K", env: "K", hosts: ["api.example.com"], header: "X-Key", format: "{}" },
      value: "the-value-1234",
      placeholder,
    }],
  );
  const conn = await Deno.connect({ transport: "unix", path: proxy.socket });
  try {
    const body = `k=${placeholder}`;
    await conn.write(encoder.encode(
      `toolgate-call ${token}\r\nPOST http://127.0.0.1:${a.addr.port}/p HTTP/1.1\r\nHost: x\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`,
    ));
    // The proxy cuts both sides: the client reads the end of its connection.
    assert.equal(await conn.read(new Uint8Array(256)).catch(() => null), null);
    assert.ok(got.every((text) => !text.includes(placeholder)), JSON.stringify(got));
    assert.ok(
      decisions.some((d) => d.port === a.addr.port && /plain HTTP request's body/.test(d.reason ?? "")),
      JSON.stringify(decisions),
    );
  } finally {
    conn.close();
    unregister();
    proxy.close();
    await a.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
