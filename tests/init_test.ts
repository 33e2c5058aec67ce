// `toolgate init`: a starter that passes `lint --strict` and runs, confined and not, typed in an empty folder
// through the launcher as a user types it; a second init refuses and changes nothing; `--from-mcp` (the same as `import FILE`) turns an MCP
// host's configuration into an `mcpServers` block without copying a credential.
import assert from "node:assert/strict";
import { join } from "node:path";
import { hasStackTrace, runToolgate, tempDir } from "./support.ts";
import { confinedTest } from "./security/helpers.ts";

/** The starter runs unconfined and confined (ignored with its reason where bubblewrap does not work). */
const modeTest = (sandbox: string, name: string, fn: () => Promise<void>) =>
  sandbox === "off" ? Deno.test(name, fn) : confinedTest(name, fn);

/** Every file under `root` with its text and mode, to compare a folder before and after. */
async function snapshot(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else {
        const info = await Deno.lstat(path);
        out[path.slice(root.length + 1)] = `${(info.mode ?? 0) & 0o777}:${info.mtime?.getTime()}:${await Deno
          .readTextFile(path)}`;
      }
    }
  };
  await walk(root);
  return out;
}

for (const mode of ["require", "off"]) {
  modeTest(
    mode,
    `init writes a starter that passes lint --strict and answers a call (sandbox ${mode})`,
    async () => {
      await using dir = await tempDir();
      await using state = await tempDir();
      const env = { XDG_STATE_HOME: state.path, XDG_CONFIG_HOME: state.path };
      const init = await runToolgate(["init", "--locked"], dir.path, env);
      assert.equal(init.code, 0, init.stderr);
      assert.equal(init.stderr, "");
      assert.match(init.stdout, /wrote tools\.json and tools\/bin\/greet_person/);
      const program = await Deno.stat(join(dir.path, "tools/bin/greet_person"));
      assert.equal((program.mode ?? 0) & 0o111, 0o111, "the program is executable");

      const lint = await runToolgate(["lint", "--strict", "--locked"], dir.path, env);
      assert.equal(lint.code, 0, lint.stdout + lint.stderr);
      assert.match(lint.stdout, /no findings, 1 tool/);
      assert.equal(lint.stderr, "");
      // A tools.json found in the folder runs once trusted, whoever wrote it.
      const trust = await runToolgate(["trust", "--locked"], dir.path, env);
      assert.equal(trust.code, 0, trust.stdout + trust.stderr);

      {
        const sandbox = mode;
        const call = await runToolgate(
          ["call", "greet_person", '{"name": "Ada Lovelace"}', "--sandbox", sandbox, "--locked"],
          dir.path,
          env,
        );
        assert.equal(call.code, 0, `--sandbox ${sandbox}: ${call.stdout}${call.stderr}`);
        assert.deepEqual(JSON.parse(call.stdout), {
          ok: true,
          result: { greeting: "Hello, Ada Lovelace!" },
          tool: "greet_person",
        });
      }
      // The schema keeps out what the script could not read safely.
      const refused = await runToolgate(
        ["call", "greet_person", '{"name": "a\\"b"}', "--locked"],
        dir.path,
        env,
      );
      assert.equal(refused.code, 1);
      assert.equal(JSON.parse(refused.stdout).kind, "invalid_args");
    },
  );
}

