// The credential broker keeps a bound value from the tool whatever the answer's framing, and sends it to the bound
// host only (issue 38). Before the fix the broker masked the answer's raw bytes: a chunked answer whose chunk
// boundary fell inside the reflected value, a gzip answer and a ranged answer each gave the tool the value (its
// client joins the chunks, inflates, joins the ranges); the tool's own `Host` and `X-Forwarded-Host` went up beside
// the value, and a head with a bare LF or two Content-Lengths was sent on as it came.
//
// Real pieces: the egress proxy on its Unix socket, the tool's TLS through it trusting the run's CA, and an HTTPS
// server on loopback (under a test CA the proxy is told to trust) that reflects the Authorization it got.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import net from "node:net";
import tls from "node:tls";
import { gunzipSync, gzipSync } from "node:zlib";
import { join } from "node:path";
import { EgressProxy } from "../../src/sandbox/egress_proxy.ts";
import { type EgressDecision } from "../../src/sandbox/proxy_settings.ts";
import { CertificateAuthority } from "../../src/sandbox/run_ca.ts";
import { type CallCredential, newPlaceholder } from "../../src/manifest/credentials.ts";

const encoder = new TextEncoder();

/** One request as the upstream got it: its head's text and its body. */
interface Got {
  readonly head: string;
  readonly body: string;
}

type Answer = (got: Got, value: string) => Uint8Array | string | AsyncIterable<string>;

/** An HTTPS server on loopback that keeps every request it reads and answers it with `answer`. */
async function upstream(answer: { current: Answer }) {
  const ca = await CertificateAuthority.create("toolgate test upstream CA");
  const pair = await ca.issue("127.0.0.1");
  const listener = Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: pair.cert, key: pair.key });
  const got: Got[] = [];
  const serve = async (conn: Deno.Conn) => {
    try {
      let bytes = Buffer.alloc(0);
      const chunk = new Uint8Array(64 * 1024);
      let end = -1;
      while ((end = bytes.indexOf("\r\n\r\n")) === -1) {
        const n = await conn.read(chunk);
        if (n === null) return;
        bytes = Buffer.concat([bytes, chunk.subarray(0, n)]);
      }
      const head = bytes.subarray(0, end).toString("latin1");
      const length = Number(/^content-length:\s*(\d+)/im.exec(head)?.[1] ?? 0);
      while (bytes.length < end + 4 + length) {
        const n = await conn.read(chunk);
        if (n === null) break;
        bytes = Buffer.concat([bytes, chunk.subarray(0, n)]);
      }
      const one = { head, body: bytes.subarray(end + 4).toString("latin1") };
      got.push(one);
      const value = /^authorization:\s*Bearer (.*)$/im.exec(head)?.[1]?.trim() ?? "";
      const out = answer.current(one, value);
      if (typeof out === "string") await conn.write(encoder.encode(out));
      else if (out instanceof Uint8Array) await conn.write(out);
      else for await (const part of out) await conn.write(encoder.encode(part));
    } catch {
      // The proxy went away.
    } finally {
      try {
        conn.close();
      } catch {
        // Closed.
      }
    }
  };
  (async () => {
    for await (const conn of listener) serve(conn);
  })().catch(() => {});
  return { ca, got, port: (listener.addr as Deno.NetAddr).port, close: () => listener.close() };
}

interface Rig {
  readonly value: string;
  readonly port: number;
  readonly got: Got[];
  readonly decisions: EgressDecision[];
  readonly answer: { current: Answer };
  /**
   * Sends `request` (raw bytes) through a CONNECT tunnel, as the tool would; every byte the tool got back (each
   * piece to `onData` too, as it comes).
   */
  send(request: string | Uint8Array, onData?: (bytes: Buffer) => void): Promise<Buffer>;
  close(): Promise<void>;
}

