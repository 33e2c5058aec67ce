/**
 * The README's MCP host recipe (`toolgate serve --cwd /path/to/your/project`) started the way a host starts it:
 * from a folder of the host's own. `--cwd` chooses the manifest as well as the workspace, so the project's own
 * tools are served (not the built-in belt), by the launcher's grants as by the command.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
import { classify, fencedBlocks } from "../readme_blocks.ts";
import { denoDir, launcherArgs, REPO, runToolgate, tempDir } from "../support.ts";

/** The README's one MCP host configuration: its server's args. */
function readmeHostArgs(): string[] {
  const readme = Deno.readTextFileSync(join(REPO, "README.md"));
  for (const block of fencedBlocks(readme)) {
    const kind = classify(block);
    if (kind.kind === "mcp-config") {
      const [server] = Object.values(kind.config.mcpServers);
      assert.equal(server.command, "toolgate");
      return server.args ?? [];
    }
  }
  throw new Error("the README has no MCP host configuration");
}

Deno.test("serve --cwd: the README's MCP host recipe, started from the host's own folder, serves the project's tools", async () => {
  await using projectDir = await tempDir();
  await using host = await tempDir();
  await using state = await tempDir();
  const env = { XDG_STATE_HOME: state.path, XDG_CONFIG_HOME: join(state.path, "config"), HOME: state.path };
  // The README's quickstart project: `toolgate init`, then `toolgate trust`, in its own folder.
  const init = await runToolgate(["init"], projectDir.path, env);
  assert.equal(init.code, 0, init.stderr);
  const trust = await runToolgate(["trust"], projectDir.path, env);
  assert.equal(trust.code, 0, trust.stderr);

  const args = readmeHostArgs().map((arg) => arg.replaceAll("/path/to/your/project", projectDir.path));
  assert.ok(args.includes("--cwd"), `the README's recipe names no --cwd: ${args.join(" ")}`);
  let stderr = "";
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: launcherArgs(args),
    cwd: host.path,
    env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...env },
    stderr: "pipe",
  });
  transport.stderr?.on("data", (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk));
  const client = new Client({ name: "serve-cwd-test", version: "1.0.0" });
  try {
    await client.connect(transport);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    assert.deepEqual(names, ["greet_person"], stderr);
    const answer = await client.callTool({ name: "greet_person", arguments: { name: "Ada" } });
    assert.equal(answer.isError, undefined, JSON.stringify(answer) + stderr);
    assert.deepEqual(answer.structuredContent, { greeting: "Hello, Ada!" });
  } finally {
    await client.close();
  }
});

Deno.test("call --cwd: the manifest is looked up from the workspace, and an untrusted one there is refused", async () => {
  await using projectDir = await tempDir();
  await using host = await tempDir();
  await using state = await tempDir();
  const env = { XDG_STATE_HOME: state.path, XDG_CONFIG_HOME: join(state.path, "config"), HOME: state.path };
  assert.equal((await runToolgate(["init"], projectDir.path, env)).code, 0);
  const call = ["call", "--cwd", projectDir.path, "greet_person", '{"name":"Ada"}'];
  // Not trusted yet: found from --cwd, it is held to the trust gate like one found here.
  const refused = await runToolgate(call, host.path, env);
  assert.notEqual(refused.code, 0, refused.stdout);
  assert.match(refused.stderr, /trust/);
  assert.equal((await runToolgate(["trust"], projectDir.path, env)).code, 0);
  const ran = await runToolgate(call, host.path, env);
  assert.equal(ran.code, 0, ran.stderr);
  // Without bubblewrap the envelope also carries the not-confined warning: the result is what this test holds.
  const answer = JSON.parse(ran.stdout.trim());
  assert.deepEqual([answer.ok, answer.result, answer.tool], [
    true,
    { greeting: "Hello, Ada!" },
    "greet_person",
  ]);
});