Deno.test("init a second time refuses, names the files, and changes nothing", async () => {
  await using dir = await tempDir();
  await using state = await tempDir();
  const env = { XDG_STATE_HOME: state.path };
  assert.equal((await runToolgate(["init"], dir.path, env)).code, 0);
  const before = await snapshot(dir.path);
  const again = await runToolgate(["init"], dir.path, env);
  assert.equal(again.code, 1, again.stderr);
  assert.equal(again.stdout, "");
  assert.ok(!hasStackTrace(again.stderr), again.stderr);
  assert.match(
    again.stderr,
    /^toolgate: tools\.json and tools\/bin\/greet_person already exist; init never overwrites a file/,
  );
  assert.deepEqual(await snapshot(dir.path), before);

  // One file in the way is enough: nothing else is written either.
  await using other = await tempDir();
  await Deno.mkdir(join(other.path, "tools/bin"), { recursive: true });
  await Deno.writeTextFile(join(other.path, "tools/bin/greet_person"), "mine\n");
  const blocked = await runToolgate(["init"], other.path, env);
  assert.equal(blocked.code, 1);
  assert.match(blocked.stderr, /tools\/bin\/greet_person already exists/);
  assert.deepEqual(Object.keys(await snapshot(other.path)), ["tools/bin/greet_person"]);
  assert.equal(await Deno.readTextFile(join(other.path, "tools/bin/greet_person")), "mine\n");
});

Deno.test("init --from-mcp writes the servers in the manifest's shape, credentials as secret names only", async () => {
  await using dir = await tempDir();
  await using state = await tempDir();
  const config = join(dir.path, "claude_desktop_config.json");
  await Deno.writeTextFile(
    config,
    JSON.stringify({
      mcpServers: {
        github: {
          command: "npx",
          args: ["-y", "@modelcontextprotocol/server-github"],
          env: { GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_planted_value", LOG_LEVEL: "info" },
        },
        "my notes": { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer sk-planted" } },
      },
    }),
  );
  const env = { XDG_STATE_HOME: state.path };
  const init = await runToolgate(["init", "--from-mcp", config, "--locked"], dir.path, env);
  assert.equal(init.code, 0, init.stderr);
  assert.match(init.stdout, /2 MCP servers: github, my_notes/);
  assert.match(init.stdout, /toolgate secrets set GITHUB_PERSONAL_ACCESS_TOKEN/);
  assert.match(init.stdout, /toolgate secrets set MY_NOTES_AUTHORIZATION/);
  assert.match(init.stdout, /its tools run once `toolgate trust` pinned them/);
  const text = await Deno.readTextFile(join(dir.path, "tools.json"));
  assert.ok(!text.includes("planted") && !init.stdout.includes("planted"), "no credential is copied");
  assert.deepEqual(JSON.parse(text), {
    tools: [],
    mcpServers: {
      github: {
        command: "npx",
        args: ["-y", "@modelcontextprotocol/server-github"],
        env: { LOG_LEVEL: "info" },
        secrets: ["GITHUB_PERSONAL_ACCESS_TOKEN"],
        permissions: "none",
      },
      my_notes: {
        url: "https://mcp.example.com/mcp",
        headers: { Authorization: "Bearer ${MY_NOTES_AUTHORIZATION}" },
        secrets: ["MY_NOTES_AUTHORIZATION"],
        permissions: "none",
      },
    },
  });
  // validate accepts the block: the gateway runs it (issue 25), with no warning that it does not.
  const validate = await runToolgate(["validate", "--locked"], dir.path, env);
  assert.equal(validate.code, 0, validate.stderr);
  assert.doesNotMatch(validate.stderr, /does not run MCP servers/);

  // A second import is `toolgate import FILE` again: the names are there already, nothing is overwritten.
  const again = await runToolgate(["init", "--from-mcp", config], dir.path, env);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /nothing new to add/);
  assert.equal(await Deno.readTextFile(join(dir.path, "tools.json")), text);

  // A file that is no MCP host's configuration is the user's mistake: one line with its position, exit 2.
  await using empty = await tempDir();
  await Deno.writeTextFile(join(empty.path, "c.json"), '{"tools": []}');
  const wrong = await runToolgate(["init", "--from-mcp", "c.json"], empty.path, env);
  assert.equal(wrong.code, 2, wrong.stderr);
  assert.match(wrong.stderr, /^toolgate: \/.*c\.json:1:1: it is no MCP host's configuration/);
  assert.equal(wrong.stderr.trim().split("\n").length, 1);
  assert.deepEqual(Object.keys(await snapshot(empty.path)), ["c.json"]);
});
