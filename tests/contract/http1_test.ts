// The one strict HTTP/1.1 reader (src/contract/http1.ts, issue 38), read against a reference: Node's own llhttp,
// in a real `node` process whose `node:http` server is fed the very bytes over a loopback socket and answers with
// what it parsed (method, target, fields, body) or with the error it refused them with. Before this reader, the
// egress proxy, the broker and http_fetch each read HTTP their own way: `Content-Length: 0x10`, `1e3` and
// `Transfer-Encoding: xchunked` were taken, a bare LF went on as part of a field, two lengths were the first one.
//
// Each case says what it expects: `agree` (both read the same message, or both refuse it), `refuse` (both refuse:
// a smuggling shape), or `stricter` with the reason toolgate refuses what llhttp takes. No case is skipped.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  ByteReader,
  HTTP1_LIMITS,
  Http1Error,
  readBody,
  readRequestHead,
  readResponseHead,
  requestFraming,
  responseFraming,
} from "../../src/contract/http1.ts";
import { seededRandom } from "../seeded_random.ts";
import { hostTest } from "../security/helpers.ts";

const NODE = ["/usr/bin/node", "/usr/local/bin/node"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

/** What a reader made of the first message of some bytes. */
type Reading =
  | {
    readonly kind: "message";
    readonly method: string;
    readonly target: string;
    readonly fields: string[];
    readonly body: string;
  }
  | { readonly kind: "refused"; readonly why: string }
  | { readonly kind: "incomplete" };

/** The bytes in pieces of `size` (the reader must not depend on where a read ends). */
async function* piecesOf(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** toolgate's reading, of the bytes as they come in pieces of `size`. */
async function toolgate(bytes: Uint8Array, size: number): Promise<Reading> {
  const reader = new ByteReader(piecesOf(bytes, size));
  try {
    const head = await readRequestHead(reader);
    if (head === undefined) return { kind: "incomplete" };
    const body = await readBody(reader, requestFraming(head), HTTP1_LIMITS.bodyBytes);
    return {
      kind: "message",
      method: head.method,
      target: head.target,
      fields: head.fields.flatMap(([name, value]) => [name, value]),
      body: Buffer.from(body).toString("latin1"),
    };
  } catch (error) {
    if (!(error instanceof Http1Error)) throw error;
    return error.fault === "cut short" ? { kind: "incomplete" } : { kind: "refused", why: error.message };
  }
}

/** The reference server: Node's http server (llhttp, strict by default), answering each request with what it read. */
const REFERENCE = `
const http = require("node:http");
const server = http.createServer({ requireHostHeader: false }, (req, res) => {
  const parts = [];
  req.on("data", (c) => parts.push(c));
  req.on("end", () => {
    const body = JSON.stringify({ method: req.method, target: req.url, fields: req.rawHeaders,
      body: Buffer.concat(parts).toString("latin1") });
    res.writeHead(200, { "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.on("clientError", (error, socket) => {
  if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\\r\\nConnection: close\\r\\nContent-Length: " +
    Buffer.byteLength(String(error.code)) + "\\r\\n\\r\\n" + error.code);
  else socket.destroy();
});
// A CONNECT is a request like any other to the reader; Node's server hands it over on its own event.
server.on("connect", (req, socket) => {
  const body = JSON.stringify({ method: req.method, target: req.url, fields: req.rawHeaders, body: "" });
  socket.end("HTTP/1.1 200 OK\\r\\nContent-Length: " + Buffer.byteLength(body) + "\\r\\n\\r\\n" + body);
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

/** llhttp's reading, through the reference server. */
async function llhttp(port: number, bytes: Uint8Array): Promise<Reading> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const parts: Uint8Array[] = [];
  try {
    await conn.write(bytes);
    await conn.closeWrite();
    const chunk = new Uint8Array(64 * 1024);
    for (;;) {
      const n = await conn.read(chunk).catch(() => null);
      if (n === null) break;
      parts.push(chunk.slice(0, n));
    }
  } finally {
    conn.close();
  }
  const answer = Buffer.concat(parts);
  if (answer.length === 0) return { kind: "incomplete" };
  const end = answer.indexOf("\r\n\r\n");
  const head = answer.subarray(0, end).toString("latin1");
  const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
  const body = answer.subarray(end + 4, end + 4 + length).toString("utf8");
  // An early end is a message cut short, as toolgate says it (llhttp's server calls it a client error).
  if (body === "HPE_INVALID_EOF_STATE") return { kind: "incomplete" };
  if (!head.startsWith("HTTP/1.1 200")) return { kind: "refused", why: body };
  const read = JSON.parse(body);
  return { kind: "message", method: read.method, target: read.target, fields: read.fields, body: read.body };
}

/** A case: its bytes and what is expected of the two readers. */
interface Case {
  readonly name: string;
  readonly bytes: string;
  readonly expect: "agree" | "refuse" | { readonly stricter: string };
}

const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const VCHAR = Array.from({ length: 94 }, (_, i) => String.fromCharCode(0x21 + i)).join("");
const PATH = "abcdefghijklmnopqrstuvwxyz0123456789-._~/%=&?";

/** Generated messages, valid and mutated, from a seed: the same on every run. */
function generated(seed: number, count: number): Case[] {
  const random = seededRandom(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  const text = (alphabet: string, min: number, max: number) =>
    Array.from({ length: min + int(max - min + 1) }, () => alphabet[int(alphabet.length)]).join("");
  const value = () => {
    const v = text(VCHAR + "   \t\x80\x9f\xe9\xff", 0, 30).trim();
    return v;
  };
  const cases: Case[] = [];
  for (let i = 0; i < count; i++) {
    const method = pick(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND"]);
    const target = `/${text(PATH, 0, 40)}`;
    const fields: [string, string][] = [["Host", `h${int(1000)}.example`]];
    for (let n = int(6); n > 0; n--) {
      let name = text(TCHAR, 1, 12);
      // Names with a meaning to framing or routing are the mutations' to add.
      if (/^(content-length|transfer-encoding|host|connection|upgrade|expect|te|trailer)$/i.test(name)) {
        name = "X";
      }
      fields.push([name, value()]);
    }
    const data = text(VCHAR + " \r\n\t", 0, 200);
    const framing = pick(["none", "length", "chunked"] as const);
    let body = "";
    if (framing === "length") {
      fields.push([pick(["Content-Length", "content-length", "CONTENT-LENGTH"]), String(data.length)]);
      body = data;
    } else if (framing === "chunked") {
      fields.push([
        pick(["Transfer-Encoding", "transfer-encoding"]),
        pick(["chunked", "Chunked", "CHUNKED"]),
      ]);
      let rest = data;
      while (rest.length > 0) {
        const size = 1 + int(Math.min(rest.length, 60));
        const ext = random() < 0.2
          ? `;${text(TCHAR, 1, 6)}${random() < 0.5 ? `=${text(TCHAR, 1, 6)}` : ""}`
          : "";
        body += `${size.toString(16)}${ext}\r\n${rest.slice(0, size)}\r\n`;
        rest = rest.slice(size);
      }
      body += "0\r\n";
      if (random() < 0.2) body += `${text(TCHAR, 1, 8)}: ${value()}\r\n`;
      body += "\r\n";
    }
    const head = (list: [string, string][]) =>
      `${method} ${target} HTTP/1.1\r\n${list.map(([n, v]) => `${n}: ${v}\r\n`).join("")}\r\n`;
    const at = 1 + int(fields.length);
    const mutation = int(40);
    const withField = (field: string) => {
      const lines = head(fields).split("\r\n");
      lines.splice(at, 0, field);
      return lines.join("\r\n");
    };
    const name = `generated #${i} (${framing})`;
    switch (mutation) {
      case 0:
        cases.push({
          name: `${name}, a bare LF`,
          bytes: withField(`X-A: a\nX-B: b`) + body,
          expect: "refuse",
        });
        break;
      case 1:
        cases.push({
          name: `${name}, a bare CR`,
          bytes: withField(`X-A: a\rX-B: b`) + body,
          expect: "refuse",
        });
        break;
      case 2:
        cases.push({
          name: `${name}, obs-fold`,
          bytes: withField(`X-A: a\r\n b`) + body,
          expect: at === 1 ? "refuse" : "refuse",
        });
        break;
      case 3:
        cases.push({
          name: `${name}, space before colon`,
          bytes: withField(`X-A : a`) + body,
          expect: "refuse",
        });
        break;
      case 4:
        cases.push({
          name: `${name}, a NUL or control byte in a value`,
          bytes: withField(`X-A: a${pick(["\x00", "\x01", "\x1f", "\x7f"])}b`) + body,
          expect: "refuse",
        });
        break;
      case 5:
        if (framing === "chunked") {
          cases.push({
            name: `${name}, and a Content-Length`,
            bytes: withField("Content-Length: 3") + body,
            expect: "refuse",
          });
        } else {
          cases.push({
            name: `${name}, a second, differing Content-Length`,
            bytes: withField(`Content-Length: ${data.length + 1 + int(9)}`) + body,
            expect: framing === "length" ? "refuse" : "agree",
          });
        }
        break;
      case 6: {
        const bad = pick(["0x10", "1e3", "+5", "-1", "", "5 5", "5,5", "5, 6", "1.0", "٣"]);
        cases.push({
          name: `${name}, Content-Length ${JSON.stringify(bad)}`,
          bytes: withField(`Content-Length: ${bad}`),
          expect: "refuse",
        });
        break;
      }
      case 7: {
        const bad = pick([
          "xchunked",
          "chunkedx",
          "chunked, gzip",
          "gzip",
          "identity",
          "chunked;q=1",
          "chunk",
        ]);
        cases.push({
          name: `${name}, Transfer-Encoding ${JSON.stringify(bad)}`,
          bytes: withField(`Transfer-Encoding: ${bad}`) + "0\r\n\r\n",
          // Beside the message's own `chunked`, the list ends in chunked, which RFC 9112 allows.
          expect: framing === "chunked"
            ? { stricter: "a transfer coding beside chunked is refused: toolgate reads chunked alone" }
            : "refuse",
        });
        break;
      }
      case 8: {
        const n = 8 * 1024 + 1 + int(7 * 1024);
        cases.push({
          name: `${name}, a field line of ${n} bytes`,
          bytes: withField(`X-Long: ${"a".repeat(n)}`) + body,
          expect: { stricter: "a line over 8 KiB is refused; Node's limit is 16 KiB for the whole head" },
        });
        break;
      }
      case 9:
        if (framing === "chunked") {
          const bad = pick(["g", "-1", "0x5", "+5", "fffffffff", " 5", ""]);
          cases.push({
            name: `${name}, chunk size ${JSON.stringify(bad)}`,
            bytes: head(fields) + `${bad}\r\nhello\r\n0\r\n\r\n`,
            expect: bad === "fffffffff"
              ? { stricter: "a chunk size has at most 8 hex digits; llhttp waits for a 64 GiB chunk" }
              : "refuse",
          });
        } else cases.push({ name, bytes: head(fields) + body, expect: "agree" });
        break;
      case 10:
        if (framing === "chunked") {
          cases.push({
            name: `${name}, chunk data not ended by CRLF`,
            bytes: head(fields) + `5\r\nhelloXX0\r\n\r\n`,
            expect: "refuse",
          });
        } else cases.push({ name, bytes: head(fields) + body, expect: "agree" });
        break;
      case 11:
        cases.push({
          name: `${name}, an identical Content-Length twice`,
          bytes: (framing === "none"
            ? withField("Content-Length: 0\r\nContent-Length: 0")
            : withField(`Content-Length: ${framing === "length" ? data.length : 0}`)) + body,
          expect: framing === "chunked" ? "refuse" : {
            stricter: "two lengths are refused even when they agree (RFC 9112 allows folding them)",
          },
        });
        break;
      case 12:
        cases.push({
          name: `${name}, a second Host`,
          bytes: withField(`Host: other.example`) + body,
          expect: { stricter: "a second Host is refused (RFC 9112 3.2: a server must answer 400)" },
        });
        break;
      case 13:
        cases.push({
          name: `${name}, an empty line before the request line`,
          bytes: "\r\n" + head(fields) + body,
          expect: { stricter: "an empty line before the request line is refused, not skipped" },
        });
        break;
      case 14:
        cases.push({
          name: `${name}, Transfer-Encoding "gzip, chunked"`,
          bytes: withField("Transfer-Encoding: gzip, chunked") + "0\r\n\r\n",
          expect: framing === "chunked"
            ? "refuse"
            : { stricter: "a coding before chunked is refused: toolgate reads chunked alone" },
        });
        break;
      case 15: {
        const line = pick([
          `${method}  ${target} HTTP/1.1`,
          `${method} ${target}  HTTP/1.1`,
          `${method}\t${target} HTTP/1.1`,
          `${method} ${target} HTTP/1.1 `,
          `${method} ${target} http/1.1`,
          `${method} ${target} HTTP/1.2`,
          `${method} ${target} HTTP/2.0`,
          `${method} /a b HTTP/1.1`,
          `G(T ${target} HTTP/1.1`,
        ]);
        cases.push({
          name: `${name}, request line ${JSON.stringify(line)}`,
          bytes: `${line}\r\nHost: a\r\n\r\n`,
          expect: /HTTP\/(1\.2|2\.0)$/.test(line)
            ? { stricter: "only HTTP/1.0 and HTTP/1.1 are read" }
            : line.includes("  ")
            ? { stricter: "one space, exactly, between the request line's parts (RFC 9112 3)" }
            : "refuse",
        });
        break;
      }
      case 16:
        cases.push({
          name: `${name}, Transfer-Encoding chunked given twice`,
          bytes: withField(`Transfer-Encoding: chunked`) + (framing === "chunked" ? body : "0\r\n\r\n"),
          expect: framing === "chunked"
            ? { stricter: "chunked applied twice is refused, not read as once" }
            : "agree",
        });
        break;
      case 17:
        cases.push({
          name: `${name}, a head cut short`,
          bytes: head(fields).slice(0, 1 + int(head(fields).length - 2)),
          expect: "agree",
        });
        break;
      case 18:
        if (framing !== "none" && data.length > 2) {
          cases.push({
            name: `${name}, its body cut short`,
            bytes: (head(fields) + body).slice(0, head(fields).length + 1 + int(body.length - 2)),
            expect: "agree",
          });
        } else cases.push({ name, bytes: head(fields) + body, expect: "agree" });
        break;
      case 19:
        if (framing === "chunked") {
          cases.push({
            name: `${name}, a trailer with a bare LF`,
            bytes: head(fields) + `1\r\na\r\n0\r\nX-T: 1\nX-U: 2\r\n\r\n`,
            expect: "refuse",
          });
        } else cases.push({ name, bytes: head(fields) + body, expect: "agree" });
        break;
      default:
        cases.push({ name, bytes: head(fields) + body, expect: "agree" });
    }
  }
  return cases;
}

