/**
 * The gateway in front of the servers users run besides stdio Node ones: server-everything in its Streamable HTTP
 * mode on loopback (its host granted at launch, a header naming a secret), a Python server written with PyPI's
 * official `mcp` SDK, a server whose profile names one host, and the agent loop calling an upstream tool.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { answer, callTools, startChatServer, toolMessages } from "./agent/chat_server.ts";
import {
  envelope,
  EVERYTHING_SERVER,
  FS_SERVER,
  installPython,
  MODULES,
  NODE,
  nodeServersMissing,
  project,
  PYTHON,
  skipOrFail,
} from "./gateway_support.ts";

const ignore = await nodeServersMissing("gateway_upstreams_test") !== undefined;
const pythonMissing = ignore
  ? "no Node servers"
  : skipOrFail("gateway_upstreams_test (python)", await installPython());

/** A free loopback port (listened on, then closed). */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Waits until something accepts connections on the port. */
async function listening(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch {
      await new Promise((done) => setTimeout(done, 100));
    }
  }
  throw new Error(`nothing listens on ${port}`);
}

/**
 * server-everything in its Streamable HTTP mode on a free loopback port, behind a front that hands each request
 * to `seen` first, then answers with what `seen` returned, or passes the request on when it returned nothing.
 */
async function everythingBehindFront(
  seen: (request: Request) => Response | undefined,
): Promise<AsyncDisposable & { readonly url: string }> {
  const port = freePort();
  const everything = new Deno.Command(NODE, {
    args: [EVERYTHING_SERVER, "streamableHttp"],
    env: { PORT: String(port) },
    stdout: "null",
    stderr: "null",
  }).spawn();
  const front = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const answer = seen(request);
    if (answer !== undefined) return answer;
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    headers.delete("host");
    return await fetch(`http://127.0.0.1:${port}${url.pathname}${url.search}`, {
      method: request.method,
      headers,
      body: request.body,
    });
  });
  const close = async () => {
    await front.shutdown();
    everything.kill("SIGTERM");
    await everything.status;
  };
  try {
    await listening(port);
  } catch (error) {
    await close();
    throw error;
  }
  return { url: `http://127.0.0.1:${front.addr.port}/mcp`, [Symbol.asyncDispose]: close };
}

Deno.test({
  name: "a Streamable HTTP server on loopback: listed and called through call, its header carrying a secret",
  ignore,
  async fn() {
    // In front of it, a recorder of what toolgate's client sent (the header naming the secret among it).
    const authorizations: (string | null)[] = [];
    await using everything = await everythingBehindFront((request) => {
      authorizations.push(request.headers.get("authorization"));
      // No standing event stream through the recorder: the spec's answer for a server that offers none.
      return request.method === "GET" ? new Response(null, { status: 405 }) : undefined;
    });
    await using p = await project({
      ev: {
        url: everything.url,
        headers: { Authorization: "Bearer ${EV_TOKEN}" },
        secrets: ["EV_TOKEN"],
        allow: ["echo", "get-sum"],
      },
    });
    const withSecret = { EV_TOKEN: "tok-4711" };
    const trust = await p.run(["trust"], undefined, withSecret);
    assert.equal(trust.code, 0, trust.stderr);
    assert.match(trust.stdout, /mcp__ev__echo \(new\)/);
    const names = await p.run(["list", "--format", "names"], undefined, withSecret);
    assert.equal(names.code, 0, names.stderr);
    assert.deepEqual(names.stdout.trim().split("\n").filter((n) => n.startsWith("mcp__")).sort(), [
      "mcp__ev__echo",
      "mcp__ev__get-sum",
    ]);
    const echo = await p.run(
      ["call", "mcp__ev__echo", JSON.stringify({ message: "hi there" })],
      undefined,
      withSecret,
    );
    assert.equal(echo.code, 0, echo.stdout + echo.stderr);
    assert.deepEqual(envelope(echo.stdout).content, [{ type: "text", text: "Echo: hi there" }]);
    assert.ok(authorizations.length > 0);
    assert.ok(authorizations.every((value) => value === "Bearer tok-4711"), JSON.stringify(authorizations));
    // Without the secret, the server is not reached: one line says which secret is missing.
    const before = authorizations.length;
    const missing = await p.run(["call", "mcp__ev__echo", JSON.stringify({ message: "x" })]);
    const refused = envelope(missing.stdout);
    assert.equal(refused.ok, false);
    assert.match(refused.message, /EV_TOKEN/);
    assert.equal(authorizations.length, before);
  },
});

