/**
 * Secrets bound to hosts for an MCP server behind the gateway (issues 25 and 28): a confined stdio server written
 * with PyPI's official `mcp` SDK holds a placeholder in its environment; the egress proxy puts the value into its
 * requests to the bound host (a loopback HTTPS server with a CA of its own, which toolgate is told to trust),
 * masks it in what comes back, and refuses the placeholder anywhere else, which the call's envelope says.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CertificateAuthority } from "../src/sandbox/run_ca.ts";
import {
  envelope,
  installPython,
  nodeServersMissing,
  project,
  PYTHON,
  skipOrFail,
} from "./gateway_support.ts";

const ignore = await nodeServersMissing("gateway_credentials_test") !== undefined ||
  skipOrFail("gateway_credentials_test (python)", await installPython()) !== undefined;

/** The server: one tool shows what the server can see of itself, one calls a URL and answers what came back. */
const SERVER = `
import glob, os, sys, urllib.error, urllib.request
try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer
server = MCPServer("canary")

@server.tool()
def inside() -> str:
    """Shows the server's environment, every process's environ and its files in /tmp."""
    seen = [repr(dict(os.environ))]
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            seen.append(open(path, "rb").read().decode("latin1"))
        except OSError:
            pass
    for path in glob.glob("/tmp/**", recursive=True) + glob.glob("/tmp/.*"):
        try:
            seen.append(open(path, "rb").read().decode("latin1"))
        except OSError:
            pass
    return "\\n".join(seen)

@server.tool()
def fetch(url: str, leak: bool = False) -> str:
    """Fetches a URL (with leak, the placeholder in its query too) and answers the status and body."""
    if leak:
        url += "?k=" + os.environ["CANARY_TOKEN"]
    try:
        answer = urllib.request.urlopen(url, timeout=10)
        return f"{answer.status} {answer.read().decode()}"
    except urllib.error.HTTPError as error:
        return f"{error.code} {error.read().decode()}"

if __name__ == "__main__":
    server.run()
`;