/** The smuggling corpus, written out. */
const CORPUS: Case[] = [
  {
    name: "CL.CL differing",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    expect: "refuse",
  },
  {
    name: "CL list",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\nhello!",
    expect: "refuse",
  },
  { name: "CL hex", bytes: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", expect: "refuse" },
  {
    name: "CL exponent",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1e3\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "CL plus",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello",
    expect: "refuse",
  },
  { name: "CL empty", bytes: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", expect: "refuse" },
  {
    name: "CL huge",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "TE.CL",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "CL.TE",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "TE xchunked",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "TE chunked, gzip",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "TE with a space before the colon",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "TE obs-folded",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "TE in HTTP/1.0",
    bytes: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    expect: { stricter: "RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 is a faulty framing" },
  },
  { name: "a bare LF ends the head", bytes: "GET / HTTP/1.1\nHost: a\n\n", expect: "refuse" },
  { name: "a bare CR in a field", bytes: "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", expect: "refuse" },
  { name: "a NUL in a field", bytes: "GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", expect: "refuse" },
  {
    name: "a chunk size of nine hex digits",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n000000005\r\nhello\r\n0\r\n\r\n",
    expect: { stricter: "chunk sizes have at most 8 hex digits, leading zeros counted" },
  },
  {
    name: "a chunk size with a bare LF",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "a chunk extension with a control byte",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a\x01\r\nhello\r\n0\r\n\r\n",
    expect: "refuse",
  },
  {
    name: "a chunk extension with a quoted value",
    bytes: 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a="b c"\r\nhello\r\n0\r\n\r\n',
    expect: "agree",
  },
  {
    name: "a chunk extension over the line limit",
    bytes: `POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a=${
      "b".repeat(20_000)
    }\r\nhello\r\n0\r\n\r\n`,
    expect: "refuse",
  },
  {
    name: "a head over the limits",
    bytes: `GET / HTTP/1.1\r\nHost: a\r\n${"X-A: aaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(3000)}\r\n`,
    expect: "refuse",
  },
  {
    name: "an identical Content-Length twice",
    bytes: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
    expect: { stricter: "two lengths are refused even when they agree" },
  },
  { name: "a request without Host", bytes: "GET / HTTP/1.1\r\nX: a\r\n\r\n", expect: "agree" },
  {
    name: "an absolute-form target",
    bytes: "GET http://a.example/x HTTP/1.1\r\nHost: a.example\r\n\r\n",
    expect: "agree",
  },
  {
    name: "a CONNECT",
    bytes: "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
    expect: "agree",
  },
  {
    name: "OWS around a value",
    bytes: "GET / HTTP/1.1\r\nHost: a\r\nX-A: \t a b \t\r\n\r\n",
    expect: "agree",
  },
  { name: "an empty value", bytes: "GET / HTTP/1.1\r\nHost: a\r\nX-A:\r\n\r\n", expect: "agree" },
];

/** Whether the two readings are the same message, or the same refusal (reasons aside). */
function same(a: Reading, b: Reading): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind !== "message" || b.kind !== "message") return true;
  return JSON.stringify(a) === JSON.stringify(b);
}

