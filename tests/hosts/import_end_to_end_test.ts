// Issue 37's proof, end to end, with nothing hand-edited between import and call: a host's file as the servers'
// READMEs publish it (tests/fixtures/hosts/, in the Claude Desktop, Claude Code, Cursor, VS Code and Codex shapes)
// is imported by a real `toolgate import` in a scratch HOME and project, the npx servers are installed pinned by
// `toolgate trust` (from the real npm registry: once, their store and record shared by every shape, since each
// shape's import writes the same project's manifest), the host is rewired by `import --apply`, and then each
// server is started as the host starts it (the rewired entry's command and arguments, from `/`) by the official
// SDK client, which lists its tools by their own names and calls one, the server confined. The PyPI servers
// (`uvx mcp-server-time`, `uvx mcp-server-git`) skip with their reason where the package index lacks them.
// With bubblewrap hidden, servers whose profile writes are refused in one line each, at trust and at call, and
// the others still run.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { parse as parseToml, stringify as stringifyToml } from "npm:smol-toml@1.9.1";
import { parse as parseJsonc } from "npm:jsonc-parser@3.3.1";
import { FIXTURES, launcherArgv, runProgram, runToolgate } from "../support.ts";
import { FS_SERVER, nodeServersMissing } from "../gateway_support.ts";
import { requires } from "../requires.ts";

interface Shape {
  readonly host: string;
  readonly label: string;
  readonly fixture: string;
  /** Where the host keeps the file, in the scratch project or HOME. */
  readonly place: (project: string, home: string) => string;
  /** The key holding its servers. */
  readonly servers: "mcpServers" | "servers" | "mcp_servers";
}

const SHAPES: readonly Shape[] = [
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
  },
  {
    host: "codex",
    label: "Codex",
    fixture: "codex.config.toml",
    place: (_p, home) => join(home, ".codex", "config.toml"),
    servers: "mcp_servers",
  },
];

/** The PyPI servers of the corpus, which have a test of their own. */
const PYPI = ["time", "git"];

/** A tool of each server and its arguments, and what its answer holds; `p` is the project. */
const CALLS: Record<string, (p: string) => { tool: string; args: Record<string, unknown>; holds: RegExp }> = {
  filesystem: (p) => ({
    tool: "read_text_file",
    args: { path: join(p, "Desktop", "note.txt") },
    holds: /a note on the desktop/,
  }),
  memory: () => ({
    tool: "create_entities",
    args: { entities: [{ name: "toolgate", entityType: "project", observations: ["behind the gate"] }] },
    holds: /toolgate/,
  }),
  everything: () => ({ tool: "echo", args: { message: "through the gate" }, holds: /through the gate/ }),
  "sequential-thinking": () => ({
    tool: "sequentialthinking",
    args: { thought: "one step", thoughtNumber: 1, totalThoughts: 1, nextThoughtNeeded: false },
    holds: /"thoughtNumber": ?1/,
  }),
  files: (p) => ({
    tool: "read_text_file",
    args: { path: join(p, "Desktop", "note.txt") },
    holds: /a note on the desktop/,
  }),
  // Its profile grants no network (the import says to name GitHub's hosts): the server itself answers that it
  // cannot reach GitHub, which shows it started with its token and was called.
  github: () => ({
    tool: "search_repositories",
    args: { query: "toolgate" },
    holds: /fetch|network|ENOTFOUND|EAI_AGAIN|connect/i,
  }),
};

const NPM_NAMES = Object.keys(CALLS);

const ignore = await nodeServersMissing("import_end_to_end_test") !== undefined;

