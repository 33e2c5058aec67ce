/**
 * http_fetch against a loopback server started here: every refused address class is refused before any request
 * reaches the server, the allow-hosts variable opens named hosts, redirects are checked again, and the size cap,
 * the timeout, HEAD and base64 work.
 */
import assert from "node:assert/strict";
import { assertFailure, assertOk, makeWorkspace, runTool, type ToolRun } from "./helpers.ts";
import { parseHostList } from "../../src/contract/host_list.ts";

const ALLOW = "TOOLGATE_FETCH_ALLOW_HOSTS";

interface TestServer {
  port: number;
  /** The paths requested so far. */
  hits: string[];
}

/** Runs `body` with a loopback server on 127.0.0.1 (a fresh port) and a workspace to run the tool in. */
async function withServer(body: (server: TestServer, cwd: string) => Promise<void>): Promise<void> {
  const hits: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    hits.push(url.pathname);
    const redirect = (to: string) => new Response(null, { status: 302, headers: { location: to } });
    if (url.pathname === "/redirect") return redirect(url.searchParams.get("to")!);
    const chain = /^\/chain\/(\d+)$/.exec(url.pathname);
    if (chain) {
      return Number(chain[1]) === 0
        ? new Response("end of chain")
        : redirect(`/chain/${Number(chain[1]) - 1}`);
    }
    switch (url.pathname) {
      case "/host":
        return new Response(request.headers.get("host"));
      case "/big":
        return new Response("a".repeat(100_000));
      case "/chunked": {
        // A streamed body goes out chunked.
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 10; i++) controller.enqueue(new TextEncoder().encode("b".repeat(10_000)));
            controller.close();
          },
        });
        return new Response(stream);
      }
      case "/binary":
        return new Response(new Uint8Array([0, 255, 1]), {
          headers: { "content-type": "application/octet-stream" },
        });
      case "/slow":
        await released;
        return new Response("too late");
      default:
        return new Response("hello", {
          headers: { "x-test": "yes", "content-type": "text/plain; charset=utf-8" },
        });
    }
  });
  const workspace = await makeWorkspace();
  try {
    await body({ port: server.addr.port, hits }, workspace.ws);
  } finally {
    release();
    await server.shutdown();
    await workspace.cleanup();
  }
}

function fetchRun(cwd: string, args: Record<string, unknown>, allow?: string): Promise<ToolRun> {
  return runTool("http_fetch", args, { cwd, env: allow === undefined ? {} : { [ALLOW]: allow } });
}

/**
 * This machine's own IPv4 addresses, from the kernel's routing trie (Deno.networkInterfaces would need
 * --allow-sys, which the test task does not grant, and reading /proc directly needs every permission).
 */
async function localIPv4Addresses(): Promise<string[]> {
  const out = await new Deno.Command("cat", { args: ["/proc/net/fib_trie"], stdout: "piped", stderr: "null" })
    .output();
  const found = new Set<string>();
  let last: string | undefined;
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const address = /\|-- (\d+\.\d+\.\d+\.\d+)$/.exec(line.trim())?.[1];
    if (address !== undefined) last = address;
    else if (line.includes("/32 host LOCAL") && last !== undefined) found.add(last);
  }
  return [...found];
}

/** Is the dotted quad in one of the non-global IPv4 ranges a host's own address is likely to be in? */
function isNonGlobalV4(address: string): boolean {
  const [a, b, c] = address.split(".").map(Number);
  return a === 10 || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b < 128) || (a === 169 && b === 254) || (a === 192 && b === 0 && c === 2) ||
    (a === 198 && (b === 18 || b === 19)) || (a === 198 && b === 51 && c === 100) ||
    (a === 203 && b === 0 && c === 113) || (a === 192 && b === 0 && c === 0);
}

/** Runs `count` at a time: enough to be quick, few enough for two shared cores. */
async function inBatches<T, R>(items: T[], count: number, each: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += count) {
    results.push(...await Promise.all(items.slice(i, i + count).map(each)));
  }
  return results;
}

