/**
 * What `serve` hands its MCP clients from an upstream server, compared with what the server itself answers: the
 * content blocks and `structuredContent` of a success unchanged (server-everything's `get-structured-content`),
 * an `isError` answer's content blocks kept beside the failure envelope, `--allow-tools` in its exact
 * `mcp__SERVER__TOOL` form, and a server's `tools/list_changed` passed on to serve's own clients.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ToolListChangedNotificationSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import {
  auditLines,
  EVERYTHING_SERVER,
  EVERYTHING_STDIO,
  FS_SERVER,
  MODULES,
  NODE,
  nodeServersMissing,
  project,
} from "./gateway_support.ts";
import { denoDir, launcherArgs } from "./support.ts";

const ignore = await nodeServersMissing("gateway_serve_test") !== undefined;

/** A client of `command args`, over stdio, run in `cwd`. */
async function stdioClient(command: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const client = new Client({ name: "gateway-serve-test", version: "1.0.0" });
  const changed = Promise.withResolvers<void>();
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed.resolve());
  await client.connect(
    new StdioClientTransport({
      command,
      args,
      cwd,
      // A HOME of the test's own keeps this user's Deno cache.
      env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...env },
      stderr: "pipe",
    }),
  );
  return Object.assign(client, { toolsChanged: changed.promise });
}

/** The client of `toolgate serve ARGS` in `dir`. */
function serveClient(dir: string, env: Record<string, string>, extra: string[]) {
  return stdioClient(Deno.execPath(), launcherArgs(["serve", ...extra]), dir, env);
}

/**
 * A server of the test's own: `fail` fails with a text block and an image block; `grow` adds a tool, which makes
 * the SDK send `notifications/tools/list_changed`.
 */
function failingServer(): string {
  const sdk = join(MODULES, "@modelcontextprotocol", "sdk", "dist", "esm");
  return `
import { McpServer } from ${JSON.stringify(join(sdk, "server", "mcp.js"))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, "server", "stdio.js"))};
const server = new McpServer({ name: "own", version: "1.0.0" });
server.registerTool("fail", { description: "Fails, with a picture." }, async () => ({
  isError: true,
  content: [
    { type: "text", text: "it broke" },
    { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
  ],
}));
server.registerTool("grow", { description: "Adds a tool." }, async () => {
  server.registerTool("added", { description: "Added later." }, async () => ({ content: [{ type: "text", text: "x" }] }));
  return { content: [{ type: "text", text: "grown" }] };
});
await server.connect(new StdioServerTransport());
`;
}

Deno.test({
  name:
    "serve: server-everything's content and structuredContent pass through unchanged; --allow-tools takes mcp__SERVER__TOOL",
  ignore,
  async fn() {
    await using p = await everythingProject();
    const args = { name: "get-structured-content", arguments: { location: "Chicago" } };
    const direct = await stdioClient(NODE, [EVERYTHING_SERVER, "stdio"], p.dir.path);
    let expected;
    try {
      expected = await direct.callTool(args);
    } finally {
      await direct.close();
    }
    assert.ok(expected.structuredContent !== undefined, JSON.stringify(expected));

    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__ev__get-structured-content"]);
    try {
      const answer = await client.callTool({ ...args, name: "mcp__ev__get-structured-content" });
      assert.equal(answer.isError, undefined, JSON.stringify(answer));
      assert.deepEqual(answer.content, expected.content);
      assert.deepEqual(answer.structuredContent, expected.structuredContent);

      // Only the tool named is allowed: another of the same server still needs an approval serve cannot get.
      const echo = await client.callTool({ name: "mcp__ev__echo", arguments: { message: "not allowed" } });
      assert.equal(echo.isError, true, JSON.stringify(echo));
      assert.doesNotMatch(JSON.stringify(echo.content), /Echo: not allowed/);
    } finally {
      await client.close();
    }
  },
});

/** A project whose one MCP server is server-everything over stdio (named `ev`, reading its modules only), trusted. */
async function everythingProject(): Promise<Awaited<ReturnType<typeof project>>> {
  const p = await project({
    ev: EVERYTHING_STDIO,
  });
  const trust = await p.run(["trust"]);
  assert.equal(trust.code, 0, trust.stderr);
  return p;
}

