// End to end for a `node FILE` entry (the filesystem server's own dist/index.js, installed from npm into
// tests/.cache): Claude Desktop's file imported with no hand edit, the manifest trusted, the host rewired by
// `import --apply`, and then the host's own entry started as the host starts it (its command and arguments, read
// back from the rewired file), by the official SDK client: it lists that server's tools only and calls one, the
// server confined to the profile the import proposed (its package's node_modules read, its root written).
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { FS_SERVER, MODULES, nodeServersMissing } from "../gateway_support.ts";
import { runToolgate, tempDir } from "../support.ts";

const ignore = await nodeServersMissing("import_serve_test") !== undefined;

Deno.test({
  name:
    "import: a node FILE server of Claude Desktop's, imported, trusted, applied, then called through the host's entry",
  ignore,
  async fn() {
    await using project = await tempDir();
    await using home = await tempDir();
    const p = project.path;
    await Deno.writeTextFile(join(p, "a.txt"), "hello from the project\n");
    const config = join(home.path, ".config", "Claude", "claude_desktop_config.json");
    await Deno.mkdir(join(config, ".."), { recursive: true });
    await Deno.writeTextFile(
      config,
      JSON.stringify(
        {
          mcpServers: {
            files: { command: "node", args: [FS_SERVER, p] },
            other: { command: "node", args: [FS_SERVER, join(p, "sub")] },
          },
        },
        null,
        2,
      ),
    );
    await Deno.mkdir(join(p, "sub"));
    const env = { HOME: home.path, XDG_STATE_HOME: join(home.path, ".local", "state") };
    const run = (args: string[]) => runToolgate(args, p, env);

    const imported = await run(["import"]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, new RegExp(`files: read ${MODULES} \\(the package of index\\.js`));
    const manifest = JSON.parse(await Deno.readTextFile(join(p, "tools.json")));
    assert.deepEqual(manifest.mcpServers.files.permissions, { read: [MODULES], write: [p], net: false });

    const trust = await run(["trust"]);
    assert.equal(trust.code, 0, trust.stderr);
    assert.match(trust.stdout, /mcp__files__read_text_file \(new\)/);

    const applied = await run(["import", "--apply", "claude-desktop"]);
    assert.equal(applied.code, 0, applied.stderr);
    const entry = JSON.parse(await Deno.readTextFile(config)).mcpServers.files;

    // As the host starts it: the entry's command and arguments, the host's own environment.
    // Started in the project: the entry names it with --cwd, and serve looking the manifest up from --cwd is the
    // serve part of issue 37 (then a host starts it from any folder).
    const transport = new StdioClientTransport({
      command: entry.command,
      args: entry.args,
      cwd: p,
      env: { ...Deno.env.toObject(), ...env, NO_COLOR: "1" },
      stderr: "pipe",
    });
    const client = new Client({ name: "host", version: "1.0.0" }, { capabilities: { elicitation: {} } });
    // The host's user approves the call in its form (the server's profile writes, so a call is asked about).
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: "accept", content: { always: false } }));
    await client.connect(transport);
    try {
      // The host sees the server's own tool names, as it did before toolgate (its per-tool settings keep
      // working; Claude Code shows mcp__files__read_text_file, not mcp__files__mcp__files__read_text_file).
      const { tools } = await client.listTools();
      const names = tools.map((tool) => tool.name);
      assert.ok(names.includes("read_text_file"), names.join(", "));
      assert.deepEqual(names.filter((name) => name.startsWith("mcp__")), []);
      const read = await client.callTool({ name: "read_text_file", arguments: { path: join(p, "a.txt") } });
      assert.equal(read.isError, undefined, JSON.stringify(read));
      assert.match(JSON.stringify(read.content), /hello from the project/);
    } finally {
      await client.close();
    }
    // The audit line keeps toolgate's full name.
    const log = await run(["log", "--json"]);
    assert.equal(log.code, 0, log.stderr);
    const audited = log.stdout.trim().split("\n").map((line) => JSON.parse(line).tool);
    assert.ok(audited.includes("mcp__files__read_text_file"), log.stdout);

    // A name the manifest does not hold: one line, exit 2.
    const unknown = await run(["serve", "--server", "nope"]);
    assert.equal(unknown.code, 2);
    assert.match(
      unknown.stderr,
      /--server "nope": .*tools\.json has no MCP server of that name \(it has files, other\)/,
    );

    const undo = await run(["import", "--undo", "claude-desktop"]);
    assert.equal(undo.code, 0, undo.stderr);
    assert.equal(JSON.parse(await Deno.readTextFile(config)).mcpServers.files.command, "node");
  },
});