Deno.test("http_fetch: every refused address class is refused, and no request reaches the server", async () => {
  await withServer(async ({ port, hits }, cwd) => {
    const p = port;
    const refused: Array<[klass: string, url: string]> = [
      ["loopback", `http://127.0.0.1:${p}/`],
      ["loopback /8", `http://127.1.2.3:${p}/`],
      ["loopback by DNS name", `http://localhost:${p}/`],
      ["loopback, decimal form", `http://2130706433:${p}/`],
      ["loopback, hex short form", `http://0x7f.1:${p}/`],
      ["loopback IPv6", `http://[::1]:${p}/`],
      ["unspecified", `http://0.0.0.0:${p}/`],
      ["unspecified, short form", `http://0:${p}/`],
      ["unspecified IPv6", `http://[::]:${p}/`],
      ["IPv4-mapped loopback", `http://[::ffff:127.0.0.1]:${p}/`],
      ["IPv4-mapped unspecified", `http://[::ffff:0.0.0.0]:${p}/`],
      ["IPv4-mapped private 10/8", `http://[::ffff:10.0.0.1]:${p}/`],
      ["IPv4-mapped private 172.16/12", `http://[::ffff:172.16.0.1]:${p}/`],
      ["IPv4-mapped private 192.168/16", `http://[::ffff:192.168.1.1]:${p}/`],
      ["IPv4-mapped link-local", `http://[::ffff:169.254.169.254]:${p}/`],
      ["IPv4-mapped CGNAT", `http://[::ffff:100.64.0.1]:${p}/`],
      ["IPv4-mapped multicast", `http://[::ffff:224.0.0.1]:${p}/`],
      ["private 10/8", `http://10.0.0.1:${p}/`],
      ["private 172.16/12", `http://172.16.0.1:${p}/`],
      ["private 172.16/12, top", `http://172.31.255.254:${p}/`],
      ["private 192.168/16", `http://192.168.1.1:${p}/`],
      ["private IPv6 fc00::/7", `http://[fc00::1]:${p}/`],
      ["private IPv6 fd00::", `http://[fd12:3456::1]:${p}/`],
      ["link-local 169.254/16", `http://169.254.169.254:${p}/`],
      ["link-local IPv6 fe80::/10", `http://[fe80::1]:${p}/`],
      ["CGNAT 100.64/10", `http://100.64.0.1:${p}/`],
      ["CGNAT 100.64/10, top", `http://100.127.255.254:${p}/`],
      ["multicast 224/4", `http://224.0.0.1:${p}/`],
      ["multicast 239/8", `http://239.255.255.250:${p}/`],
      ["multicast IPv6 ff00::/8", `http://[ff02::1]:${p}/`],
      ["NAT64 of loopback", `http://[64:ff9b::127.0.0.1]:${p}/`],
      ["TEST-NET-1 192.0.2/24", `http://192.0.2.1:${p}/`],
      ["TEST-NET-2 198.51.100/24", `http://198.51.100.1:${p}/`],
      ["TEST-NET-3 203.0.113/24", `http://203.0.113.1:${p}/`],
      ["benchmarking 198.18/15", `http://198.19.255.254:${p}/`],
      ["IETF protocol assignments 192.0.0/24", `http://192.0.0.9:${p}/`],
      ["6to4 relay anycast 192.88.99/24", `http://192.88.99.1:${p}/`],
      ["AS112 192.31.196/24", `http://192.31.196.1:${p}/`],
      ["reserved 240/4", `http://240.0.0.1:${p}/`],
      ["limited broadcast", `http://255.255.255.255:${p}/`],
      ["IPv4-mapped public address", `http://[::ffff:8.8.8.8]:${p}/`],
      ["IPv4-mapped TEST-NET", `http://[::ffff:192.0.2.1]:${p}/`],
      ["documentation IPv6 2001:db8::/32", `http://[2001:db8::1]:${p}/`],
      ["Teredo 2001::/32", `http://[2001::1]:${p}/`],
      ["IETF protocol assignments 2001::/23", `http://[2001:1ff::1]:${p}/`],
      ["NAT64 local use 64:ff9b:1::/48", `http://[64:ff9b:1::1]:${p}/`],
      ["discard-only 100::/64", `http://[100::1]:${p}/`],
      ["6to4 of TEST-NET", `http://[2002:c000:201::1]:${p}/`],
      ["documentation IPv6 3fff::/20", `http://[3fff::1]:${p}/`],
      ["not global unicast 4000::/3", `http://[4000::1]:${p}/`],
    ];
    const started = Date.now();
    const runs = await inBatches(refused, 4, ([, url]) => fetchRun(cwd, { url, timeout_ms: 5000 }));
    for (const [i, run] of runs.entries()) {
      const [klass, url] = refused[i];
      assert.equal(run.code, 1, `${klass} (${url}) was not refused: ${run.stdout}`);
      const envelope = assertFailure(run, "rejected", "url");
      assert.equal(envelope.retryable, false);
      assert.match(String(envelope.message), /refused to connect/, `${klass}: ${envelope.message}`);
    }
    assert.ok(Date.now() - started < 60_000, "refusals happen before any connection attempt");
    assert.deepEqual(hits, [], "no request reached the server");
  });
});