hostTest(
  "http1: a few thousand generated messages and the smuggling corpus, read as Node's llhttp reads them, or refused where toolgate is stricter",
  NODE ? undefined : "node is not installed (the reference parser is Node's llhttp)",
  async () => {
    const server = new Deno.Command(NODE!, { args: ["-e", REFERENCE], stdout: "piped", stderr: "inherit" })
      .spawn();
    try {
      const lines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
      const port = Number((await lines.read()).value);
      assert.ok(port > 0, "the reference server did not start");
      const cases = [...CORPUS, ...generated(38, 3000)];
      const problems: string[] = [];
      const stricter = new Map<string, number>();
      let agreed = 0;
      for (let i = 0; i < cases.length; i += 16) {
        await Promise.all(
          cases.slice(i, i + 16).map(async (c) => {
            const bytes = Buffer.from(c.bytes, "latin1");
            const [ours, theirs] = await Promise.all([
              toolgate(bytes, 1 + (bytes.length % 97)),
              llhttp(port, bytes),
            ]);
            const show = () =>
              `${c.name}: toolgate ${JSON.stringify(ours).slice(0, 300)}, llhttp ${
                JSON.stringify(theirs).slice(0, 300)
              }`;
            if (c.expect === "agree") {
              if (same(ours, theirs)) agreed++;
              else problems.push(`expected the same reading: ${show()}`);
            } else if (c.expect === "refuse") {
              if (ours.kind !== "refused" || theirs.kind !== "refused") {
                problems.push(`expected both to refuse: ${show()}`);
              }
            } else {
              // toolgate refuses; llhttp may take it or not, which the case's reason explains.
              if (ours.kind !== "refused") {
                problems.push(`expected toolgate to refuse (${c.expect.stricter}): ${show()}`);
              }
              if (theirs.kind === "message") {
                stricter.set(c.expect.stricter, (stricter.get(c.expect.stricter) ?? 0) + 1);
              }
            }
          }),
        );
      }
      assert.deepEqual(problems, []);
      assert.ok(agreed > 1500, `only ${agreed} messages read the same`);
      // The stricter rules are exercised: llhttp takes what toolgate refuses for each.
      console.log(`agreed on ${agreed}; stricter than llhttp:`, Object.fromEntries(stricter));
    } finally {
      server.kill();
      await server.status;
    }
  },
);

