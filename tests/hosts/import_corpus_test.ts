// `toolgate import` over a corpus of host configurations as the servers' READMEs publish them
// (tests/fixtures/hosts/): each host's file, put where that host keeps it in a scratch HOME and project, is found
// and imported by a real `toolgate import` (through the launcher, under its least permissions); the manifest
// validates, each server gets the profile its entry calls for, the credential becomes a secret name and is never
// written; a malformed file of each format is one line with its position, nothing written; `--apply` rewires the
// host's file so that each server starts toolgate, its per-server switches kept, and `--undo` restores it byte for
// byte.
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseToml } from "npm:smol-toml@1.9.1";
import { parse as parseJsonc } from "npm:jsonc-parser@3.3.1";
import { FIXTURES, runToolgate, tempDir } from "../support.ts";
import { FS_SERVER, MODULES } from "../gateway_support.ts";

interface HostCase {
  readonly host: string;
  readonly label: string;
  readonly fixture: string;
  /** Where the host keeps the file, in the scratch project or HOME. */
  readonly place: (project: string, home: string) => string;
  /** The key holding its servers. */
  readonly servers: "mcpServers" | "servers" | "mcp_servers";
  /** Per-server keys the host shows, which a rewired entry keeps: server -> key -> value. */
  readonly switches?: Record<string, Record<string, unknown>>;
}

const CASES: readonly HostCase[] = [
  {
    host: "claude-desktop",
    label: "Claude Desktop",
    fixture: "claude_desktop_config.json",
    place: (_p, home) => join(home, ".config", "Claude", "claude_desktop_config.json"),
    servers: "mcpServers",
  },
  {
    host: "claude-code",
    label: "Claude Code",
    fixture: "claude_code.mcp.json",
    place: (project) => join(project, ".mcp.json"),
    servers: "mcpServers",
    switches: { time: { type: "stdio" } },
  },
  {
    host: "claude-code",
    label: "Claude Code",
    fixture: "claude_code.claude.json",
    place: (_p, home) => join(home, ".claude.json"),
    servers: "mcpServers",
    switches: { git: { type: "stdio" } },
  },
  {
    host: "cursor",
    label: "Cursor",
    fixture: "cursor.mcp.json",
    place: (project) => join(project, ".cursor", "mcp.json"),
    servers: "mcpServers",
  },
  {
    host: "vscode",
    label: "VS Code",
    fixture: "vscode.mcp.json",
    place: (project) => join(project, ".vscode", "mcp.json"),
    servers: "servers",
    switches: { github: { type: "stdio" } },
  },
  {
    host: "codex",
    label: "Codex",
    fixture: "codex.config.toml",
    place: (_p, home) => join(home, ".codex", "config.toml"),
    servers: "mcp_servers",
    switches: { time: { enabled: false }, everything: { startup_timeout_sec: 20 } },
  },
  {
    host: "windsurf",
    label: "Windsurf",
    fixture: "windsurf.mcp_config.json",
    place: (_p, home) => join(home, ".codeium", "windsurf", "mcp_config.json"),
    servers: "mcpServers",
    switches: { "sequential-thinking": { disabled: true } },
  },
  {
    host: "gemini",
    label: "Gemini CLI",
    fixture: "gemini.settings.json",
    place: (_p, home) => join(home, ".gemini", "settings.json"),
    servers: "mcpServers",
    switches: { filesystem: { timeout: 30000 }, "sequential-thinking": { trust: false } },
  },
];

/** The (first) case of a host. */
function caseOf(host: string): HostCase {
  return CASES.find((c) => c.host === host)!;
}

/** A case's name in its tests: the host's file ("Claude Code's ~/.claude.json"). */
function name(host: HostCase): string {
  return `${host.label}'s ${host.place("PROJECT", "~").replace(/^PROJECT\//, "")}`;
}

/** The eight servers every fixture holds. */
const NAMES = ["filesystem", "memory", "everything", "sequential-thinking", "time", "git", "files", "github"];

/** A scratch HOME and project, the host's file in its place (the fixture's placeholders filled). */
async function scratch(host: HostCase) {
  const project = await tempDir();
  const home = await tempDir();
  for (const folder of ["Desktop", "Downloads", "repo"]) await Deno.mkdir(join(project.path, folder));
  await Deno.writeTextFile(join(project.path, "memory.jsonl"), "");
  const file = host.place(project.path, home.path);
  await Deno.mkdir(join(file, ".."), { recursive: true });
  const text = (await Deno.readTextFile(join(FIXTURES, "hosts", host.fixture)))
    .replaceAll("__PROJECT__", project.path)
    .replaceAll("__HOME__", home.path)
    .replaceAll("__FS_SERVER__", FS_SERVER);
  await Deno.writeTextFile(file, text);
  const env = { HOME: home.path, XDG_STATE_HOME: join(home.path, ".local", "state") };
  return {
    project: project.path,
    home: home.path,
    file,
    text,
    run: (args: string[]) => runToolgate(args, project.path, env),
    async [Symbol.asyncDispose]() {
      await project[Symbol.asyncDispose]();
      await home[Symbol.asyncDispose]();
    },
  };
}