Deno.test("http_fetch: this machine's own special-purpose addresses are refused; allowing the host opens them", async () => {
  const hits: string[] = [];
  const server = Deno.serve({ hostname: "0.0.0.0", port: 0, onListen() {} }, (request) => {
    hits.push(new URL(request.url).pathname);
    return new Response("reached");
  });
  const workspace = await makeWorkspace();
  try {
    const port = server.addr.port;
    // Such as 192.0.2.2 (TEST-NET-1) on our machines, or a private address on CI: none of them is loopback.
    const own = (await localIPv4Addresses()).filter((a) => !a.startsWith("127.") && isNonGlobalV4(a));
    for (const address of own) {
      const run = await fetchRun(workspace.ws, { url: `http://${address}:${port}/own`, timeout_ms: 5000 });
      const envelope = assertFailure(run, "rejected", "url");
      assert.match(String(envelope.message), /refused to connect/);
      assert.deepEqual(hits, [], `${address}: the request reached this machine's server`);
      const allowed = assertOk(
        await fetchRun(workspace.ws, { url: `http://${address}:${port}/allowed` }, `${address}:${port}`),
      );
      assert.equal(allowed.body, "reached");
      hits.length = 0;
    }
  } finally {
    await server.shutdown();
    await workspace.cleanup();
  }
});

Deno.test("http_fetch: an allowed host is fetched, with status, headers and body", async () => {
  await withServer(async ({ port, hits }, cwd) => {
    const result = assertOk(
      await fetchRun(cwd, { url: `http://127.0.0.1:${port}/hello?x=1` }, `example.org, 127.0.0.1:${port}`),
    );
    assert.equal(result.status, 200);
    assert.equal(result.status_text, "OK");
    assert.equal(result.body, "hello");
    assert.equal(result.headers["x-test"], "yes");
    assert.equal(result.encoding, "text");
    assert.equal(result.bytes, 5);
    assert.equal(result.truncated, false);
    assert.equal(result.url, `http://127.0.0.1:${port}/hello?x=1`);
    assert.deepEqual(result.redirects, []);
    assert.deepEqual(hits, ["/hello"]);
  });
});

Deno.test("http_fetch: an allowed name is resolved once and the Host header keeps the name", async () => {
  await withServer(async ({ port }, cwd) => {
    const result = assertOk(await fetchRun(cwd, { url: `http://LocalHost:${port}/host` }, "localhost"));
    assert.equal(result.body, `localhost:${port}`);
  });
});

Deno.test("http_fetch: an allow entry for another port or host does not open this one", async () => {
  await withServer(async ({ port, hits }, cwd) => {
    for (const allow of ["127.0.0.1:1", "127.0.0.2", "localhost", ""]) {
      assertFailure(await fetchRun(cwd, { url: `http://127.0.0.1:${port}/` }, allow), "rejected", "url");
    }
    assert.deepEqual(hits, []);
  });
});

