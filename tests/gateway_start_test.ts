/**
 * Fast and loud failures of an MCP server's start: one that does not answer `initialize` within its
 * `startTimeoutSec` (default 10 s) is reported at once with its last stderr lines; the likely fix is named (a
 * folder for `permissions.read` when it did not find a path its sandbox hides, `toolgate trust` for an `npx`
 * entry); and `toolgate trust` exits 1 when a server cannot be pinned.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { project, skipOrFail } from "./gateway_support.ts";
import { hasStackTrace, tempDir } from "./support.ts";
import { Upstream, UpstreamError } from "../src/gateway/upstream.ts";
import { ToolLauncher } from "../src/sandbox/tool_launch.ts";
import { validateManifest } from "../src/manifest/manifest.ts";
import { loadSchemaEngine } from "../src/manifest/schema.ts";
import { NO_BWRAP } from "./security/helpers.ts";
import { findProgram } from "../src/base/find_program.ts";
import { requires } from "./requires.ts";

const NODE = findProgram("node", Deno.env.get("PATH") ?? "/usr/bin:/bin");
// Bubblewrap first, through its own facility (a pass without it skips for that reason), then node.
const confinedNode = requires("bwrap", NO_BWRAP, "gateway_start_test")
  ? NO_BWRAP
  : skipOrFail("gateway_start_test", NODE === undefined ? "no node on PATH" : undefined);

/** An upstream of the one server `entry` in a manifest in `dir`, under `sandbox`. */
async function upstreamOf(dir: string, entry: Record<string, unknown>, sandbox: "off" | "require") {
  await loadSchemaEngine();
  const loaded = validateManifest({ tools: [], mcpServers: { srv: entry } }, join(dir, "tools.json"));
  assert.ok(loaded.ok, JSON.stringify(loaded));
  const manifest = loaded.manifest;
  const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: dir };
  return new Upstream({
    server: manifest.servers[0],
    launcher: new ToolLauncher({
      manifest,
      env,
      workspace: dir,
      controlPlane: { readOnly: [], hidden: [] },
      sandbox,
    }),
    env,
    workspace: dir,
    secret: () => undefined,
    graceMs: 100,
  });
}

/** The error `listTools` ends with. */
async function startError(upstream: Upstream): Promise<UpstreamError> {
  try {
    const error = await upstream.listTools().then(() => undefined, (e) => e);
    assert.ok(error instanceof UpstreamError, `started, or failed otherwise: ${error}`);
    return error;
  } finally {
    await upstream.close();
  }
}

Deno.test("gateway: a server silent at initialize past its startTimeoutSec is reported with its last stderr lines", async () => {
  await using dir = await tempDir();
  const script = join(dir.path, "silent.sh");
  await Deno.writeTextFile(
    script,
    "#!/bin/sh\necho 'loading the index' >&2\necho 'Error: waiting for a config that never comes' >&2\nsleep 60\n",
    { mode: 0o755 },
  );
  const error = await startError(await upstreamOf(dir.path, { command: script, startTimeoutSec: 1 }, "off"));
  assert.match(error.message, /did not answer initialize within 1 s \(its startTimeoutSec\)/);
  assert.match(error.message, /its last stderr lines: loading the index \| Error: waiting for a config/);
  assert.equal(error.retryable, true);
});

Deno.test("gateway: startTimeoutSec is checked like timeoutSec", async () => {
  await loadSchemaEngine();
  const loaded = validateManifest(
    { tools: [], mcpServers: { srv: { command: "node", startTimeoutSec: 0 } } },
    "/srv/p/tools.json",
  );
  assert.equal(loaded.ok, false);
  if (loaded.ok) return;
  assert.match(
    loaded.errors.join("\n"),
    /mcpServers "srv": startTimeoutSec must be a positive integer up to 300/,
  );
});