/** The one scratch HOME and project every shape uses (so the installs are made once), made at first use. */
const shared = await (async () => {
  const home = await Deno.makeTempDir();
  const project = await Deno.makeTempDir();
  globalThis.addEventListener("unload", () => {
    for (const dir of [home, project]) Deno.removeSync(dir, { recursive: true });
  });
  for (const folder of ["Desktop", "Downloads", "repo"]) {
    await Deno.mkdir(join(project, folder), { recursive: true });
  }
  await Deno.writeTextFile(join(project, "Desktop", "note.txt"), "a note on the desktop\n");
  await Deno.writeTextFile(join(project, "memory.jsonl"), "");
  const env = { HOME: home, XDG_STATE_HOME: join(home, ".local", "state") };
  return {
    home,
    project,
    env,
    run: (args: string[], stdin?: string) => runToolgate(args, project, env, stdin),
  };
})();

/** The servers of a host's file, by the host's key. */
function serversOf(shape: Shape, text: string): Record<string, Record<string, unknown>> {
  const value = shape.servers === "mcp_servers"
    ? parseToml(text)
    : parseJsonc(text, [], { allowTrailingComma: true });
  return (value as Record<string, Record<string, Record<string, unknown>>>)[shape.servers];
}

/** The fixture as the host keeps it (placeholders filled), less the servers named in `without`. */
async function hostText(shape: Shape, without: readonly string[]): Promise<string> {
  const text = (await Deno.readTextFile(join(FIXTURES, "hosts", shape.fixture)))
    .replaceAll("__PROJECT__", shared.project)
    .replaceAll("__HOME__", shared.home)
    .replaceAll("__FS_SERVER__", FS_SERVER);
  if (without.length === 0) return text;
  if (shape.servers === "mcp_servers") {
    const value = parseToml(text) as Record<string, Record<string, unknown>>;
    for (const name of without) delete value.mcp_servers[name];
    return stringifyToml(value);
  }
  const value = parseJsonc(text, [], { allowTrailingComma: true });
  for (const name of without) delete value[shape.servers][name];
  return JSON.stringify(value, null, 2);
}

/** Puts the shape's file in its place, alone: no other shape's file and no manifest are left. */
async function placeAlone(shape: Shape, without: readonly string[]): Promise<string> {
  for (const other of SHAPES) await Deno.remove(other.place(shared.project, shared.home)).catch(() => {});
  await Deno.remove(join(shared.project, "tools.json")).catch(() => {});
  // A test that failed before its undo leaves its backups: each test starts from the host's file alone.
  await Deno.remove(join(shared.env.XDG_STATE_HOME, "toolgate", "hosts"), { recursive: true }).catch(
    () => {},
  );
  await Deno.writeTextFile(join(shared.project, "memory.jsonl"), "");
  const file = shape.place(shared.project, shared.home);
  await Deno.mkdir(join(file, ".."), { recursive: true });
  await Deno.writeTextFile(file, await hostText(shape, without));
  return file;
}

