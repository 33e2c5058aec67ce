// Nothing a tool does to the egress proxy crashes toolgate (issue 24, item 2): a tool whose profile lists hosts
// opened ~30,000 connections to the proxy's socket, toolgate ran out of file descriptors and `serve --http` died
// with every session. The proxy caps a call's connections and the ones that name no call yet, cuts a request head
// that takes too long, and a failed accept (out of descriptors) costs one connection, never the process.
import assert from "node:assert/strict";
import { join } from "node:path";
import { EgressProxy } from "../../src/sandbox/egress_proxy.ts";
import { cliArgs, GRANTS, writeFiles } from "../support.ts";
import { connectHttp, envelopeOf, spawnHttp, TOKEN } from "../mcp/helpers.ts";
import { hostTest, NO_BWRAP, realTempDir, SCRIPT_FIXTURE } from "./helpers.ts";

const encoder = new TextEncoder();

/** Resolves when the proxy closes `conn` (a read of nothing), or to "open" after `ms`. */
async function closedWithin(conn: Deno.Conn, ms: number): Promise<"closed" | "open"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const open = new Promise<"open">((resolve) => timer = setTimeout(() => resolve("open"), ms));
  const closed = conn.read(new Uint8Array(256)).then(() => "closed" as const, () => "closed" as const);
  try {
    return await Promise.race([closed, open]);
  } finally {
    clearTimeout(timer);
  }
}

/** A proxy on a fresh socket, with `limits`; disposed with its folder. */
async function proxyWith(limits: Parameters<typeof EgressProxy.start>[1]) {
  const dir = await Deno.makeTempDir({ prefix: "toolgate_flood_" });
  const proxy = EgressProxy.start(join(dir, "proxy.sock"), limits);
  const connect = () => Deno.connect({ transport: "unix", path: proxy.socket });
  return {
    proxy,
    connect,
    [Symbol.asyncDispose]: async () => {
      proxy.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("egress proxy: a request head sent in half is cut after the head's time limit", async () => {
  await using served = await proxyWith({ headMs: 300 });
  const { token, unregister } = served.proxy.register(["127.0.0.1"]);
  const half = await served.connect();
  await half.write(encoder.encode(`toolgate-call ${token}\r\nCONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127`));
  const silent = await served.connect();
  // No test of speed: 20 s only bounds the wait of code that never cuts a slow head (the default is 10 s).
  assert.equal(await closedWithin(half, 20_000), "closed", "half a head is cut");
  assert.equal(await closedWithin(silent, 20_000), "closed", "a connection that says nothing is cut");
  half.close();
  silent.close();
  unregister();
});

Deno.test("egress proxy: a call holds at most its cap of connections; the next are closed at once, the call's end cuts the rest", async () => {
  const upstream = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of upstream) accepted.push(conn);
  })();
  await using served = await proxyWith({ perCall: 4, headMs: 60_000 });
  const { token, unregister } = served.proxy.register([`127.0.0.1:${upstream.addr.port}`]);
  const tunnels: Deno.Conn[] = [];
  for (let i = 0; i < 4; i++) {
    const conn = await served.connect();
    await conn.write(
      encoder.encode(`toolgate-call ${token}\r\nCONNECT 127.0.0.1:${upstream.addr.port} HTTP/1.1\r\n\r\n`),
    );
    const answer = new Uint8Array(128);
    const n = await conn.read(answer);
    assert.match(new TextDecoder().decode(answer.subarray(0, n ?? 0)), /^HTTP\/1.1 200/);
    tunnels.push(conn);
  }
  const over: Deno.Conn[] = [];
  for (let i = 0; i < 3; i++) {
    const conn = await served.connect();
    await conn.write(encoder.encode(`toolgate-call ${token}\r\n`));
    over.push(conn);
  }
  for (const conn of over) assert.equal(await closedWithin(conn, 20_000), "closed", "over the cap: closed");
  // The four tunnels carry on.
  await tunnels[0].write(encoder.encode("ping"));
  const echo = new Uint8Array(4);
  while (accepted.length < 4) await new Promise((resolve) => setTimeout(resolve, 10));
  const reached = await Promise.any(accepted.map(async (conn) => {
    const n = await conn.read(echo);
    if (n !== 4) throw new Error("nothing");
    return new TextDecoder().decode(echo);
  }));
  assert.equal(reached, "ping");
  unregister();
  for (const conn of tunnels) assert.equal(await closedWithin(conn, 20_000), "closed", "the call ended: cut");
  for (const conn of [...tunnels, ...over, ...accepted]) conn.close();
  upstream.close();
  await accepting.catch(() => {});
});

