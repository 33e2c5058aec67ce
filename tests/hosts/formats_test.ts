// Each host's reader and writer (src/hosts/), as pure functions of a file's text: the shapes each host documents,
// the positions of what is wrong, credentials told by more than their names, and a rewire that changes a
// server's entry and nothing else of the file (comments, other settings, the host's switches).
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseToml } from "npm:smol-toml@1.9.1";
import { HOST_FORMATS } from "../../src/hosts/host_files.ts";
import { importHostServers } from "../../src/hosts/host_import.ts";
import { replaceFile } from "../../src/hosts/replace_file.ts";
import { tempDir } from "../support.ts";

const launch = (name: string) => ({ command: "/bin/toolgate", args: ["serve", "--server", name] });
const context = { file: "/p/mcp.json", project: "/p" };
/** smol-toml's tables have no prototype: compared as plain JSON. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

Deno.test("hosts: a JSONC file keeps its comments, its order and its other settings when one server is rewired", async () => {
  const text = [
    "{",
    "  // Gemini's own settings",
    '  "theme": "GitHub",',
    '  "mcpServers": {',
    '    "fs": { "command": "npx", "args": ["-y", "x"], "timeout": 5000, "trust": false, "includeTools": ["a"] },',
    "    // not touched",
    '    "other": { "command": "uvx", "args": ["y"] },',
    "  },",
    "}",
    "",
  ].join("\n");
  const out = await HOST_FORMATS.gemini.rewire(text, context, new Map([["fs", launch("fs")]]));
  assert.match(out.text, /\/\/ Gemini's own settings\n {2}"theme": "GitHub",/);
  assert.match(out.text, /\/\/ not touched\n {4}"other": \{ "command": "uvx", "args": \["y"\] \},/);
  const read = await HOST_FORMATS.gemini.read(out.text, context);
  assert.ok(read.ok);
  const fs = read.servers.find((server) => server.name === "fs")!;
  assert.deepEqual(fs.entry, launch("fs"));
  // The tool list stays in the host: serve --server shows the server's tools by their own names.
  assert.deepEqual(out.notes, []);
  assert.match(out.text, /"includeTools": \[\s*"a"\s*\]/);
  assert.match(out.text, /"timeout": 5000/);
  assert.match(out.text, /"trust": false/);
});

Deno.test("hosts: Claude Code's ~/.claude.json: the user's servers and this project's, each rewired where it stands", async () => {
  const text = JSON.stringify(
    {
      numStartups: 12,
      mcpServers: {
        time: { type: "stdio", command: "uvx", args: ["mcp-server-time"] },
        git: { command: "a" },
      },
      projects: {
        "/p": {
          allowedTools: [],
          mcpServers: { git: { type: "stdio", command: "uvx", args: ["mcp-server-git"] } },
        },
        "/q": { mcpServers: { other: { command: "x" } } },
      },
    },
    null,
    2,
  );
  const file = { file: "/home/me/.claude.json", project: "/p" };
  const read = await HOST_FORMATS["claude-code"].read(text, file);
  assert.ok(read.ok);
  // The project's git wins over the user's of that name; another project's servers are not this one's.
  assert.deepEqual(read.servers.map((server) => [server.name, server.entry.command]), [["time", "uvx"], [
    "git",
    "uvx",
  ]]);
  const out = await HOST_FORMATS["claude-code"].rewire(
    text,
    file,
    new Map([["time", launch("time")], ["git", launch("git")]]),
  );
  const value = JSON.parse(out.text);
  assert.deepEqual(value.mcpServers.time, { type: "stdio", ...launch("time") });
  assert.deepEqual(
    value.mcpServers.git,
    { command: "a" },
    "the user's git is not the one Claude Code starts here",
  );
  assert.deepEqual(value.projects["/p"].mcpServers.git, { type: "stdio", ...launch("git") });
  assert.deepEqual(value.projects["/q"], { mcpServers: { other: { command: "x" } } });
  assert.equal(value.numStartups, 12);
});

Deno.test("hosts: VS Code's inputs make a value a credential whatever its name, and an http server becomes stdio", async () => {
  const text = JSON.stringify({
    inputs: [{ type: "promptString", id: "key", description: "API key", password: true }],
    servers: {
      search: {
        type: "stdio",
        command: "npx",
        args: ["-y", "s"],
        env: { SEARCH_CONFIG: "${input:key}", MODE: "fast" },
      },
      api: { type: "http", url: "https://mcp.example.com/mcp", headers: { "X-Team": "${input:key}" } },
    },
  });
  const read = await HOST_FORMATS.vscode.read(text, context);
  assert.ok(read.ok);
  const imported = importHostServers(
    [{ host: "vscode", file: "/p/.vscode/mcp.json", servers: read.servers }],
    "/p",
    "/h",
  );
  const [search, api] = imported.servers;
  assert.deepEqual(search.entry.secrets, ["SEARCH_CONFIG"]);
  assert.deepEqual(search.entry.env, { MODE: "fast" });
  assert.deepEqual(api.entry.headers, { "X-Team": "${API_X_TEAM}" });
  assert.ok(!JSON.stringify(imported).includes("${input:key}"));
  const out = await HOST_FORMATS.vscode.rewire(text, context, new Map([["api", launch("api")]]));
  assert.deepEqual(JSON.parse(out.text).servers.api, { type: "stdio", ...launch("api") });
});

Deno.test("hosts: Codex's bearer_token_env_var and env_http_headers become secret names; the host's switches are kept", async () => {
  const text = [
    "[mcp_servers.api]",
    'url = "https://mcp.example.com/mcp"',
    'bearer_token_env_var = "API_TOKEN"',
    'env_http_headers = { "X-Team" = "TEAM_ID" }',
    "tool_timeout_sec = 30",
    'disabled_tools = ["delete_all"]',
    "",
  ].join("\n");
  const read = await HOST_FORMATS.codex.read(text, { file: "/h/.codex/config.toml", project: "/p" });
  assert.ok(read.ok);
  const imported = importHostServers(
    [{ host: "codex", file: "/h/.codex/config.toml", servers: read.servers }],
    "/p",
    "/h",
  );
  const api = imported.servers[0].entry;
  assert.deepEqual(api.secrets, ["API_X_TEAM", "API_AUTHORIZATION"]);
  assert.deepEqual(api.deny, ["delete_all"]);
  const out = await HOST_FORMATS.codex.rewire(
    text,
    { file: "/h/.codex/config.toml", project: "/p" },
    new Map([["api", launch("api")]]),
  );
  assert.deepEqual(plain(parseToml(out.text)), {
    mcp_servers: { api: { ...launch("api"), tool_timeout_sec: 30, disabled_tools: ["delete_all"] } },
  });
});

Deno.test("hosts: a Codex file written with dotted keys is written again whole, and says its comments are gone", async () => {
  const text =
    '# mine\nmcp_servers.fs.command = "npx"\nmcp_servers.fs.args = ["-y", "x"]\nmcp_servers.fs.enabled = false\n';
  const out = await HOST_FORMATS.codex.rewire(
    text,
    { file: "c.toml", project: "/p" },
    new Map([["fs", launch("fs")]]),
  );
  assert.deepEqual(plain(parseToml(out.text)), { mcp_servers: { fs: { ...launch("fs"), enabled: false } } });
  assert.match(out.notes.join("\n"), /written again whole .* its comments are gone/);
});

Deno.test("hosts: a server's name toolgate cannot use is renamed in the manifest, and the host keeps its own", () => {
  const imported = importHostServers(
    [{
      host: "cursor",
      file: "/p/.cursor/mcp.json",
      servers: [
        {
          name: "my notes",
          entry: { command: "uvx", args: ["notes"] },
          enabled: true,
          credentialEnv: [],
          notes: [],
        },
        {
          name: "a-server-with-a-name-longer-than-thirty-two",
          entry: { command: "uvx", args: ["long"] },
          enabled: true,
          credentialEnv: [],
          notes: [],
        },
      ],
    }],
    "/p",
    "/h",
  );
  assert.equal(imported.servers[0].name, "my_notes");
  assert.equal(imported.servers[0].hostName, "my notes");
  assert.equal(imported.servers[1].name, "a-server-with-a-name-longer-than");
  assert.match(
    imported.notes.join("\n"),
    /named "a-server-with-a-name-longer-than" \(a server's name has 32 characters at most\)/,
  );
});

Deno.test("hosts: a host's file that is a link is written where it points, and stays a link", async () => {
  await using dir = await tempDir();
  const target = join(dir.path, "dotfiles-mcp.json");
  const link = join(dir.path, "mcp.json");
  await Deno.writeTextFile(target, "{}\n");
  await Deno.symlink(target, link);
  replaceFile(link, new TextEncoder().encode('{"mcpServers": {}}\n'));
  assert.ok((await Deno.lstat(link)).isSymlink);
  assert.equal(await Deno.readTextFile(target), '{"mcpServers": {}}\n');
});