/** The servers of a host's file, by the host's key. */
function serversOf(host: HostCase, text: string): Record<string, Record<string, unknown>> {
  const value = host.servers === "mcp_servers"
    ? parseToml(text)
    : parseJsonc(text, [], { allowTrailingComma: true });
  return (value as Record<string, Record<string, Record<string, unknown>>>)[host.servers];
}

for (const host of CASES) {
  Deno.test(`import: ${name(host)} as the servers publish it is found, imported and validates`, async () => {
    await using s = await scratch(host);
    const imported = await s.run(["import"]);
    assert.equal(imported.code, 0, imported.stderr);
    // What was found, per host: this one's servers, and "none" for every other.
    assert.match(imported.stdout, new RegExp(`^  ${host.label} \\(${s.file}\\): ${NAMES.join(", ")}`, "m"));
    for (const other of CASES.filter((c) => c.label !== host.label)) {
      assert.match(imported.stdout, new RegExp(`^  ${other.label}: none$`, "m"));
    }
    const text = await Deno.readTextFile(join(s.project, "tools.json"));
    assert.ok(!text.includes("planted") && !imported.stdout.includes("planted"), "no credential is copied");
    const servers = JSON.parse(text).mcpServers;
    assert.deepEqual(Object.keys(servers), NAMES);
    const p = s.project;
    // The profile each entry calls for: exactly the paths it is given, never a network.
    assert.deepEqual(servers.filesystem.permissions, {
      read: [],
      write: [join(p, "Desktop"), join(p, "Downloads")],
      net: false,
    });
    // The memory server writes its file anew beside it and renames it over: the file's folder.
    assert.deepEqual(servers.memory.permissions, { read: [], write: [p], net: false });
    assert.deepEqual(servers.memory.env, { MEMORY_FILE_PATH: join(p, "memory.jsonl") });
    assert.deepEqual(servers.git.permissions, { read: [], write: [join(p, "repo")], net: false });
    assert.deepEqual(servers.files.permissions, { read: [MODULES], write: [p], net: false });
    for (const name of ["everything", "sequential-thinking", "time", "github"]) {
      assert.equal(servers[name].permissions, "none", name);
    }
    // The host's command and arguments as they were: the package store pins npx and uvx entries at trust.
    assert.deepEqual(servers.time, { command: "uvx", args: ["mcp-server-time"], permissions: "none" });
    assert.deepEqual(servers.github.secrets, ["GITHUB_PERSONAL_ACCESS_TOKEN"]);
    assert.equal(servers.github.env, undefined);
    assert.match(imported.stdout, /toolgate secrets set GITHUB_PERSONAL_ACCESS_TOKEN/);
    assert.match(
      imported.stdout,
      new RegExp(`filesystem: write ${join(p, "Desktop")} \\(a folder it serves\\)`),
    );
    assert.match(imported.stdout, /github: it takes a credential, .* no network is granted/);
    if (host.host === "claude-desktop") {
      assert.match(imported.stdout, /"postgres" .* docker entries are not supported/);
    }

    const validate = await s.run(["validate"]);
    assert.equal(validate.code, 0, validate.stderr);

    // A second import adds nothing and changes nothing.
    const again = await s.run(["import"]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /nothing new to add/);
    assert.equal(await Deno.readTextFile(join(s.project, "tools.json")), text);
  });

  Deno.test(`import: ${name(host)}: --apply starts each server through toolgate, --undo restores the file byte for byte`, async () => {
    await using s = await scratch(host);
    const before = await Deno.readFile(s.file);
    const applied = await s.run(["import", "--apply", host.host]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, new RegExp(`rewired ${s.file}: `));
    const after = serversOf(host, await Deno.readTextFile(s.file));
    const original = serversOf(host, s.text);
    for (const name of NAMES) {
      const entry = after[name];
      assert.ok(
        typeof entry.command === "string" && entry.command.startsWith("/"),
        `${name}: an absolute program`,
      );
      const args = entry.args as string[];
      assert.deepEqual(args.slice(-5), ["serve", "--cwd", s.project, "--server", name], name);
      assert.equal(entry.env, undefined, `${name}: the environment is the manifest's now`);
      for (const [key, value] of Object.entries(host.switches?.[name] ?? {})) {
        assert.deepEqual(entry[key], value, `${name}: ${key} is kept`);
      }
    }
    // Every key that is no launch key stays as the host had it.
    for (const name of NAMES) {
      for (const [key, value] of Object.entries(original[name])) {
        if (!["command", "args", "env", "type", "cwd"].includes(key)) {
          assert.deepEqual(after[name][key], value);
        }
      }
    }
    if (host.host === "claude-desktop") assert.deepEqual(after.postgres, original.postgres);
    // The entry starts toolgate indeed, from any folder: its command line, asked for serve's help.
    const started = await new Deno.Command(after.filesystem.command as string, {
      args: [...after.filesystem.args as string[], "--help"],
      cwd: "/",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(started.code, 0, new TextDecoder().decode(started.stderr));
    assert.match(new TextDecoder().decode(started.stdout), /--server NAME/);
    // Applied twice: the backup holds the original, so the second is refused or finds nothing to rewire.
    const twice = await s.run(["import", "--apply", host.host]);
    assert.match(twice.stdout + twice.stderr, /starts toolgate already|rewired already/);

    const undo = await s.run(["import", "--undo", host.host]);
    assert.equal(undo.code, 0, undo.stderr);
    assert.match(undo.stdout, new RegExp(`restored ${s.file}`));
    assert.deepEqual(await Deno.readFile(s.file), before);
    const nothing = await s.run(["import", "--undo", host.host]);
    assert.equal(nothing.code, 1);
    assert.match(nothing.stderr, /nothing to undo/);
  });

  Deno.test(`import: a malformed ${name(host)} is one line with its position, and nothing is written`, async () => {
    await using s = await scratch(host);
    // Break the memory server's entry: a lost quote in TOML, a lost comma in JSON.
    const lines = s.text.split("\n");
    const at = host.servers === "mcp_servers"
      ? lines.findIndex((line) => line.startsWith("[mcp_servers.memory]"))
      : lines.findIndex((line) => line.includes('"memory"'));
    lines[at] = host.servers === "mcp_servers"
      ? "[mcp_servers.memory"
      : lines[at].replace('"memory"', '"memory');
    await Deno.writeTextFile(s.file, lines.join("\n"));
    const imported = await s.run(["import"]);
    assert.equal(imported.code, 2, imported.stderr);
    assert.equal(imported.stderr.trim().split("\n").length, 1, imported.stderr);
    assert.match(imported.stderr, new RegExp(`^toolgate: ${s.file}:${at + 1}:\\d+: `));
    assert.equal(imported.stdout, "");
    await assert.rejects(Deno.stat(join(s.project, "tools.json")), Deno.errors.NotFound);
  });
}

Deno.test("import FILE: the host is told by the file's name, or --host; a file of no host is one line; --help answers", async () => {
  await using s = await scratch(caseOf("claude-desktop"));
  await using other = await tempDir();
  const copy = join(other.path, "servers.toml");
  await Deno.writeTextFile(copy, await Deno.readTextFile(join(FIXTURES, "hosts", "codex.config.toml")));
  const named = await s.run(["import", copy]);
  assert.equal(named.code, 0, named.stderr);
  assert.doesNotMatch(named.stdout, /^found:/m);
  assert.match(named.stdout, /with 8 MCP servers: filesystem, memory/);
  const unknown = join(other.path, "notes.json");
  await Deno.writeTextFile(unknown, '{"editor": {"fontSize": 12}}');
  const refused = await s.run(["import", unknown]);
  assert.equal(refused.code, 2);
  assert.equal(
    refused.stderr,
    `toolgate: ${unknown}:1:1: it is no MCP host's configuration (no "mcpServers" or ` +
      `"servers" object; name its host with --host)\n`,
  );
  // JSONC, as hosts write it: told by its shape all the same.
  const commented = join(other.path, "team-servers.json");
  await Deno.writeTextFile(
    commented,
    '{\n  // ours\n  "mcpServers": {"clock": {"command": "uvx", "args": ["mcp-server-time"]},},\n}\n',
  );
  const jsonc = await s.run(["import", commented]);
  assert.equal(jsonc.code, 0, jsonc.stderr);
  assert.match(jsonc.stdout, /added 1 MCP server to tools\.json in \S+: clock/);
  // A host's place holding what cannot be read (a folder): one line, nothing written.
  await Deno.mkdir(join(s.home, ".cursor", "mcp.json"), { recursive: true });
  const before = await Deno.readTextFile(join(s.project, "tools.json"));
  const unreadable = await s.run(["import"]);
  assert.equal(unreadable.code, 1);
  assert.match(unreadable.stderr, /^toolgate: cannot read .*\.cursor\/mcp\.json: .*\n$/);
  assert.equal(await Deno.readTextFile(join(s.project, "tools.json")), before);
  const help = await s.run(["import", "--help"]);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /--apply HOST/);
  assert.match(help.stdout, /one entry per server, so the host keeps its names and its per-server switches/);
  const wrongHost = await s.run(["import", unknown, "--host", "cursor"]);
  assert.equal(wrongHost.code, 2);
  assert.match(
    wrongHost.stderr,
    /notes\.json:1:1: it has no "mcpServers" object \(the shape of Cursor's mcp\.json\)/,
  );
});

Deno.test("import: an existing tools.json keeps its tools, comments and servers; a name it holds is said, and --apply leaves that server", async () => {
  await using s = await scratch(caseOf("cursor"));
  const manifest = [
    "{",
    "  // my own tools stay",
    '  "tools": [{ "name": "hello", "description": "Says hello.", "command": ["tools/bin/hello"] }],',
    '  "mcpServers": {',
    '    "time": { "command": "uvx", "args": ["mcp-server-time", "--local-timezone", "Europe/Paris"] },',
    // Imported before, its profile edited since: the same server (it starts the same way), rewired all the same.
    '    "everything": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "permissions": { "net": ["example.com"] } },',
    "  },",
    "}",
    "",
  ].join("\n");
  await Deno.writeTextFile(join(s.project, "tools.json"), manifest);
  // An installed toolgate (as `deno task install` leaves it): a rewired entry names it by its absolute path.
  const installed = join(s.home, ".local", "bin", "toolgate");
  await Deno.mkdir(join(installed, ".."), { recursive: true });
  await Deno.writeTextFile(installed, "#!/bin/sh\nexit 0\n", { mode: 0o755 });

  const applied = await s.run(["import", "--apply", "cursor"]);
  assert.equal(applied.code, 0, applied.stderr);
  assert.match(
    applied.stdout,
    /added 6 MCP servers to tools\.json in \S+: filesystem, memory, sequential-thinking, git, files, github/,
  );
  assert.match(
    applied.stdout,
    /server "time": tools\.json has a server of that name already; it is not overwritten/,
  );
  assert.match(applied.stdout, /server "time": left as it is \(tools\.json has another of its name\)/);
  const text = await Deno.readTextFile(join(s.project, "tools.json"));
  assert.ok(text.startsWith("{\n  // my own tools stay\n"), text);
  const { parse } = await import("npm:jsonc-parser@3.3.1");
  const value = parse(text, [], { allowTrailingComma: true });
  assert.equal(value.tools[0].name, "hello");
  assert.deepEqual(value.mcpServers.time.args, ["mcp-server-time", "--local-timezone", "Europe/Paris"]);
  assert.equal(Object.keys(value.mcpServers).length, 8);
  const host = serversOf(caseOf("cursor"), await Deno.readTextFile(s.file));
  assert.deepEqual(host.time, { command: "uvx", args: ["mcp-server-time"] });
  assert.equal(host.filesystem.command, installed);
  assert.equal(host.everything.command, installed);
  assert.doesNotMatch(applied.stdout, /"everything": tools\.json has a server of that name/);
  assert.deepEqual(value.mcpServers.everything.permissions, { net: ["example.com"] });
  assert.deepEqual(host.filesystem.args, ["serve", "--cwd", s.project, "--server", "filesystem"]);

  // A manifest that is not JSON is one line with its position; nothing is written.
  await Deno.writeTextFile(join(s.project, "tools.json"), '{"tools": [}');
  const broken = await s.run(["import"]);
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, /^toolgate: .*tools\.json:1:12: value expected\n$/);
});

Deno.test("import: --undo after the host changed its file keeps those changes aside, and restores the original", async () => {
  await using s = await scratch(caseOf("vscode"));
  const before = await Deno.readFile(s.file);
  const applied = await s.run(["import", "--apply", "vscode"]);
  assert.equal(applied.code, 0, applied.stderr);
  const changed = (await Deno.readTextFile(s.file)).replace(
    '"servers": {',
    '"servers": {\n    "added": { "type": "stdio", "command": "x" },',
  );
  await Deno.writeTextFile(s.file, changed);
  const undo = await s.run(["import", "--undo", "vscode"]);
  assert.equal(undo.code, 0, undo.stderr);
  assert.match(
    undo.stdout,
    new RegExp(`${s.file} changed since --apply: what it held is kept in ${s.file}\\.toolgate-undone`),
  );
  assert.deepEqual(await Deno.readFile(s.file), before);
  assert.equal(await Deno.readTextFile(`${s.file}.toolgate-undone`), changed);
});