Deno.test({
  name: "a Python server written with the official mcp SDK: listed and called through call, confined",
  ignore: ignore || pythonMissing !== undefined,
  async fn() {
    await using p = await project({});
    const script = join(p.dir.path, "py_server.py");
    await Deno.writeTextFile(
      script,
      [
        "try:",
        "    from mcp.server.mcpserver import MCPServer",
        "except ImportError:  # mcp 1.x",
        "    from mcp.server.fastmcp import FastMCP as MCPServer",
        'server = MCPServer("pytools")',
        "@server.tool()",
        "def add(a: int, b: int) -> int:",
        '    """Adds two integers."""',
        "    return a + b",
        'if __name__ == "__main__":',
        "    server.run()",
        "",
      ].join("\n"),
    );
    await Deno.writeTextFile(
      join(p.dir.path, "tools.json"),
      JSON.stringify({
        tools: [],
        mcpServers: { py: { command: PYTHON, args: [script], readOnly: ["add"] } },
      }),
    );
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 0, trust.stderr);
    assert.match(trust.stdout, /mcp__py__add \(new\)/);
    const sum = await p.run(["call", "mcp__py__add", JSON.stringify({ a: 2, b: 40 })]);
    assert.equal(sum.code, 0, sum.stdout + sum.stderr);
    const ok = envelope(sum.stdout);
    assert.equal(ok.ok, true, sum.stdout);
    assert.deepEqual(ok.content, [{ type: "text", text: "42" }]);
    // Preflight against the server's inputSchema: a wrong type never reaches it.
    const bad = await p.run(["call", "mcp__py__add", JSON.stringify({ a: "two", b: 1 })]);
    assert.equal(envelope(bad.stdout).kind, "invalid_args", bad.stdout);
  },
});

/** A server of the test's own that fetches two loopback ports (through the egress proxy when it has one). */
function fetchingServer(portsFile: string): string {
  const sdk = join(MODULES, "@modelcontextprotocol", "sdk", "dist", "esm");
  return `
import { McpServer } from ${JSON.stringify(join(sdk, "server", "mcp.js"))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, "server", "stdio.js"))};
import { readFileSync } from "node:fs";
import http from "node:http";
const proxy = process.env.HTTP_PROXY ? new URL(process.env.HTTP_PROXY) : undefined;
const get = (port) => new Promise((done) => {
  const target = "http://127.0.0.1:" + port + "/";
  const options = proxy
    ? { host: proxy.hostname, port: proxy.port, path: target, headers: { host: "127.0.0.1:" + port }, agent: false }
    : target;
  const request = http.request(options, (response) => {
    let body = "";
    response.on("data", (chunk) => body += chunk);
    response.on("end", () => done(response.statusCode + " " + body));
  });
  request.on("error", () => done("unreachable"));
  request.setTimeout(5000, () => { request.destroy(); done("timeout"); });
  request.end();
});
const server = new McpServer({ name: "fetcher", version: "1.0.0" });
server.registerTool("fetch_both", { description: "Fetches two ports." }, async () => {
  const [a, b] = readFileSync(${JSON.stringify(portsFile)}, "utf8").trim().split(" ");
  return { content: [{ type: "text", text: "a=" + await get(a) + "; b=" + await get(b) }] };
});
await server.connect(new StdioServerTransport());
`;
}