Deno.test("egress proxy: connections that name no call cannot keep a call's bridge out", async () => {
  await using served = await proxyWith({ pending: 8, headMs: 60_000 });
  const { token, unregister } = served.proxy.register(["127.0.0.1:9"]);
  const silent = await Promise.all(Array.from({ length: 40 }, () => served.connect()));
  // A bridge's connection names its call at once, and is answered (here: the host is not in the list).
  const bridge = await served.connect();
  await bridge.write(encoder.encode(`toolgate-call ${token}\r\nCONNECT 127.0.0.1:10 HTTP/1.1\r\n\r\n`));
  const answer = new Uint8Array(256);
  const n = await bridge.read(answer);
  assert.match(new TextDecoder().decode(answer.subarray(0, n ?? 0)), /^HTTP\/1.1 403/);
  const closed = await Promise.all(silent.map((conn) => closedWithin(conn, 50)));
  assert.ok(closed.filter((state) => state === "closed").length >= 32, "all but the newest few were cut");
  for (const conn of [...silent, bridge]) conn.close();
  unregister();
});

const PERL = ["/usr/bin/perl", "/bin/perl"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

/**
 * The flooding tool: CHILDREN processes each open EACH connections to the proxy's socket and hold them; then one
 * tunnel through the bridge to the listed host (which tells the test the flood is in place), then connections
 * through the bridge (the call's own cap); all held HOLD seconds. Prints what it opened.
 */
const FLOOD_PL = `use strict; use Socket;
my ($port, $children, $each, $hold) = @ARGV;
pipe(my $r, my $w) or die;
for (1 .. $children) {
  next if fork();
  close $r; my @held; my $n = 0;
  for (1 .. $each) {
    socket(my $s, PF_UNIX, SOCK_STREAM, 0) or last;
    my $ok = eval { local $SIG{ALRM} = sub { die "alarm\\n" }; alarm 2;
      my $c = connect($s, pack_sockaddr_un("/tmp/.toolgate-proxy.sock")); alarm 0; $c };
    last unless $ok; push @held, $s; $n++;
  }
  syswrite $w, "$n\\n"; close $w; sleep $hold; exit 0;
}
close $w; my $direct = 0; while (my $line = <$r>) { $direct += $line; }
socket(my $t, PF_INET, SOCK_STREAM, 0) or die;
connect($t, pack_sockaddr_in(3128, inet_aton("127.0.0.1"))) or die "bridge: $!";
syswrite $t, "CONNECT 127.0.0.1:$port HTTP/1.1\\r\\nHost: 127.0.0.1:$port\\r\\n\\r\\n";
my $answer = ""; eval { local $SIG{ALRM} = sub { die "alarm\\n" }; alarm 10; sysread($t, $answer, 64); alarm 0; };
my ($status) = $answer =~ m{^HTTP/1.1 (\\d+)}; $status //= 0;
my @bridged;
for (1 .. 80) {
  socket(my $s, PF_INET, SOCK_STREAM, 0) or last;
  connect($s, pack_sockaddr_in(3128, inet_aton("127.0.0.1"))) or last; push @bridged, $s;
}
sleep $hold; 1 while wait() != -1;
print "{\\"direct\\":$direct,\\"tunnel\\":$status,\\"bridged\\":" . scalar(@bridged) . "}\\n";
`;

/** A `toolgate serve --http 0` process whose open files are limited to `nofile`, tools over `manifest`. */
async function serveLimited(
  manifest: string,
  cwd: string,
  nofile: number,
  sandbox = "require",
  tools = "flood,script_none",
) {
  const args = cliArgs([...GRANTS.broad, "--allow-net"], [
    "serve",
    "--tools",
    manifest,
    "--sandbox",
    sandbox,
    "--no-audit",
    "--kill-grace",
    "0.5",
    "--cwd",
    cwd,
    "--allow-tools",
    tools,
    "--http",
    "0",
  ]);
  return spawnHttp("/bin/sh", ["-c", `ulimit -n ${nofile} && exec "$0" "$@"`, Deno.execPath(), ...args], {
    TOOLGATE_MCP_TOKEN: TOKEN,
    XDG_STATE_HOME: await realTempDir(),
  });
}

hostTest(
  "a confined tool that floods the egress proxy with connections ends in an envelope; serve --http and another session go on",
  NO_BWRAP ?? (PERL ? undefined : "perl is not installed"),
  async () => {
    const listed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { promise: flooding, resolve: inPlace } = Promise.withResolvers<void>();
    const held: Deno.Conn[] = [];
    const accepting = (async () => {
      for await (const conn of listed) {
        held.push(conn);
        inPlace();
      }
    })();
    const dir = await realTempDir();
    const runner = await Deno.readTextFile(join(SCRIPT_FIXTURE, "..", "tools", "bin", "run_script"));
    await writeFiles(dir, {
      "tools.json": {
        tools: [
          {
            name: "flood",
            command: ["./tools/bin/flood", String(listed.addr.port), "4", "240", "6"],
            permissions: { net: [`127.0.0.1:${listed.addr.port}`] },
            timeoutSec: 60,
          },
          { name: "script_none", command: ["./tools/bin/run_script"], permissions: "none", timeoutSec: 20 },
        ],
      },
      "tools/bin/run_script": runner,
      "tools/bin/flood": `#!/bin/sh\nexec ${PERL} "$(dirname "$0")/../flood.pl" "$@"\n`,
      "tools/flood.pl": FLOOD_PL,
    });
    await Deno.chmod(join(dir, "tools/bin/run_script"), 0o755);
    await Deno.chmod(join(dir, "tools/bin/flood"), 0o755);
    // 256 descriptors: the tool opens 960 connections to the proxy's socket, and 80 more through its bridge.
    await using server = await serveLimited(join(dir, "tools.json"), dir, 256);
    await using first = await connectHttp(server.url, TOKEN);
    const flood = first.client.callTool({ name: "flood", arguments: {} }, undefined, { timeout: 120_000 });
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      flooding,
      flood.then((result) => {
        throw new Error(`the flood ended before it got through: ${JSON.stringify(result)}`);
      }),
      new Promise((_, reject) =>
        timer = setTimeout(
          () => reject(new Error(`the flood never got through:\n${server.stderr()}`)),
          60_000,
        )
      ),
    ]).finally(() => clearTimeout(timer));
    // While the connections are held: a new session (a new connection to serve) runs a call.
    {
      await using second = await connectHttp(server.url, TOKEN);
      const result = await second.client.callTool({
        name: "script_none",
        arguments: { script: "echo still-here" },
      });
      const envelope = envelopeOf(result as Record<string, unknown>);
      assert.equal(envelope.ok, true, JSON.stringify(envelope));
      assert.match(JSON.stringify(envelope), /still-here/);
    }
    const flooded = envelopeOf(await flood as Record<string, unknown>);
    assert.equal(flooded.ok, true, JSON.stringify(flooded));
    const counts = flooded.result as { out?: string; direct?: number; tunnel?: number; bridged?: number };
    assert.ok(
      (counts.direct ?? 0) > 256,
      `the flood opened more than toolgate may hold: ${JSON.stringify(counts)}`,
    );
    assert.equal(counts.tunnel, 200, "the call's own bridge got through the flood");
    assert.ok(server.running(), `serve --http is still up:\n${server.stderr()}`);
    assert.doesNotMatch(server.stderr(), /Uncaught/, server.stderr());
    for (const conn of held) conn.close();
    listed.close();
    await accepting.catch(() => {});
  },
);