/** An SDK client of a rewired host entry, started as the host starts it: from `/`, in the host's environment. */
async function hostClient(entry: Record<string, unknown>, env: Record<string, string> = shared.env) {
  const transport = new StdioClientTransport({
    command: entry.command as string,
    args: entry.args as string[],
    cwd: "/",
    env: { ...Deno.env.toObject(), ...env, NO_COLOR: "1" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk));
  const client = new Client({ name: "host", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  // The host's user approves what is asked (a server whose profile writes asks before each call).
  client.setRequestHandler(ElicitRequestSchema, () => ({ action: "accept", content: { always: false } }));
  await client.connect(transport, { timeout: SLOW_MS }).catch((error) => {
    throw new Error(`${entry.args}: ${error}\n${stderr}`);
  });
  return { client, stderr: () => stderr };
}

/**
 * How long a request may take: a first start of six confined servers side by side, on a busy machine of two
 * cores, is slower than the SDK's 60 s by default.
 */
const SLOW_MS = 240_000;

/** Imports the shape's file, stores the credential, trusts, applies; the rewired host entries. */
async function importTrustApply(shape: Shape, without: readonly string[], env: Record<string, string> = {}) {
  const file = await placeAlone(shape, without);
  const imported = await shared.run(["import"]);
  assert.equal(imported.code, 0, imported.stderr);
  const names = [...NPM_NAMES, ...PYPI].filter((name) => !without.includes(name));
  assert.match(imported.stdout, new RegExp(`^  ${shape.label} \\(${file}\\): `, "m"), imported.stdout);
  const manifest = JSON.parse(await Deno.readTextFile(join(shared.project, "tools.json")));
  for (const name of names) assert.ok(manifest.mcpServers[name], `${name} imported`);
  // The credential is a secret name now: stored once, as the import said to.
  for (const secret of manifest.mcpServers.github?.secrets ?? []) {
    assert.match(imported.stdout, new RegExp(`toolgate secrets set ${secret}`));
    const set = await shared.run(["secrets", "set", secret], "ghp_e2e_test_token");
    assert.equal(set.code, 0, set.stderr);
  }
  const trusted = await runToolgate(["trust"], shared.project, { ...shared.env, ...env });
  // Every server imported can be used (a docker entry is not imported: it is said at import).
  assert.doesNotMatch(trusted.stdout, / cannot be used: /, trusted.stdout);
  assert.equal(trusted.code, 0, trusted.stdout + trusted.stderr);
  const applied = await shared.run(["import", "--apply", shape.host]);
  assert.equal(applied.code, 0, applied.stderr);
  return { file, trusted, entries: serversOf(shape, await Deno.readTextFile(file)) };
}

for (const shape of SHAPES) {
  Deno.test({
    name:
      `import end to end: ${shape.label}'s servers imported, trusted pinned, applied, and called through the host's entries from another folder`,
    ignore,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const { file, trusted, entries } = await importTrustApply(shape, PYPI);
      for (const name of ["filesystem", "memory", "everything", "sequential-thinking", "github"]) {
        assert.match(
          trusted.stdout,
          new RegExp(`^  ${name}: npx @modelcontextprotocol/server-${name} -> `, "m"),
        );
      }
      // The tools a server marks read-only are named with the line that would let them run unasked: the import
      // lists none in `readOnly` (the server's word alone never frees a tool), so they ask until the user adds it.
      assert.match(trusted.stdout, /^ {2}memory: "readOnly": \[[^\]]*"read_graph"[^\]]*\]$/m, trusted.stdout);
      assert.match(trusted.stdout, /^ {2}filesystem: "readOnly": \[[^\]]*"read_text_file"[^\]]*\]$/m);
      // doctor finds each package server's install, under its own least permissions: none is said missing.
      const doctor = await shared.run(["doctor"]);
      assert.doesNotMatch(doctor.stdout, /is not installed|changed since toolgate installed/, doctor.stdout);
      assert.match(doctor.stdout, /^server memory +confined /m, doctor.stdout);
      // Each server, as the host starts it, side by side.
      await Promise.all(NPM_NAMES.map(async (name) => {
        const entry = entries[name];
        assert.deepEqual((entry.args as string[]).slice(-5), [
          "serve",
          "--cwd",
          shared.project,
          "--server",
          name,
        ]);
        const { client, stderr } = await hostClient(entry);
        try {
          const { tools } = await client.listTools(undefined, { timeout: SLOW_MS });
          const listed = tools.map((tool) => tool.name);
          const call = CALLS[name](shared.project);
          // The server's own names, as the host listed them before toolgate.
          assert.ok(listed.includes(call.tool), `${name}: ${listed.join(", ")}`);
          assert.deepEqual(listed.filter((tool) => tool.startsWith("mcp__")), [], name);
          const answer = await client.callTool({ name: call.tool, arguments: call.args }, undefined, {
            timeout: SLOW_MS,
          }).catch((error) => {
            throw new Error(`${name}: ${call.tool}: ${error}\n${stderr()}`);
          });
          assert.match(JSON.stringify(answer), call.holds, `${name}: ${JSON.stringify(answer)}\n${stderr()}`);
        } finally {
          await client.close();
        }
      }));
      // What the memory server was asked to keep is in the file its profile writes.
      assert.match(await Deno.readTextFile(join(shared.project, "memory.jsonl")), /behind the gate/);
      // And the host's file back as it was, byte for byte.
      const undo = await shared.run(["import", "--undo", shape.host]);
      assert.equal(undo.code, 0, undo.stderr);
      assert.equal(await Deno.readTextFile(file), await hostText(shape, PYPI));
    },
  });
}