Deno.test({
  name:
    "an MCP server with a bound credential holds a placeholder only; the bound host gets the value, the answer is masked, a misplaced placeholder is refused",
  ignore,
  async fn() {
    const upstreamCa = await CertificateAuthority.create("toolgate test upstream CA");
    const hits: string[] = [];
    const bound = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {}, ...await upstreamCa.issue("127.0.0.1") },
      (request) => {
        hits.push(`${new URL(request.url).pathname} ${request.headers.get("authorization")}`);
        return new Response(`got[${request.headers.get("authorization")}]`);
      },
    );
    try {
      await using p = await project({});
      const host = `127.0.0.1:${bound.addr.port}`;
      const caFile = join(p.state.path, "upstream-ca.pem");
      await Deno.writeTextFile(caFile, upstreamCa.cert);
      await Deno.writeTextFile(join(p.dir.path, "server.py"), SERVER);
      await Deno.writeTextFile(
        join(p.dir.path, "tools.json"),
        JSON.stringify({
          tools: [],
          mcpServers: {
            py: {
              command: PYTHON,
              args: [join(p.dir.path, "server.py")],
              permissions: { net: [host] },
              credentials: [{
                secret: "CANARY_TOKEN",
                env: "CANARY_TOKEN",
                hosts: [host],
                header: "Authorization",
                format: "Bearer {}",
              }],
            },
          },
        }),
      );
      const value = `canaryV4lue${crypto.randomUUID().replaceAll("-", "")}`;
      // The value reaches toolgate through its environment; the upstream server's CA is trusted for the broker.
      const extra = { CANARY_TOKEN: value, TOOLGATE_UPSTREAM_CA: caFile };
      const trust = await p.run(["trust"], undefined, extra);
      assert.equal(trust.code, 0, trust.stdout + trust.stderr);

      const inside = await p.run(["call", "mcp__py__inside"], undefined, extra);
      assert.equal(inside.code, 0, inside.stdout + inside.stderr);
      assert.ok(!inside.stdout.includes(value), "the value is nowhere the server can read");
      const seen = envelope(inside.stdout).content[0].text as string;
      assert.match(seen, /'CANARY_TOKEN': 'toolgate-cred-[0-9a-f]{32}'/, seen);
      assert.match(seen, /'HTTPS_PROXY': 'http:\/\/127\.0\.0\.1:\d+'/, seen);
      assert.match(seen, /'SSL_CERT_FILE': '\/tmp\/\.toolgate-ca\.pem'/, seen);
      // The sandbox's files were read: the CA bundle is there, certificates only.
      assert.match(seen, /BEGIN CERTIFICATE/, seen);
      assert.doesNotMatch(seen, /PRIVATE KEY/);

      const fetched = await p.run(
        ["call", "mcp__py__fetch", JSON.stringify({ url: `https://${host}/mcp` })],
        undefined,
        extra,
      );
      assert.equal(fetched.code, 0, fetched.stdout + fetched.stderr);
      assert.ok(!fetched.stdout.includes(value), fetched.stdout);
      assert.match(envelope(fetched.stdout).content[0].text, /^200 got\[Bearer \*{10,}\]$/, fetched.stdout);
      assert.deepEqual(hits, [`/mcp Bearer ${value}`]);

      // The placeholder in the URL of the bound host (it is bound to the header only): refused, nothing sent.
      const leaked = await p.run(
        ["call", "mcp__py__fetch", JSON.stringify({ url: `https://${host}/leak`, leak: true })],
        undefined,
        extra,
      );
      const answer = envelope(leaked.stdout);
      assert.match(
        answer.content[0].text,
        /^403 toolgate proxy: refused: .*CANARY_TOKEN.*the URL/,
        leaked.stdout,
      );
      assert.ok(
        (answer.warnings ?? []).some((w: string) =>
          /egress proxy refused a request of the MCP server.*the URL/.test(w)
        ),
        leaked.stdout,
      );
      assert.deepEqual(hits, [`/mcp Bearer ${value}`], "nothing more reached the bound host");
      // The audit line of each call carries what the egress proxy decided for the server meanwhile.
      const log = await p.run(["log", "--json"], undefined, extra);
      assert.equal(log.code, 0, log.stderr);
      assert.ok(!log.stdout.includes(value), "the audit log never holds the value");
      const records = log.stdout.trim().split("\n").map((line) => JSON.parse(line));
      const fetches = records.filter((r) => r.upstream_tool === "fetch");
      assert.deepEqual(fetches.map((r) => (r.egress ?? []).map((d: { allowed: boolean }) => d.allowed)), [
        [true],
        [true, false],
      ]);
      assert.match(fetches[1].egress[1].reason, /CANARY_TOKEN.*the URL/);
    } finally {
      await bound.shutdown();
    }
  },
});

Deno.test("an MCP server's credentials: validate checks each bound host against the server's host list", async () => {
  await using p = await project({
    gh: {
      command: "node",
      permissions: { net: ["api.example.com"] },
      credentials: [{
        secret: "GH_TOKEN",
        env: "GH_TOKEN",
        hosts: ["api.github.com"],
        header: "Authorization",
      }],
    },
    web: {
      url: "https://mcp.example.com/mcp",
      credentials: [{ secret: "K", env: "K", hosts: ["mcp.example.com"], header: "X-Key" }],
    },
  });
  const run = await p.run(["validate"]);
  assert.equal(run.code, 1, run.stdout + run.stderr);
  const text = run.stdout + run.stderr;
  assert.match(
    text,
    /mcpServers "gh": credentials\[0\]\.hosts\[0\]: api\.github\.com is not in the server's profile host list \(api\.example\.com\)/,
  );
  assert.match(text, /mcpServers "web": credentials is for a server with a command/);
});