async function rig(stored?: string): Promise<Rig> {
  const answer: { current: Answer } = { current: () => "HTTP/1.1 204 No Content\r\n\r\n" };
  const server = await upstream(answer);
  const dir = await Deno.makeTempDir({ prefix: "toolgate_broker_framing_" });
  const proxy = EgressProxy.start(join(dir, "proxy.sock"), { upstreamCa: [server.ca.cert] });
  const value = stored ?? `canaryV4lue${crypto.randomUUID().replaceAll("-", "")}`;
  const credential: CallCredential = {
    binding: {
      secret: "CANARY_TOKEN",
      env: "CANARY_TOKEN",
      hosts: [`127.0.0.1:${server.port}`],
      header: "Authorization",
      format: "Bearer {}",
    },
    value,
    placeholder: newPlaceholder(),
  };
  const decisions: EgressDecision[] = [];
  const { token, unregister } = proxy.register(
    [`127.0.0.1:${server.port}`],
    (d) => decisions.push(d),
    [credential],
  );
  const runCa = (await proxy.authority()).cert;
  const send = async (request: string | Uint8Array, onData?: (bytes: Buffer) => void): Promise<Buffer> => {
    const raw = net.connect(proxy.socket);
    await new Promise<void>((resolve, reject) => raw.once("connect", resolve).once("error", reject));
    raw.write(
      `toolgate-call ${token}\r\nCONNECT 127.0.0.1:${server.port} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`,
    );
    // The proxy's answer to the CONNECT, read to its end before TLS starts.
    let head = Buffer.alloc(0);
    while (head.indexOf("\r\n\r\n") === -1) {
      const chunk = await new Promise<Buffer>((resolve) => raw.once("data", resolve));
      head = Buffer.concat([head, chunk]);
    }
    raw.pause();
    assert.match(head.toString(), /^HTTP\/1\.1 200/);
    const socket = tls.connect({ socket: raw, ca: runCa, host: "127.0.0.1", servername: undefined });
    await new Promise<void>((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
    socket.write(typeof request === "string" ? Buffer.from(request, "latin1") : request);
    const parts: Buffer[] = [];
    for await (const chunk of socket) {
      parts.push(chunk as Buffer);
      onData?.(Buffer.concat(parts));
    }
    return Buffer.concat(parts);
  };
  return {
    value,
    port: server.port,
    got: server.got,
    decisions,
    answer,
    send,
    close: async () => {
      unregister();
      proxy.close();
      server.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/**
 * What a lenient client makes of an answer: its status, its head, and its body de-chunked and inflated as the
 * head says (the way curl --compressed or a browser joins it).
 */
function asClient(bytes: Buffer): { status: number; head: string; body: string } {
  const end = bytes.indexOf("\r\n\r\n");
  const head = bytes.subarray(0, end).toString("latin1");
  let body = bytes.subarray(end + 4);
  if (/^transfer-encoding:\s*chunked/im.test(head)) {
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const eol = body.indexOf("\r\n", at);
      const size = parseInt(body.subarray(at, eol).toString(), 16);
      if (!(size > 0)) break;
      parts.push(body.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  }
  if (/^content-encoding:\s*gzip/im.test(head)) body = gunzipSync(body);
  return { status: Number(head.split(" ")[1]), head, body: body.toString("latin1") };
}

const GET = (port: number, extra = "") => `GET /echo HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${extra}\r\n`;

Deno.test("broker: a value reflected in a chunked answer split at every offset never reaches the tool", async () => {
  const r = await rig();
  try {
    for (let cut = 1; cut < r.value.length; cut++) {
      r.answer.current = (_got, value) => {
        const text = `v=${value};`;
        const a = text.slice(0, 2 + cut);
        const b = text.slice(2 + cut);
        return `HTTP/1.1 200 OK\r\nX-Echo: ${value}\r\nTransfer-Encoding: chunked\r\n\r\n` +
          `${a.length.toString(16)}\r\n${a}\r\n${b.length.toString(16)}\r\n${b}\r\n0\r\n\r\n`;
      };
      const bytes = await r.send(GET(r.port));
      const answer = asClient(bytes);
      assert.equal(answer.status, 200, bytes.toString());
      assert.ok(!bytes.includes(r.value), `cut at ${cut}: the value reached the tool: ${bytes}`);
      assert.ok(
        !answer.body.includes(r.value),
        `cut at ${cut}: the tool's client joined the value: ${answer.body}`,
      );
      assert.equal(answer.body, `v=${"*".repeat(r.value.length)};`, `cut at ${cut}`);
      assert.match(answer.head, /^X-Echo: \*+$/m);
    }
    assert.equal(r.got.length, r.value.length - 1);
  } finally {
    await r.close();
  }
});

Deno.test("broker: an event stream reaches the tool as it comes, masked, and a length the server gave is kept", async () => {
  const r = await rig();
  try {
    let sawFirst: () => void = () => {};
    const first = new Promise<void>((resolve) => sawFirst = resolve);
    r.answer.current = async function* (_got, value) {
      yield "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
      const one = `data: one ${value}\n\n`;
      yield `${one.length.toString(16)}\r\n${one}\r\n`;
      // The next event waits until the tool has the first: an answer held whole would never end.
      const bound = setTimeout(() => sawFirst(), 20_000);
      await first;
      clearTimeout(bound);
      yield "b\r\ndata: two\n\n\r\n0\r\n\r\n";
    };
    let early = "";
    const bytes = await r.send(GET(r.port), (sofar) => {
      const at = sofar.indexOf("data: one");
      if (early === "" && at !== -1 && sofar.includes("\n\n", at)) {
        early = sofar.toString("latin1");
        sawFirst();
      }
    });
    assert.notEqual(early, "", "the first event did not reach the tool before the stream ended");
    assert.doesNotMatch(early, /data: two/, "the first event waited for the second");
    assert.ok(
      early.includes(`data: one ${"*".repeat(r.value.length)}\n\n`),
      `the first event's end was held: ${early}`,
    );
    const answer = asClient(bytes);
    assert.equal(answer.body, `data: one ${"*".repeat(r.value.length)}\n\ndata: two\n\n`);
    // A length the server gave, with nothing to decode, is the length the tool gets.
    r.answer.current = (_got, value) =>
      `HTTP/1.1 200 OK\r\nContent-Length: ${value.length + 2}\r\n\r\n[${value}]`;
    const sized = asClient(await r.send(GET(r.port)));
    assert.match(sized.head, new RegExp(`^Content-Length: ${r.value.length + 2}$`, "m"));
    assert.equal(sized.body, `[${"*".repeat(r.value.length)}]`);
  } finally {
    await r.close();
  }
});

Deno.test("broker: a gzip answer from a server that ignores Accept-Encoding is decoded and masked", async () => {
  const r = await rig();
  try {
    r.answer.current = (_got, value) => {
      const body = gzipSync(`token=${value}\n`.repeat(3));
      return Buffer.concat([
        Buffer.from(`HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: ${body.length}\r\n\r\n`),
        body,
      ]);
    };
    const bytes = await r.send(GET(r.port));
    const answer = asClient(bytes);
    assert.equal(answer.status, 200, bytes.toString());
    assert.ok(!answer.body.includes(r.value), `the value reached the tool: ${answer.body}`);
    assert.equal(answer.body, `token=${"*".repeat(r.value.length)}\n`.repeat(3));
    assert.doesNotMatch(answer.head, /content-encoding/i);
    // A coding the broker cannot decode is refused, not passed on.
    r.answer.current = () => "HTTP/1.1 200 OK\r\nContent-Encoding: zstd\r\nContent-Length: 4\r\n\r\nabcd";
    const refused = asClient(await r.send(GET(r.port)));
    assert.equal(refused.status, 502);
    assert.match(refused.body, /content coding "zstd"/);
  } finally {
    await r.close();
  }
});

Deno.test("broker: a Range answer cannot carry a piece of the value to the tool", async () => {
  const r = await rig();
  try {
    // A server that honours Range: asked for a few bytes at a time, it would give the value piece by piece.
    r.answer.current = (got, value) => {
      const range = /^range:\s*bytes=(\d+)-(\d+)$/im.exec(got.head);
      const text = `v=${value};`;
      if (range === null) return `HTTP/1.1 200 OK\r\nContent-Length: ${text.length}\r\n\r\n${text}`;
      const piece = text.slice(Number(range[1]), Number(range[2]) + 1);
      return `HTTP/1.1 206 Partial Content\r\nContent-Range: bytes ${range[1]}-${
        range[2]
      }/${text.length}\r\n` +
        `Content-Length: ${piece.length}\r\n\r\n${piece}`;
    };
    let joined = "";
    for (let from = 0; from < r.value.length + 3; from += 6) {
      const answer = asClient(await r.send(GET(r.port, `Range: bytes=${from}-${from + 5}\r\n`)));
      assert.notEqual(answer.status, 206, answer.head);
      joined += answer.body;
    }
    assert.ok(!joined.includes(r.value), `the tool joined the value from ranges: ${joined}`);
    assert.ok(r.got.every((g) => !/^(range|if-range):/im.test(g.head)), "a Range went up");
    // A server that answers 206 unasked: refused.
    r.answer.current = (_got, value) =>
      `HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-4/99\r\nContent-Length: 5\r\n\r\n${
        value.slice(0, 5)
      }`;
    const refused = asClient(await r.send(GET(r.port)));
    assert.equal(refused.status, 502);
    assert.match(refused.body, /partial answer/);
  } finally {
    await r.close();
  }
});

Deno.test("broker: the bound host's Host goes up with the value; another Host is refused, X-Forwarded-* dropped", async () => {
  const r = await rig();
  try {
    r.answer.current = () => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    const other = asClient(await r.send(`GET /a HTTP/1.1\r\nHost: other.example\r\n\r\n`));
    assert.equal(other.status, 421, other.head);
    assert.equal(r.got.length, 0, "a request naming another Host went up");
    const forwarded = asClient(
      await r.send(
        GET(
          r.port,
          "X-Forwarded-Host: other.example\r\nForwarded: host=other.example\r\nX-Forwarded-For: 1.2.3.4\r\n",
        ),
      ),
    );
    assert.equal(forwarded.status, 200);
    const noHost = asClient(await r.send(`GET /b HTTP/1.1\r\nAccept: */*\r\n\r\n`));
    assert.equal(noHost.status, 200);
    assert.equal(r.got.length, 2);
    for (const got of r.got) {
      assert.ok(got.head.includes(`Bearer ${r.value}`), got.head);
      assert.deepEqual(got.head.match(/^host:.*$/gim), [`Host: 127.0.0.1:${r.port}`], got.head);
      assert.doesNotMatch(got.head, /^(forwarded|x-forwarded-[a-z-]*):/im, got.head);
    }
    assert.ok(
      r.decisions.some((d) => /Host "other\.example"/.test(d.reason ?? "")),
      JSON.stringify(r.decisions),
    );
  } finally {
    await r.close();
  }
});

Deno.test("broker: a head with a bare LF, or with two lengths, is refused and nothing goes up", async () => {
  const r = await rig();
  try {
    r.answer.current = () => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    const cases: [string, string][] = [
      ["bare LF", `GET /a HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nX-A: 1\nHost: other.example\r\n\r\n`],
      ["bare CR", `GET /a HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nX-A: 1\rHost: other.example\r\n\r\n`],
      ["obs-fold", `GET /a HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nX-A: 1\r\n Host: other.example\r\n\r\n`],
      [
        "two lengths",
        `POST /a HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nContent-Length: 5\r\nContent-Length: 45\r\n\r\n` +
        `helloGET /smuggled HTTP/1.1\r\nHost: other\r\n\r\n`,
      ],
      [
        "length and chunked",
        `POST /a HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `0\r\n\r\n`,
      ],
      ["a hex length", `POST /a HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nContent-Length: 0x5\r\n\r\nhello`],
      [
        "xchunked",
        `POST /a HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n`,
      ],
      ["space before colon", `GET /a HTTP/1.1\r\nHost : other.example\r\n\r\n`],
    ];
    for (const [name, request] of cases) {
      const answer = asClient(await r.send(request));
      assert.equal(answer.status, 400, `${name}: ${answer.head}`);
      assert.match(answer.body, /a request the broker does not read/, name);
    }
    assert.deepEqual(r.got, [], "a malformed request went up");
  } finally {
    await r.close();
  }
});

Deno.test("broker: a stored value with a CR, an LF or a byte past ASCII is never put in a header", async () => {
  for (const stored of ["abc\r\nHost: other.example", "abc\ndef", "caf\u00e9-token"]) {
    const r = await rig(stored);
    try {
      r.answer.current = () => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      const answer = asClient(await r.send(GET(r.port)));
      assert.equal(answer.status, 502, JSON.stringify(stored));
      assert.match(answer.body, /a character a header cannot carry/);
      assert.equal(r.got.length, 0, `${JSON.stringify(stored)} went up`);
    } finally {
      await r.close();
    }
  }
});

/** A plain-HTTP server on loopback that keeps the raw bytes of each request it reads whole, and answers "ok". */
function plainUpstream() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const got: string[] = [];
  (async () => {
    for await (const conn of listener) {
      (async () => {
        let bytes = Buffer.alloc(0);
        const chunk = new Uint8Array(64 * 1024);
        const whole = () => {
          const end = bytes.indexOf("\r\n\r\n");
          if (end === -1) return false;
          const head = bytes.subarray(0, end).toString("latin1");
          if (/^transfer-encoding:/im.test(head)) return bytes.subarray(end).includes("\r\n0\r\n\r\n");
          return bytes.length >= end + 4 + Number(/^content-length:\s*(\d+)/im.exec(head)?.[1] ?? 0);
        };
        try {
          while (!whole()) {
            const n = await conn.read(chunk);
            if (n === null) break;
            bytes = Buffer.concat([bytes, chunk.subarray(0, n)]);
          }
          got.push(bytes.toString("latin1"));
          await conn.write(encoder.encode("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
        } catch {
          // The proxy went away.
        } finally {
          conn.close();
        }
      })();
    }
  })().catch(() => {});
  return { got, port: (listener.addr as Deno.NetAddr).port, close: () => listener.close() };
}

/** One answer (head and Content-Length body) from `conn`, which stays open. */
async function oneAnswer(conn: Deno.Conn): Promise<{ status: number; body: string }> {
  let bytes = Buffer.alloc(0);
  const chunk = new Uint8Array(4096);
  for (;;) {
    const end = bytes.indexOf("\r\n\r\n");
    if (end !== -1) {
      const head = bytes.subarray(0, end).toString("latin1");
      const length = Number(/^content-length:\s*(\d+)/im.exec(head)?.[1] ?? 0);
      if (bytes.length >= end + 4 + length) {
        return {
          status: Number(head.split(" ")[1]),
          body: bytes.subarray(end + 4, end + 4 + length).toString("latin1"),
        };
      }
    }
    const n = await conn.read(chunk);
    if (n === null) throw new Error(`the proxy closed the connection after: ${bytes}`);
    bytes = Buffer.concat([bytes, chunk.subarray(0, n)]);
  }
}

Deno.test("egress proxy: a plain-HTTP request the strict reader refuses goes nowhere; a chunked body goes up chunked by the proxy, with the target's Host", async () => {
  const server = plainUpstream();
  const dir = await Deno.makeTempDir({ prefix: "toolgate_plain_framing_" });
  const proxy = EgressProxy.start(join(dir, "proxy.sock"));
  const { token, unregister } = proxy.register([`127.0.0.1:${server.port}`]);
  const url = `http://127.0.0.1:${server.port}/a`;
  const send = async (...requests: string[]) => {
    const conn = await Deno.connect({ transport: "unix", path: proxy.socket });
    const answers: { status: number; body: string }[] = [];
    try {
      await conn.write(encoder.encode(`toolgate-call ${token}\r\n`));
      for (const request of requests) {
        await conn.write(Buffer.from(request, "latin1"));
        answers.push(await oneAnswer(conn));
      }
    } finally {
      conn.close();
    }
    return answers;
  };
  try {
    const refused: [string, string][] = [
      ["a hex length", `POST ${url} HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n0123456789abcdef`],
      ["an exponent", `POST ${url} HTTP/1.1\r\nHost: a\r\nContent-Length: 1e1\r\n\r\n0123456789`],
      ["xchunked", `POST ${url} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n`],
      [
        "both framings",
        `POST ${url} HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      ],
      ["a bare LF", `GET ${url} HTTP/1.1\r\nHost: a\nX-A: b\r\n\r\n`],
    ];
    for (const [name, request] of refused) {
      const [answer] = await send(request);
      assert.equal(answer.status, 400, `${name}: ${answer.body}`);
    }
    assert.equal(server.got.length, 0, "a refused request went up");
    // A second request of a kept-alive connection is read as strictly as the first.
    const [first, second] = await send(
      `GET ${url} HTTP/1.1\r\nHost: a\r\n\r\n`,
      `POST ${url} HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`,
    );
    assert.deepEqual([first.status, second.status], [200, 400]);
    assert.equal(server.got.length, 1);
    // Chunked with an extension and a trailer: the upstream gets the proxy's own chunks, and the target's Host.
    const [chunked] = await send(
      `POST ${url} HTTP/1.1\r\nHost: other.example\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `5;ext=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n`,
    );
    assert.equal(chunked.status, 200);
    const sent = server.got[1];
    assert.match(sent, new RegExp(`^POST /a HTTP/1.1\r\nHost: 127\\.0\\.0\\.1:${server.port}\r\n`), sent);
    assert.doesNotMatch(sent, /other\.example|ext=1|X-Trailer/, sent);
    assert.ok(sent.endsWith("\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), sent);
  } finally {
    unregister();
    proxy.close();
    server.close();
    await Deno.remove(dir, { recursive: true });
  }
});