Deno.test({
  name: "a server whose profile names one host reaches that host and no other",
  ignore,
  async fn() {
    const hits = { a: 0, b: 0 };
    const a = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
      hits.a++;
      return new Response("from-a");
    });
    const b = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
      hits.b++;
      return new Response("from-b");
    });
    try {
      await using p = await project({});
      const ports = join(p.dir.path, "ports.txt");
      await Deno.writeTextFile(ports, `${a.addr.port} ${b.addr.port}`);
      await Deno.writeTextFile(join(p.dir.path, "server.mjs"), fetchingServer(ports));
      await Deno.writeTextFile(
        join(p.dir.path, "tools.json"),
        JSON.stringify({
          tools: [],
          mcpServers: {
            web: {
              command: "node",
              args: [join(p.dir.path, "server.mjs")],
              permissions: { read: [MODULES], net: [`127.0.0.1:${a.addr.port}`] },
            },
          },
        }),
      );
      assert.equal((await p.run(["trust"])).code, 0);
      const call = await p.run(["call", "mcp__web__fetch_both"]);
      const text = envelope(call.stdout).content?.[0]?.text;
      assert.match(text, /^a=200 from-a; b=(403|unreachable)/, call.stdout + call.stderr);
      assert.equal(hits.a, 1);
      assert.equal(hits.b, 0, "nothing reached the host the profile does not list");
    } finally {
      await a.shutdown();
      await b.shutdown();
    }
  },
});

Deno.test({
  name:
    "the agent loop calls the filesystem server's read tool and gets its envelope; an unapproved write is refused",
  ignore,
  async fn() {
    await using p = await project({
      fs: {
        command: "node",
        args: [FS_SERVER, "."],
        permissions: { read: [MODULES] },
        readOnly: ["read_text_file"],
      },
    });
    await Deno.writeTextFile(join(p.dir.path, "notes.txt"), "the gateway works\n");
    assert.equal((await p.run(["trust"])).code, 0);
    const written = join(p.dir.path, "new.txt");
    const chat = startChatServer([
      callTools([{
        id: "c1",
        name: "mcp__fs__read_text_file",
        args: { path: join(p.dir.path, "notes.txt") },
      }]),
      callTools([{ id: "c2", name: "mcp__fs__write_file", args: { path: written, content: "x" } }]),
      answer("done"),
    ]);
    try {
      const run = await p.run(["run", "--prompt", "read notes", "--base-url", chat.baseUrl, "--model", "m"]);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout.trim(), "done");
      // The model was offered the gateway's tools beside the manifest's own.
      const offered = chat.requests[0].body.tools.map((tool: { function: { name: string } }) =>
        tool.function.name
      );
      assert.ok(offered.includes("mcp__fs__read_text_file"), offered.join(" "));
      const [read] = toolMessages(chat.requests[1].body);
      const readEnvelope = JSON.parse(read.content);
      assert.equal(readEnvelope.ok, true, read.content);
      assert.match(JSON.stringify(readEnvelope), /the gateway works/);
      const write = toolMessages(chat.requests[2].body).find((m) => m.tool_call_id === "c2")!;
      const refusal = JSON.parse(write.content);
      assert.equal(refusal.ok, false, write.content);
      assert.match(refusal.kind, /denied|rejected/);
      assert.throws(() => Deno.statSync(written), Deno.errors.NotFound);
    } finally {
      await chat.close();
    }
  },
});

Deno.test({
  name:
    "a Streamable HTTP server's session is ended when toolgate is done with it (a DELETE), standing stream and all",
  ignore,
  async fn() {
    // In front of it, a recorder of each request's method and session that passes everything on, the standing
    // event stream (GET) included: with that stream open, a client that only aborts its side held toolgate's
    // process until the server expired the session.
    const seen: string[] = [];
    await using everything = await everythingBehindFront((request) => {
      seen.push(`${request.method} ${request.headers.get("mcp-session-id") ?? "-"}`);
      return undefined;
    });
    await using p = await project({
      ev: { url: everything.url, allow: ["echo"] },
    });
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 0, trust.stderr);
    seen.length = 0;
    const echo = await p.run(["call", "mcp__ev__echo", JSON.stringify({ message: "bye" })]);
    assert.equal(echo.code, 0, echo.stdout + echo.stderr);
    const sessions = new Set(seen.map((line) => line.split(" ")[1]).filter((id) => id !== "-"));
    assert.equal(sessions.size, 1, seen.join("\n"));
    const [session] = sessions;
    assert.ok(
      seen.includes(`GET ${session}`),
      `the client opened the standing stream:\n${seen.join("\n")}`,
    );
    assert.equal(seen.at(-1), `DELETE ${session}`, `the session was ended last:\n${seen.join("\n")}`);
  },
});