// This machine's pip settings live in the real home: the scratch HOME keeps them through PIP_CONFIG_FILE.
const PIP_CONFIG: Record<string, string> = await (async () => {
  const real = join(Deno.env.get("HOME") ?? "/root", ".config", "pip", "pip.conf");
  return await Deno.stat(real).then(() => ({ PIP_CONFIG_FILE: real }), () => ({}));
})();

/** Why the PyPI servers of the corpus cannot be installed here (the package index lacks them), or `undefined`. */
async function noPypiServers(): Promise<string | undefined> {
  for (const name of ["mcp-server-time", "mcp-server-git"]) {
    const into = await Deno.makeTempDir();
    try {
      const probe = await new Deno.Command("python3", {
        args: ["-m", "pip", "download", "--no-deps", "--retries", "0", "-d", into, name],
        env: PIP_CONFIG,
        stdout: "null",
        stderr: "piped",
      }).output();
      if (!probe.success) {
        const last = new TextDecoder().decode(probe.stderr).trim().split("\n").at(-1);
        return `the package index has no ${name}: ${last}`;
      }
    } catch (error) {
      return `python3 cannot run pip: ${(error as Error).message}`;
    } finally {
      await Deno.remove(into, { recursive: true });
    }
  }
  return undefined;
}

Deno.test({
  name:
    "import end to end: the PyPI servers (uvx mcp-server-time, uvx mcp-server-git) imported, trusted pinned, applied, and called",
  ignore: ignore ||
    requires(
      "pypi_servers",
      await noPypiServers(),
      "import_end_to_end_test (mcp-server-time, mcp-server-git)",
    ),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const repo = join(shared.project, "repo");
    const init = await runProgram("git", ["init", "-q", repo]);
    assert.equal(init.code, 0, init.stderr);
    const shape = SHAPES[0];
    const { file, entries } = await importTrustApply(shape, NPM_NAMES, PIP_CONFIG);
    const calls = {
      time: { tool: "get_current_time", args: { timezone: "UTC" }, holds: /UTC/ },
      git: { tool: "git_status", args: { repo_path: repo }, holds: /branch|No commits/i },
    };
    for (const [name, call] of Object.entries(calls)) {
      const { client, stderr } = await hostClient(entries[name], { ...shared.env, ...PIP_CONFIG });
      try {
        const answer = await client.callTool({ name: call.tool, arguments: call.args }, undefined, {
          timeout: SLOW_MS,
        });
        assert.match(JSON.stringify(answer), call.holds, `${name}: ${JSON.stringify(answer)}\n${stderr()}`);
      } finally {
        await client.close();
      }
    }
    const undo = await shared.run(["import", "--undo", shape.host]);
    assert.equal(undo.code, 0, undo.stderr);
    assert.equal(await Deno.readTextFile(file), await hostText(shape, NPM_NAMES));
  },
});

/** Can this test hide bwrap in a mount namespace of its own? Why not, or `undefined`. */
async function cannotHideBwrap(): Promise<string | undefined> {
  const script = 'b="$(command -v bwrap)" && mount --bind /dev/null "$b" && ! test -x "$b"';
  const probe = await new Deno.Command("unshare", { args: ["-m", "sh", "-c", script], stderr: "piped" })
    .output()
    .catch((error) => error as Error);
  if (probe instanceof Error) return `unshare cannot run: ${probe.message}`;
  return probe.success
    ? undefined
    : `unshare -m cannot hide bwrap here: ${new TextDecoder().decode(probe.stderr)}`;
}