/** Node's http client (llhttp reading answers): fetches each case's answer and prints what it read, as JSON. */
const CLIENT = `
const http = require("node:http");
const [port, count] = process.argv.slice(1).map(Number);
const results = new Array(count);
let next = 0;
function one() {
  const i = next++;
  if (i >= count) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (result) => { if (results[i] === undefined) results[i] = result; resolve(); };
    const req = http.get({ host: "127.0.0.1", port, path: "/" + i, agent: false }, (res) => {
      const parts = [];
      res.on("data", (c) => parts.push(c));
      res.on("end", () => done(res.complete
        ? { kind: "message", status: res.statusCode, fields: res.rawHeaders,
            body: Buffer.concat(parts).toString("latin1") }
        : { kind: "incomplete" }));
      res.on("aborted", () => done({ kind: "incomplete" }));
      res.on("error", () => done({ kind: "incomplete" }));
    });
    req.on("error", (error) => done(error.code === "ECONNRESET" || error.code === "HPE_INVALID_EOF_STATE"
      ? { kind: "incomplete" } : { kind: "refused", why: error.code }));
  }).then(one);
}
Promise.all(Array.from({ length: 8 }, one)).then(() => console.log(JSON.stringify(results)));
`;

/** What a reader made of an answer to a GET. */
type AnswerReading =
  | { readonly kind: "message"; readonly status: number; readonly fields: string[]; readonly body: string }
  | { readonly kind: "refused"; readonly why: string }
  | { readonly kind: "incomplete" };