Deno.test("http_fetch: its allow list reads as --approve-hosts does (the same parser): a port's leading zeros, a bad entry", async () => {
  await withServer(async ({ port, hits }, cwd) => {
    const url = `http://127.0.0.1:${port}/hello`;
    // The policy reads `127.0.0.1:0PORT` as PORT; so does the tool, and the host approved is the host dialled.
    assert.deepEqual(parseHostList(`127.0.0.1:0${port}`), [{ host: "127.0.0.1", port: String(port) }]);
    assert.equal(assertOk(await fetchRun(cwd, { url }, `127.0.0.1:0${port}`)).body, "hello");
    // An entry that is not a host is said, not silently never matched.
    const bad = assertFailure(await fetchRun(cwd, { url }, "127.0.0.1 :80"), "execution_error");
    assert.match(String(bad.message), /^TOOLGATE_FETCH_ALLOW_HOSTS: "127\.0\.0\.1 :80" is not a host/);
    assert.deepEqual(hits, ["/hello"]);
  });
});

Deno.test("http_fetch: redirects are followed, relative ones too, and each hop is checked again", async () => {
  await withServer(async ({ port, hits }, cwd) => {
    const allow = `127.0.0.1:${port}`;
    const base = `http://127.0.0.1:${port}`;
    const followed = assertOk(await fetchRun(cwd, { url: `${base}/redirect?to=/landing` }, allow));
    assert.equal(followed.status, 200);
    assert.equal(followed.url, `${base}/landing`);
    assert.deepEqual(followed.redirects, [`${base}/landing`]);
    hits.length = 0;
    const targets = [
      `http://localhost:${port}/secret`,
      `http://[::ffff:127.0.0.1]:${port}/secret`,
      `http://0.0.0.0:${port}/secret`,
      `http://127.0.0.1:${port + 1}/secret`,
      `http://169.254.169.254/latest/meta-data`,
      `http://10.0.0.1/secret`,
      "file:///etc/passwd",
    ];
    for (const target of targets) {
      const run = await fetchRun(cwd, {
        url: `${base}/redirect?to=${encodeURIComponent(target)}`,
        timeout_ms: 5000,
      }, allow);
      const envelope = assertFailure(run, "rejected", "url");
      assert.match(String(envelope.message), /^redirect 1 to /, String(envelope.message));
    }
    assert.deepEqual(hits.filter((h) => h !== "/redirect"), [], "no refused hop was requested");
  });
});

Deno.test("http_fetch: at most 5 redirects; follow_redirects false returns the redirect itself", async () => {
  await withServer(async ({ port }, cwd) => {
    const allow = `127.0.0.1:${port}`;
    const five = assertOk(await fetchRun(cwd, { url: `http://127.0.0.1:${port}/chain/5` }, allow));
    assert.equal(five.body, "end of chain");
    assert.equal(five.redirects.length, 5);
    const six = assertFailure(
      await fetchRun(cwd, { url: `http://127.0.0.1:${port}/chain/6` }, allow),
      "execution_error",
    );
    assert.match(String(six.message), /more than 5 redirects/);
    const manual = assertOk(
      await fetchRun(cwd, { url: `http://127.0.0.1:${port}/chain/1`, follow_redirects: false }, allow),
    );
    assert.equal(manual.status, 302);
    assert.equal(manual.headers.location, "/chain/0");
  });
});

Deno.test("http_fetch: the size cap cuts a long body, with and without Content-Length", async () => {
  await withServer(async ({ port }, cwd) => {
    const allow = `127.0.0.1:${port}`;
    const sized = assertOk(
      await fetchRun(cwd, { url: `http://127.0.0.1:${port}/big`, max_bytes: 1000 }, allow),
    );
    assert.equal(sized.bytes, 1000);
    assert.equal(sized.body, "a".repeat(1000));
    assert.equal(sized.truncated, true);
    const chunked = assertOk(
      await fetchRun(cwd, { url: `http://127.0.0.1:${port}/chunked`, max_bytes: 25_000 }, allow),
    );
    assert.equal(chunked.bytes, 25_000);
    assert.equal(chunked.truncated, true);
    const whole = assertOk(await fetchRun(cwd, { url: `http://127.0.0.1:${port}/chunked` }, allow));
    assert.equal(whole.body, "b".repeat(100_000));
    assert.equal(whole.truncated, false);
    assertFailure(
      await fetchRun(cwd, { url: `http://127.0.0.1:${port}/big`, max_bytes: 0 }, allow),
      "invalid_args",
      "max_bytes",
    );
  });
});

