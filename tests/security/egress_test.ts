// A profile's host list is enforced for every tool, not only http_fetch (issue 11, "Enforced host lists"): a
// confined tool whose profile names hosts reaches those, through toolgate's filtering proxy, and nothing else; a
// direct connection has no network to go out on.
import assert from "node:assert/strict";
import { join } from "node:path";
import { runToolgate, writeFiles } from "../support.ts";
import {
  hostTest,
  netScriptExecutor,
  NO_BWRAP,
  realTempDir,
  runScript,
  SCRIPT_FIXTURE,
  scriptExecutor,
} from "./helpers.ts";

const CURL = ["/usr/bin/curl", "/bin/curl"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

function server(reply: string) {
  const hits: string[] = [];
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    hits.push(new URL(request.url).pathname);
    return new Response(reply);
  });
  return { http, hits, port: http.addr.port };
}

hostTest(
  "a profile's host list: the listed host is reached through the proxy, any other is refused, a direct connection goes nowhere",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    const listed = server("listed-ok");
    const other = server("other-ok");
    try {
      const dir = await realTempDir();
      const runner = await Deno.readTextFile(join(SCRIPT_FIXTURE, "..", "tools", "bin", "run_script"));
      await writeFiles(dir, {
        "tools.json": {
          tools: [{
            name: "fetcher",
            command: ["./tools/bin/run_script"],
            permissions: { net: [`127.0.0.1:${listed.port}`] },
          }],
        },
        "tools/bin/run_script": runner,
      });
      const script = [
        `curl -s -m 5 http://127.0.0.1:${listed.port}/plain; echo`,
        `curl -s -m 5 -p http://127.0.0.1:${listed.port}/tunnel; echo`,
        `curl -s -m 5 -o /dev/null -w code=%{http_code} http://127.0.0.1:${other.port}/refused; echo`,
        `curl -s -m 5 -p -o /dev/null http://127.0.0.1:${other.port}/tunnel-refused; echo tunnel=$?`,
        `curl -s -m 3 --noproxy '*' http://127.0.0.1:${other.port}/direct; echo direct=$?`,
        // Straight to the proxy's socket, without the bridge's call token: a call it does not serve.
        `curl -s -m 3 -o /dev/null -w socket=%{http_code} --unix-socket /tmp/.toolgate-proxy.sock ` +
        `http://127.0.0.1:${listed.port}/forged; echo`,
      ].join("; ");
      // Through the library's executor, and through the toolgate command under its least permission set.
      const executor = await scriptExecutor(dir, {}, join(dir, "tools.json"));
      const viaLibrary = await runScript(executor, "fetcher", script);
      const launched = await runToolgate(
        ["--tools", join(dir, "tools.json"), "call", "fetcher", JSON.stringify({ script }), "--locked"],
        dir,
        { XDG_STATE_HOME: await realTempDir() },
      );
      assert.equal(launched.code, 0, launched.stderr);
      for (const result of [viaLibrary, JSON.parse(launched.stdout).result]) {
        assert.match(result.out, /listed-ok.*listed-ok/, result.out);
        assert.match(result.out, /code=403/, result.out);
        assert.match(result.out, /tunnel=[1-9]/, result.out);
        assert.match(result.out, /direct=[1-9]/, result.out);
        assert.match(result.out, /socket=403/, result.out);
      }
      assert.deepEqual(listed.hits, ["/plain", "/tunnel", "/plain", "/tunnel"]);
      assert.deepEqual(other.hits, [], "nothing reached the host that is not listed");
    } finally {
      await listed.http.shutdown();
      await other.http.shutdown();
    }
  },
);

hostTest(
  "a long state folder: the egress proxy's socket still fits through the command; one past a socket's limit is unavailable, naming XDG_STATE_HOME",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    const listed = server("listed-ok");
    try {
      const dir = await realTempDir();
      const script = `curl -s -m 5 http://127.0.0.1:${listed.port}/plain; echo`;
      const executor = await netScriptExecutor(dir, "fetcher", [`127.0.0.1:${listed.port}`]);
      // The library's executor with its state in the workspace, as a check of the tool itself.
      assert.match((await runScript(executor, "fetcher", script)).out, /listed-ok/);
      await executor.close();
      // A state folder of 65 characters, as a long home gives: the launcher's socket, `<16 hex>.sock` under
      // `toolgate/proxy/`, is 102 bytes (a UUID's name made it 122, past a socket's 107: the proxy could not start).
      const base = await realTempDir();
      const state = join(base, "s".repeat(64 - base.length));
      await Deno.mkdir(state);
      assert.equal(state.length, 65, `the temporary folder ${base} is too long for this test`);
      const launched = await runToolgate(
        ["--tools", join(dir, "tools.json"), "call", "fetcher", JSON.stringify({ script }), "--locked"],
        dir,
        { XDG_STATE_HOME: state },
      );
      assert.equal(launched.code, 0, launched.stdout + launched.stderr);
      assert.match(JSON.parse(launched.stdout).result.out, /listed-ok/, launched.stdout);
      // Past the limit, the call says why and what to set, before any folder is made for the socket.
      const far = join(base, "f".repeat(100));
      await Deno.mkdir(far);
      const long = await netScriptExecutor(dir, "fetcher", [`127.0.0.1:${listed.port}`], {
        env: {
          PATH: "/usr/local/bin:/usr/bin:/bin",
          HOME: Deno.env.get("HOME") ?? "/root",
          XDG_STATE_HOME: far,
        },
      });
      try {
        const envelope = await long.call("fetcher", JSON.stringify({ script }));
        assert.equal(envelope.ok, false, JSON.stringify(envelope));
        assert.equal(!envelope.ok && envelope.kind, "unavailable");
        assert.match(
          !envelope.ok ? envelope.message : "",
          /egress proxy cannot start: its socket's path \S+ is \d+ bytes, past the 107 .*set XDG_STATE_HOME/,
        );
      } finally {
        await long.close();
      }
      assert.deepEqual(listed.hits, ["/plain", "/plain"]);
    } finally {
      await listed.http.shutdown();
    }
  },
);

Deno.test("a profile's host list names hosts exactly: wildcards and URLs are refused at load", async () => {
  const { parseProfile } = await import("../../src/manifest/profiles.ts");
  for (const bad of ["*.example.com", "https://example.com", "example.com/path", ""]) {
    assert.equal(parseProfile({ net: [bad] }, "inline").ok, false, bad);
  }
  for (const good of ["api.example.com", "api.example.com:443", "127.0.0.1:8080", "[::1]:8080"]) {
    assert.equal(parseProfile({ net: [good] }, "inline").ok, true, good);
  }
});