async function toolgateAnswer(bytes: Uint8Array, size: number): Promise<AnswerReading> {
  const reader = new ByteReader(piecesOf(bytes, size));
  try {
    const head = await readResponseHead(reader);
    const body = await readBody(reader, responseFraming(head, "GET"), HTTP1_LIMITS.bodyBytes);
    return {
      kind: "message",
      status: head.status,
      fields: head.fields.flatMap(([name, value]) => [name, value]),
      body: Buffer.from(body).toString("latin1"),
    };
  } catch (error) {
    if (!(error instanceof Http1Error)) throw error;
    return error.fault === "cut short" ? { kind: "incomplete" } : { kind: "refused", why: error.message };
  }
}

/** Generated answers, valid and mutated, from a seed. */
function generatedAnswers(seed: number, count: number): Case[] {
  const random = seededRandom(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  const text = (alphabet: string, min: number, max: number) =>
    Array.from({ length: min + int(max - min + 1) }, () => alphabet[int(alphabet.length)]).join("");
  const cases: Case[] = [];
  for (let i = 0; i < count; i++) {
    const status = pick([200, 201, 204, 301, 404, 500]);
    const fields: [string, string][] = [];
    for (let n = int(5); n > 0; n--) {
      let name = text(TCHAR, 1, 10);
      if (/^(content-length|transfer-encoding|connection|trailer)$/i.test(name)) name = "X";
      fields.push([name, text(VCHAR + "  \t", 0, 30).trim()]);
    }
    const data = status === 204 ? "" : text(VCHAR + " \r\n\t\x80\xff", 0, 300);
    const framing = status === 204 ? "length" : pick(["close", "length", "chunked"] as const);
    let body = data;
    if (framing === "length" && status !== 204) fields.push(["Content-Length", String(data.length)]);
    if (framing === "chunked") {
      fields.push(["Transfer-Encoding", "chunked"]);
      body = "";
      for (let rest = data; rest.length > 0;) {
        const size = 1 + int(Math.min(rest.length, 80));
        body += `${size.toString(16)}\r\n${rest.slice(0, size)}\r\n`;
        rest = rest.slice(size);
      }
      body += "0\r\n\r\n";
    }
    const head = (list: [string, string][]) =>
      `HTTP/1.1 ${status} ${pick(["OK", "Whatever it is", ""])}\r\n${
        list.map(([n, v]) => `${n}: ${v}\r\n`).join("")
      }\r\n`;
    const withField = (field: string) => {
      const lines = head(fields).split("\r\n");
      lines.splice(1 + int(fields.length + 1), 0, field);
      return lines.join("\r\n");
    };
    const name = `answer #${i} (${status}, ${framing})`;
    const mutation = int(30);
    if (mutation === 0) {
      cases.push({ name: `${name}, a bare LF`, bytes: withField("X-A: a\nX-B: b") + body, expect: "refuse" });
    } else if (mutation === 1) {
      cases.push({ name: `${name}, obs-fold`, bytes: withField("X-A: a\r\n b") + body, expect: "refuse" });
    } else if (mutation === 2 && framing === "length" && status !== 204) {
      cases.push({
        name: `${name}, a second, differing Content-Length`,
        bytes: withField(`Content-Length: ${data.length + 1}`) + body,
        expect: "refuse",
      });
    } else if (mutation === 3 && framing === "chunked") {
      cases.push({
        name: `${name}, chunked and a Content-Length`,
        bytes: withField(`Content-Length: 3`) + body,
        expect: "refuse",
      });
    } else if (mutation === 4 && framing === "chunked") {
      cases.push({
        name: `${name}, a bad chunk size`,
        bytes: head(fields) + `${pick(["g", "0x5", "-1", ""])}\r\nhello\r\n0\r\n\r\n`,
        expect: "refuse",
      });
    } else if (mutation === 5) {
      cases.push({
        name: `${name}, a space before a colon`,
        bytes: withField("X-A : a") + body,
        expect: "refuse",
      });
    } else if (mutation === 6 && framing === "length" && data.length > 1) {
      cases.push({
        name: `${name}, cut short`,
        bytes: head(fields) + body.slice(0, int(body.length - 1)),
        expect: "agree",
      });
    } else if (mutation === 7 && status !== 204) {
      cases.push({
        name: `${name}, Transfer-Encoding "gzip, chunked"`,
        bytes: framing === "chunked"
          ? withField("Transfer-Encoding: gzip") + body
          : withField("Transfer-Encoding: gzip, chunked") + "0\r\n\r\n",
        expect: {
          stricter:
            "an answer with a transfer coding beside chunked is refused: toolgate reads chunked alone",
        },
      });
    } else {
      cases.push({ name, bytes: head(fields) + body, expect: "agree" });
    }
  }
  return cases;
}

hostTest(
  "http1: generated answers, read as Node's http client (llhttp) reads them, or refused where toolgate is stricter",
  NODE ? undefined : "node is not installed (the reference parser is Node's llhttp)",
  async () => {
    const cases = generatedAnswers(3801, 600);
    // A server that answers the request for /N with case N's bytes, then closes.
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
            const index = Number(/^GET \/(\d+) /.exec(seen)?.[1]);
            await conn.write(Buffer.from(cases[index].bytes, "latin1"));
          } catch {
            // The client went away.
          } finally {
            conn.close();
          }
        })();
      }
    })().catch(() => {});
    try {
      const port = (listener.addr as Deno.NetAddr).port;
      const out = await new Deno.Command(NODE!, {
        args: ["-e", CLIENT, String(port), String(cases.length)],
        stdout: "piped",
        stderr: "inherit",
      }).output();
      const theirs: AnswerReading[] = JSON.parse(new TextDecoder().decode(out.stdout));
      const problems: string[] = [];
      let agreed = 0;
      for (const [i, c] of cases.entries()) {
        const bytes = Buffer.from(c.bytes, "latin1");
        const ours = await toolgateAnswer(bytes, 1 + (bytes.length % 89));
        const show = () =>
          `${c.name}: toolgate ${JSON.stringify(ours).slice(0, 300)}, llhttp ${
            JSON.stringify(theirs[i]).slice(0, 300)
          }`;
        if (c.expect === "agree") {
          if (
            JSON.stringify(ours) === JSON.stringify(theirs[i]) ||
            (ours.kind === theirs[i].kind && ours.kind !== "message")
          ) {
            agreed++;
          } else problems.push(`expected the same reading: ${show()}`);
        } else if (c.expect === "refuse") {
          if (ours.kind !== "refused" || theirs[i].kind === "message") {
            problems.push(`expected both to refuse: ${show()}`);
          }
        } else if (ours.kind !== "refused") {
          problems.push(`expected toolgate to refuse (${c.expect.stricter}): ${show()}`);
        }
      }
      assert.deepEqual(problems, []);
      assert.ok(agreed > 400, `only ${agreed} answers read the same`);
      const read = theirs.filter((t) => t.kind === "message").length;
      assert.ok(read > 350, `only ${read} answers were read whole by llhttp`);
      console.log(`answers: agreed on ${agreed}, ${read} read whole`);
    } finally {
      listener.close();
      await serving;
    }
  },
);