Deno.test("http_fetch: the timeout ends a slow response", async () => {
  await withServer(async ({ port }, cwd) => {
    const started = Date.now();
    const run = await fetchRun(
      cwd,
      { url: `http://127.0.0.1:${port}/slow`, timeout_ms: 500 },
      `127.0.0.1:${port}`,
    );
    assertFailure(run, "timeout");
    assert.ok(Date.now() - started < 15_000);
  });
});

Deno.test("http_fetch: HEAD has no body; base64 carries binary bodies", async () => {
  await withServer(async ({ port }, cwd) => {
    const allow = `127.0.0.1:${port}`;
    const head = assertOk(
      await fetchRun(cwd, { url: `http://127.0.0.1:${port}/big`, method: "head" }, allow),
    );
    assert.equal(head.status, 200);
    assert.equal(head.body, "");
    assert.equal(head.headers["content-length"], "100000");
    const binary = assertOk(
      await fetchRun(cwd, { url: `http://127.0.0.1:${port}/binary`, encoding: "base64" }, allow),
    );
    assert.equal(binary.body, "AP8B");
    assert.equal(binary.bytes, 3);
  });
});

Deno.test("http_fetch: bad URLs and arguments are invalid_args naming the field", async () => {
  const workspace = await makeWorkspace();
  try {
    const cwd = workspace.ws;
    assertFailure(await fetchRun(cwd, { url: "not a url" }), "invalid_args", "url");
    assertFailure(await fetchRun(cwd, { url: "ftp://example.com/" }), "invalid_args", "url");
    assertFailure(await fetchRun(cwd, { url: "file:///etc/passwd" }), "invalid_args", "url");
    assertFailure(await fetchRun(cwd, { url: "http://user:pw@example.com/" }), "invalid_args", "url");
    assertFailure(await fetchRun(cwd, {}), "invalid_args", "url");
    assertFailure(
      await fetchRun(cwd, { url: "http://example.com/", method: "POST" }),
      "invalid_args",
      "method",
    );
    assertFailure(
      await fetchRun(cwd, { url: "http://example.com/", headers: {} }),
      "invalid_args",
      "headers",
    );
  } finally {
    await workspace.cleanup();
  }
});

Deno.test("http_fetch: an answer whose framing the strict reader refuses is an execution_error naming it", async () => {
  // A raw server: each connection gets the answer its request path names, as bytes.
  const answers: Record<string, string> = {
    "/hex": "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n0123456789abcdef",
    "/exponent": "HTTP/1.1 200 OK\r\nContent-Length: 1e1\r\n\r\n0123456789",
    "/two": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 10\r\n\r\nhello12345",
    "/xchunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "/both":
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "/bare-lf": "HTTP/1.1 200 OK\nContent-Length: 5\n\nhello",
  };
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of listener) {
      (async () => {
        try {
          const chunk = new Uint8Array(4096);
          let seen = "";
          while (!seen.includes("\r\n\r\n")) {
            const n = await conn.read(chunk);
            if (n === null) return;
            seen += new TextDecoder().decode(chunk.subarray(0, n));
          }
          const path = /^GET (\S+) /.exec(seen)?.[1] ?? "";
          await conn.write(new TextEncoder().encode(answers[path] ?? "HTTP/1.1 404 Not Found\r\n\r\n"));
        } catch {
          // The tool went away.
        } finally {
          conn.close();
        }
      })();
    }
  })().catch(() => {});
  const workspace = await makeWorkspace();
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    const runs = await inBatches(
      Object.keys(answers),
      3,
      (path) => fetchRun(workspace.ws, { url: `http://127.0.0.1:${port}${path}` }, `127.0.0.1:${port}`),
    );
    const messages = runs.map((run) => String(assertFailure(run, "execution_error").message));
    assert.match(messages[0], /Content-Length "0x10" is not a number of bytes/);
    assert.match(messages[1], /Content-Length "1e1" is not a number of bytes/);
    assert.match(messages[2], /more than one Content-Length/);
    assert.match(messages[3], /Transfer-Encoding "xchunked": only "chunked" is read/);
    assert.match(messages[4], /both Transfer-Encoding and Content-Length/);
    assert.match(messages[5], /a bare LF/);
  } finally {
    listener.close();
    await serving;
    await workspace.cleanup();
  }
});