/** A trusted project whose one MCP server, `own`, is {@linkcode failingServer} run by Node. */
async function ownServerProject(): Promise<Awaited<ReturnType<typeof project>>> {
  const p = await project({});
  const script = join(p.dir.path, "server.mjs");
  await Deno.writeTextFile(script, failingServer());
  await Deno.writeTextFile(
    join(p.dir.path, "tools.json"),
    JSON.stringify({
      tools: [],
      mcpServers: { own: { command: "node", args: [script], permissions: { read: [MODULES] } } },
    }),
  );
  assert.equal((await p.run(["trust"])).code, 0);
  return p;
}

Deno.test({
  name: "serve: an upstream isError answer keeps its content blocks beside the failure envelope",
  ignore,
  async fn() {
    await using p = await ownServerProject();
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__own__fail"]);
    try {
      const failed = await client.callTool({ name: "mcp__own__fail", arguments: {} });
      assert.equal(failed.isError, true, JSON.stringify(failed));
      assert.deepEqual(failed.content, [
        { type: "text", text: "it broke" },
        { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
      ]);
      const structured = failed.structuredContent as Record<string, unknown>;
      assert.equal(structured.ok, false);
      assert.equal(structured.kind, "execution_error");
      assert.equal(structured.message, "it broke");
      // The envelope stays the contract's: the blocks are the MCP answer's, not a second copy inside it.
      assert.equal(structured.content, undefined);
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name: "serve: an upstream's tools/list_changed reaches serve's own clients once the new listing is checked",
  ignore,
  async fn() {
    await using p = await ownServerProject();
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__own__*"]);
    try {
      assert.equal(client.getServerCapabilities()?.tools?.listChanged, true);
      const grown = await client.callTool({ name: "mcp__own__grow", arguments: {} });
      assert.equal(grown.isError, undefined, JSON.stringify(grown));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"late">((done) => timer = setTimeout(() => done("late"), 15_000));
      const told = await Promise.race([client.toolsChanged.then(() => "told" as const), late]);
      clearTimeout(timer);
      assert.equal(told, "told", "serve's client was never sent notifications/tools/list_changed");
      // The tool added has no pin: still not listed (and a call to it answers rejected, see gateway_lifecycle_test).
      const { tools } = await client.listTools();
      assert.ok(tools.some((tool) => tool.name === "mcp__own__grow"));
      assert.ok(!tools.some((tool) => tool.name === "mcp__own__added"));
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name:
    "serve: a gateway call's audit line, written behind its answer, is in the file once the client closes stdin",
  ignore,
  async fn() {
    await using p = await everythingProject();
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__ev__echo"]);
    try {
      const answer = await client.callTool({ name: "mcp__ev__echo", arguments: { message: "audited" } });
      assert.equal(answer.isError, undefined, JSON.stringify(answer));
    } finally {
      // Ends serve's stdin at once, as a host stopping its server does, and waits for the process to end.
      await client.close();
    }
    const lines = (await auditLines(p.state.path)).filter((line) => line.tool === "mcp__ev__echo");
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].server, "ev");
    assert.equal(lines[0].upstream_tool, "echo");
    assert.equal(lines[0].outcome, "ok");
  },
});

Deno.test({
  name:
    "serve: the README's filesystem server runs its readOnly reads unasked though its profile writes; a write is refused, its reason from the profile",
  ignore,
  async fn() {
    // The README's gateway example: the filesystem server on the project, writing it, its reads declared.
    await using p = await project({});
    await Deno.writeTextFile(join(p.dir.path, "notes.txt"), "hello\n");
    await Deno.writeTextFile(
      join(p.dir.path, "tools.json"),
      JSON.stringify({
        tools: [],
        mcpServers: {
          fs: {
            command: "node",
            args: [FS_SERVER, p.dir.path],
            permissions: { read: [MODULES], write: ["."], net: false },
            readOnly: ["read_text_file", "list_directory"],
          },
        },
      }),
    );
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 0, trust.stderr);
    // No --yes, no --allow-tools, a client that cannot be asked.
    const client = await serveClient(p.dir.path, p.env, []);
    try {
      const read = await client.callTool({
        name: "mcp__fs__read_text_file",
        arguments: { path: join(p.dir.path, "notes.txt") },
      });
      assert.equal(read.isError, undefined, JSON.stringify(read));
      assert.match(JSON.stringify(read.content), /hello/);
      const write = await client.callTool({
        name: "mcp__fs__write_file",
        arguments: { path: join(p.dir.path, "new.txt"), content: "x" },
      });
      assert.equal(write.isError, true, JSON.stringify(write));
      const envelope = write.structuredContent as Record<string, unknown>;
      assert.equal(envelope.kind, "rejected");
      assert.match(String(envelope.message), /\(its server "fs" may write the workspace\)/);
    } finally {
      await client.close();
    }
  },
});
