/**
 * `validate` and `doctor` on a manifest's MCP servers, without starting them: a program not found is an error
 * (exit 1, "valid" never printed); a path its arguments name that is missing, a secret neither stored nor in the
 * environment and an npx entry are warnings; doctor shows each server's profile and how it runs here.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { hasStackTrace, runToolgate, tempDir } from "./support.ts";

/** A project whose manifest has `servers`, with a state folder of its own. */
async function withServers(servers: Record<string, unknown>) {
  const dir = await tempDir();
  await Deno.writeTextFile(join(dir.path, "tools.json"), JSON.stringify({ tools: [], mcpServers: servers }));
  const env = {
    HOME: dir.path,
    XDG_STATE_HOME: join(dir.path, ".state"),
    XDG_CONFIG_HOME: join(dir.path, ".config"),
  };
  return {
    dir,
    env,
    run: (args: string[]) => runToolgate([...args, "--tools", "tools.json"], dir.path, env),
  };
}

const FS = (dir: string) => ({
  command: "node",
  args: [join(dir, "missing", "index.js"), dir],
  permissions: { read: ["/opt"], write: ["."], net: false },
  secrets: ["FS_TOKEN"],
});

Deno.test("validate: an MCP server whose program is not found fails the manifest, naming it and the fix", async () => {
  const p = await withServers({ gone: { command: "no-such-mcp-program" } });
  await using _ = p.dir;
  const result = await p.run(["validate"]);
  assert.equal(result.code, 1, result.stdout + result.stderr);
  assert.ok(!hasStackTrace(result.stderr));
  assert.doesNotMatch(result.stdout, /valid/);
  assert.match(
    result.stderr,
    /mcpServers "gone": the program no-such-mcp-program is not found on PATH \(.*\) \(install it, or name it/,
  );
});

Deno.test("validate: a missing argument path, an unset secret and an npx entry are warnings; the manifest is valid", async () => {
  const probe = await tempDir();
  await using _probe = probe;
  const p = await withServers({
    fs: FS(probe.path),
    mem: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] },
    // uv need not be installed: toolgate installs a uvx entry with a venv and pip.
    clock: { command: "uvx", args: ["mcp-server-time"] },
  });
  await using _ = p.dir;
  const result = await p.run(["validate"]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout, /valid, 0 tools, 3 MCP servers/);
  assert.match(
    result.stderr,
    new RegExp(
      `warning: mcpServers "fs": its arguments name ${
        join(probe.path, "missing", "index.js")
      }, which does not exist`,
    ),
  );
  assert.match(
    result.stderr,
    /warning: mcpServers "fs": it needs the secret FS_TOKEN, .*\(toolgate secrets set FS_TOKEN\)/,
  );
  // An npx entry runs from the install `toolgate trust` makes, under node: npx itself is no program it needs.
  assert.doesNotMatch(result.stderr, /mcpServers "mem"/);
  // Set in the environment, the secret is no longer missing.
  const withSecret = await runToolgate(["validate", "--tools", "tools.json"], p.dir.path, {
    ...p.env,
    FS_TOKEN: "x",
  });
  assert.doesNotMatch(withSecret.stderr, /FS_TOKEN/);
});

Deno.test("doctor: each MCP server's profile and how it runs here; one that cannot start exits 1", async () => {
  const p = await withServers({ fs: FS("/opt"), gone: { command: "no-such-mcp-program" } });
  await using _ = p.dir;
  const text = await p.run(["doctor"]);
  assert.equal(text.code, 1, text.stdout + text.stderr);
  assert.match(
    text.stdout,
    /server fs\s+(confined|unconfined|CANNOT START) \(writes \.; no network; reads \/opt\): \/\S+node/,
  );
  assert.match(text.stdout, /server gone\s+CANNOT START \(writes nothing; no network\): not found/);
  assert.match(text.stdout, /error: mcpServers "gone": the program no-such-mcp-program is not found/);
  const json = JSON.parse((await p.run(["doctor", "--json"])).stdout);
  const servers = json.confinement.servers as { server: string; reads: string[]; errors: unknown[] }[];
  assert.deepEqual(servers.map((s) => s.server), ["fs", "gone"]);
  assert.deepEqual(servers[0].reads, ["/opt"]);
  assert.equal(servers[1].errors.length, 1);
});

Deno.test("doctor: a package server that toolgate trust has not installed cannot start, said with the fix; validate only warns", async () => {
  const p = await withServers({
    mem: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] },
  });
  await using _ = p.dir;
  const text = await p.run(["doctor"]);
  assert.equal(text.code, 1, text.stdout + text.stderr);
  assert.match(text.stdout, /server mem\s+CANNOT START /);
  assert.match(
    text.stdout,
    /error: mcpServers "mem": npx @modelcontextprotocol\/server-memory is not installed: run `toolgate trust`/,
  );
  assert.match(text.stdout, /fix: toolgate trust, in the manifest's folder/);
  // validate reads the manifest alone: the install is not its business.
  const validated = await p.run(["validate"]);
  assert.doesNotMatch(validated.stdout + validated.stderr, /is not installed/);
});