Deno.test({
  name:
    "gateway: a confined node server whose script its sandbox hides names the folder to add to permissions.read",
  ignore: confinedNode !== undefined,
  async fn() {
    await using dir = await tempDir();
    await using hidden = await tempDir();
    const script = join(hidden.path, "node_modules", "srv", "index.js");
    await Deno.mkdir(join(hidden.path, "node_modules", "srv"), { recursive: true });
    await Deno.writeTextFile(script, "console.log('never reached inside');\n");
    const error = await startError(
      await upstreamOf(dir.path, { command: "node", args: [script] }, "require"),
    );
    assert.match(error.message, /Cannot find module/);
    assert.match(
      error.message,
      new RegExp(
        `likely fix: add ${join(hidden.path, "node_modules").replaceAll(".", "\\.")} to permissions\\.read`,
      ),
    );
  },
});

Deno.test({
  name: "trust: an npx entry whose package cannot be installed exits 1, saying why on its server's line",
  ignore: confinedNode !== undefined || findProgram("npx", Deno.env.get("PATH") ?? "") === undefined,
  async fn() {
    await using p = await project({
      memory: {
        command: "npx",
        args: ["-y", "@toolgate-test-nonexistent/no-such-server"],
        startTimeoutSec: 3,
      },
    });
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 1, trust.stdout + trust.stderr);
    assert.ok(!hasStackTrace(trust.stdout + trust.stderr));
    assert.match(
      trust.stdout,
      /MCP server "memory": not pinned, it cannot be used: its package could not be installed: npm install .* failed/,
    );
    assert.match(
      trust.stdout,
      /memory: npx @toolgate-test-nonexistent\/no-such-server cannot be installed: npm install .* failed \(exit \d+\): npm error code E404/,
    );
  },
});

Deno.test("gateway: the likely fix names a host the egress proxy refused, or one a server could not resolve without a network", async () => {
  const { startHint } = await import("../src/gateway/start_hint.ts");
  assert.equal(
    startHint({
      command: "node",
      stderr: "fetch failed",
      refusedHosts: ["registry.example.com", "registry.example.com"],
    }),
    "it tried to reach registry.example.com, which its profile's net does not list (add it to permissions.net if it should)",
  );
  assert.equal(
    startHint({
      command: "/usr/bin/python3",
      stderr: "Error: getaddrinfo ENOTFOUND api.example.org\n",
      refusedHosts: [],
    }),
    "it tried to reach api.example.org, and its profile has no network for it (list the host in permissions.net if it should)",
  );
  // A path the sandbox shows, or one in a folder holding secrets, is no read to add.
  const view = {
    visible: ["/usr", "/srv/p"],
    reads: [],
    refuses: (folder: string) =>
      folder.includes("/.ssh") ? "it lies in .ssh, which holds secrets" : undefined,
  };
  assert.equal(
    startHint({ command: "node", stderr: "Error: Cannot find module '/srv/p/x.js'", refusedHosts: [], view }),
    undefined,
  );
  assert.equal(
    startHint({
      command: "node",
      stderr: "ENOENT: no such file or directory, open '/home/u/.ssh/config'",
      refusedHosts: [],
      view,
    }),
    undefined,
  );
  assert.equal(
    startHint({ command: "uvx", stderr: "", refusedHosts: [] })?.startsWith("uvx cannot download"),
    true,
  );
});

Deno.test({
  name:
    "gateway: a confined server the egress proxy refused a host at start names that host as the likely fix",
  ignore: NO_BWRAP !== undefined || findProgram("curl", "/usr/bin:/bin") === undefined,
  async fn() {
    await using dir = await tempDir();
    const script = join(dir.path, "fetches.sh");
    await Deno.writeTextFile(
      script,
      "#!/bin/sh\ncurl -sS -m 5 https://refused.example.org/ >/dev/null 2>&1\n" +
        "echo 'Error: the index cannot be fetched' >&2\nexit 1\n",
      { mode: 0o755 },
    );
    const error = await startError(
      await upstreamOf(
        dir.path,
        { command: script, permissions: { net: ["allowed.example.com"] } },
        "require",
      ),
    );
    assert.match(error.message, /it ended at start \(exit 1\)/);
    assert.match(
      error.message,
      /likely fix: it tried to reach refused\.example\.org, which its profile's net does not list/,
    );
    assert.match(error.message, /its last stderr lines: Error: the index cannot be fetched/);
  },
});