/** `argv` run with bubblewrap hidden (a mount namespace of its own, /dev/null bound over bwrap). */
const HIDE_BWRAP = 'mount --bind /dev/null "$(command -v bwrap)" || exit 97; exec "$@"';
const withoutBwrap = (argv: readonly string[]): string[] => ["-m", "sh", "-c", HIDE_BWRAP, "sh", ...argv];

Deno.test({
  name:
    "import end to end: with bubblewrap hidden, servers whose profile writes are refused in one line each, at trust and at call; the others run",
  ignore: ignore || requires("root", await cannotHideBwrap(), "import_end_to_end_test (no bubblewrap)"),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const shape = SHAPES[0];
    // Installed, trusted and applied where bubblewrap is (the store the tests above made, when they ran).
    const { file, entries } = await importTrustApply(shape, PYPI);
    const trusted = await runProgram("unshare", withoutBwrap(launcherArgv(["trust"])), {
      cwd: shared.project,
      env: shared.env,
    });
    // One line per server whose profile writes, saying why and what to do; the others are pinned.
    const WRITES = ["filesystem", "memory", "files"];
    for (const name of WRITES) {
      const lines = trusted.stdout.split("\n").filter((line) => line.includes(`"${name}"`));
      assert.equal(lines.length, 1, trusted.stdout);
      assert.match(
        lines[0],
        /^MCP server "[^"]+": not pinned, it cannot be used: The server cannot be confined here \(bubblewrap .*\), and its profile .* lets it write .* --sandbox off /,
      );
    }
    for (const name of ["everything", "sequential-thinking", "github"]) {
      assert.match(
        trusted.stdout,
        new RegExp(`^MCP server "${name}": \\d+ tools?( and \\d+ prompts or resources)?:$`, "m"),
        trusted.stdout,
      );
    }
    assert.equal(trusted.code, 1, "trust exits 1: servers cannot be used");
    assert.doesNotMatch(trusted.stderr, /\n\s+at /);
    // At call, through the host's entries with bubblewrap hidden: a writing server lists nothing and its call
    // answers why, in one line; a server that neither writes nor reaches the network runs.
    const hidden = async (name: string) => {
      const entry = entries[name];
      return await hostClient({
        command: "unshare",
        args: withoutBwrap([entry.command as string, ...entry.args as string[]]),
      });
    };
    await Promise.all(NPM_NAMES.map(async (name) => {
      const { client, stderr } = await hidden(name);
      try {
        const { tools } = await client.listTools(undefined, { timeout: SLOW_MS });
        const call = CALLS[name](shared.project);
        const answer = await client.callTool({ name: call.tool, arguments: call.args }, undefined, {
          timeout: SLOW_MS,
        });
        if (WRITES.includes(name)) {
          assert.deepEqual(tools, [], name);
          assert.equal(answer.isError, true, name);
          const message = answer.structuredContent as { kind: string; message: string };
          assert.equal(message.kind, "unavailable", name);
          assert.match(
            message.message,
            new RegExp(
              `^The MCP server "${name}" is not available: The server cannot be confined here .*--sandbox off to run it unconfined, as themselves\\.$`,
            ),
          );
          assert.doesNotMatch(message.message, /\n/);
          assert.match(
            stderr(),
            new RegExp(`toolgate: MCP server "${name}" cannot be used: The server cannot be confined here`),
          );
        } else {
          assert.ok(tools.some((tool) => tool.name === call.tool), name);
          assert.match(JSON.stringify(answer), call.holds, `${name}: ${JSON.stringify(answer)}\n${stderr()}`);
        }
      } finally {
        await client.close();
      }
    }));
    const undo = await shared.run(["import", "--undo", shape.host]);
    assert.equal(undo.code, 0, undo.stderr);
    assert.equal(await Deno.readTextFile(file), await hostText(shape, PYPI));
  },
});