Deno.test("serve --http out of file descriptors on accept: the server listens again, its sessions go on", async () => {
  const dir = await realTempDir();
  await using server = await serveLimited(SCRIPT_FIXTURE, dir, 64, "off", "script_none");
  await using before = await connectHttp(server.url, TOKEN);
  const port = Number(server.url.port);
  // Connections that send nothing, more than the server has descriptors for: its accept fails (EMFILE).
  const held: Deno.Conn[] = [];
  for (let i = 0; i < 100; i++) {
    try {
      held.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    } catch {
      break; // Refused or reset: the server is out of descriptors, or listening again.
    }
  }
  // Let the server meet them before they go.
  await new Promise((resolve) => setTimeout(resolve, 500));
  for (const conn of held) conn.close();
  let answered: Record<string, unknown> | undefined;
  for (let attempt = 0; attempt < 50 && answered === undefined; attempt++) {
    try {
      await using after = await connectHttp(server.url, TOKEN);
      answered = await after.client.callTool({ name: "script_none", arguments: { script: "echo again" } });
    } catch {
      if (!server.running()) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  assert.ok(server.running(), `serve --http is still up:\n${server.stderr()}`);
  assert.match(JSON.stringify(answered), /again/, server.stderr());
  const earlier = await before.client.callTool({
    name: "script_none",
    arguments: { script: "echo earlier" },
  });
  assert.match(JSON.stringify(earlier), /earlier/, "a session opened before goes on");
  assert.doesNotMatch(server.stderr(), /Uncaught/, server.stderr());
  assert.match(server.stderr(), /stopped accepting \(.*Too many open files/, "the accept did fail");
});
