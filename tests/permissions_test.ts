// toolgate's own permissions: the least set derived from a manifest, kept in sync like a lockfile, enough for
// every command (and the tree kill), with broader grants warned about or, locked, refused.
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { agentTask } from "../src/build/regenerate.ts";
import { ROOT, rootPermissions } from "../src/build/flags.ts";
import { loadManifest } from "../src/manifest.ts";
import { derivePermissions, KEPT_STATE_ROOT, OWN_ENV, toDenoJson, toFlags } from "../src/permissions.ts";
import { auditDirFor } from "../src/state.ts";
import { runProgram } from "./helpers.ts";

const SANDBOX_FIXTURE = fileURLToPath(new URL("./fixtures/sandbox/tools.json", import.meta.url));
const MAIN = join(ROOT, "src", "main.ts");

/**
 * The state folder of these runs: a temp one (XDG_STATE_HOME), made once, so that no test writes the real home.
 * The flags are derived for it, as `toolgate permissions` derives them for the environment it runs in.
 */
const STATE_ENV = { XDG_STATE_HOME: await Deno.makeTempDir({ prefix: "toolgate_state_" }) };
globalThis.addEventListener("unload", () => Deno.removeSync(STATE_ENV.XDG_STATE_HOME, { recursive: true }));

async function flagsFor(manifestPath: string, cwd: string): Promise<string[]> {
  const loaded = await loadManifest(manifestPath);
  assert.ok(loaded.ok);
  return toFlags(derivePermissions({ manifest: loaded.manifest, relativeTo: cwd, env: STATE_ENV }));
}

function cli(flags: string[], args: string[], cwd: string) {
  return runProgram(Deno.execPath(), ["run", ...flags, MAIN, ...args], { cwd, env: STATE_ENV });
}

Deno.test("the derived set names exactly what toolgate touches for a manifest", async () => {
  const loaded = await loadManifest(SANDBOX_FIXTURE);
  assert.ok(loaded.ok);
  const set = derivePermissions({
    manifest: loaded.manifest,
    relativeTo: ROOT,
    baseUrl: "http://127.0.0.1:8080/v1",
  });
  // The kept form: `deno task` expands $HOME; the state folder is read (checked) and written, nothing else is.
  assert.deepEqual(set.read, ["./tests/fixtures/sandbox", ".", KEPT_STATE_ROOT]);
  assert.deepEqual(set.write, ["$HOME/.local/state/toolgate"]);
  assert.deepEqual(set.run.slice(0, 2), ["bwrap", "kill"]);
  assert.ok(set.run.includes("./tests/fixtures/sandbox/tools/bin/writer"));
  assert.equal(set.run.filter((p) => p.endsWith("/writer")).length, 1, "one entry per program");
  assert.deepEqual(set.env, [...OWN_ENV, "FIXTURE_SECRET"]);
  assert.deepEqual(set.net, ["127.0.0.1:8080"]);
  assert.deepEqual(toDenoJson(set), { permissions: { toolgate: set } });
  assert.equal(toFlags(set)[0], "--no-prompt");
  assert.ok(toFlags(set).every((flag) => flag === "--no-prompt" || /^--allow-[a-z]+=\S+$/.test(flag)));
});

Deno.test("with an environment, the state folder is the one it places, absolute", async () => {
  const loaded = await loadManifest(SANDBOX_FIXTURE);
  assert.ok(loaded.ok);
  const home = derivePermissions({
    manifest: loaded.manifest,
    relativeTo: "/home/me",
    env: { HOME: "/home/me" },
  });
  assert.deepEqual(home.write, ["/home/me/.local/state/toolgate"]);
  assert.ok(home.read.includes("/home/me/.local/state/toolgate"));
  const xdg = derivePermissions({
    manifest: loaded.manifest,
    relativeTo: "/srv",
    env: { HOME: "/home/me", XDG_STATE_HOME: "/srv/state" },
  });
  assert.deepEqual(xdg.write, ["/srv/state/toolgate"], "absolute even inside relativeTo");
  assert.ok(OWN_ENV.includes("XDG_STATE_HOME") && OWN_ENV.includes("XDG_CONFIG_HOME"));
});

Deno.test("`deno task agent` (the kept set, $HOME expanded) audits into $HOME/.local/state/toolgate", async () => {
  const home = await Deno.makeTempDir({ prefix: "toolgate_home_" });
  try {
    const info = await runProgram(Deno.execPath(), ["info", "--json"]);
    const { denoDir } = JSON.parse(info.stdout);
    // A fresh home (no ~/.local yet) and nothing else: the deno cache stays where it is.
    const run = await runProgram(Deno.execPath(), [
      "task",
      "--quiet",
      "agent",
      "call",
      "get_time",
      '{"timezone":"UTC"}',
      // Confinement is not what this test is about: off, so that a machine without bubblewrap says nothing.
      "--sandbox",
      "off",
      "--locked",
    ], { cwd: ROOT, clearEnv: true, env: { HOME: home, DENO_DIR: denoDir } });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, "");
    assert.equal(JSON.parse(run.stdout).ok, true);
    const auditDir = auditDirFor({ HOME: home }, await Deno.realPath(ROOT));
    assert.equal((await Array.fromAsync(Deno.readDir(auditDir))).length, 1);
    for (const folder of [".local", ".local/state", ".local/state/toolgate"]) {
      assert.equal((await Deno.stat(join(home, folder))).mode! & 0o777, 0o700, folder);
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("the https default endpoint is allowed on port 443 only", async () => {
  const loaded = await loadManifest(SANDBOX_FIXTURE);
  assert.ok(loaded.ok);
  assert.deepEqual(derivePermissions({ manifest: loaded.manifest }).net, ["api.openai.com:443"]);
});

Deno.test("the kept set matches tools.json (regenerate with `deno task permissions`)", async () => {
  const set = await rootPermissions();
  const kept = JSON.parse(await Deno.readTextFile(join(ROOT, "permissions", "toolgate.json")));
  assert.deepEqual(kept, set, "permissions/toolgate.json is stale: run `deno task permissions`");
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  assert.equal(
    config.tasks.agent,
    agentTask(toFlags(set)),
    "deno.json's agent task is stale: run `deno task permissions`",
  );
});

Deno.test("validate, list and call work under exactly the least set, with no warning", async () => {
  const flags = await flagsFor(join(ROOT, "tools.json"), ROOT);
  const validate = await cli(flags, ["validate", "--locked"], ROOT);
  assert.equal(validate.code, 0, validate.stderr);
  assert.equal(validate.stderr, "");
  const list = await cli(flags, ["list", "--format", "names", "--locked"], ROOT);
  assert.equal(list.code, 0, list.stderr);
  assert.ok(list.stdout.split("\n").includes("get_time"));
  for (const sandbox of ["auto", "off"]) {
    const call = await cli(flags, [
      "call",
      "get_time",
      '{"timezone":"Europe/Helsinki"}',
      "--sandbox",
      sandbox,
      "--locked",
    ], ROOT);
    assert.equal(call.code, 0, call.stderr);
    assert.equal(call.stderr, "");
    assert.equal(JSON.parse(call.stdout).result.timezone, "Europe/Helsinki");
  }
});

Deno.test("under the least set, an unconfined timeout still ends the whole tree (through the kill program)", async () => {
  const seconds = `${300 + Math.floor(Math.random() * 600)}.${Math.floor(Math.random() * 1000)}`;
  const cwd = await Deno.makeTempDir();
  const flags = await flagsFor(SANDBOX_FIXTURE, cwd);
  try {
    const call = await cli(flags, [
      "--tools",
      SANDBOX_FIXTURE,
      "call",
      "tree",
      JSON.stringify({ seconds }),
      "--sandbox",
      "off",
      "--kill-grace",
      "0.2",
    ], cwd);
    assert.equal(call.code, 1, call.stderr);
    assert.equal(JSON.parse(call.stdout).kind, "timeout");
    const left = await new Deno.Command("pgrep", { args: ["-f", `sleep ${seconds}`], stdout: "piped" })
      .output();
    assert.equal(new TextDecoder().decode(left.stdout).trim(), "", "no process of the tree may survive");
  } finally {
    await new Deno.Command("pkill", { args: ["-KILL", "-f", `sleep ${seconds}`] }).output();
  }
});

Deno.test("broader grants are warned about, and refused with --locked", async () => {
  const warned = await cli(["--allow-all"], ["validate"], ROOT);
  assert.equal(warned.code, 0);
  assert.match(warned.stderr, /warning: broader permissions than needed/);
  assert.match(warned.stderr, /--allow-run \(unscoped\)/);
  const flags = (await flagsFor(join(ROOT, "tools.json"), ROOT)).map((f) =>
    f.startsWith("--allow-run=") ? "--allow-run" : f
  );
  const locked = await cli(flags, ["validate", "--locked"], ROOT);
  assert.equal(locked.code, 1);
  assert.match(locked.stderr, /refusing to start \(--locked\)/);
  assert.match(locked.stderr, /--allow-run \(unscoped\)/);
  assert.doesNotMatch(locked.stderr, /--allow-read \(unscoped\)/);
  assert.equal(locked.stdout, "");
});

Deno.test("the permissions command prints the set in each format", async () => {
  const flags = await flagsFor(join(ROOT, "tools.json"), ROOT);
  const asFlags = await cli(flags, ["permissions"], ROOT);
  assert.equal(asFlags.code, 0, asFlags.stderr);
  assert.deepEqual(asFlags.stdout.trim().split(" "), flags);
  const asJson = await cli(flags, ["permissions", "--format", "json"], ROOT);
  assert.deepEqual(JSON.parse(asJson.stdout), await rootPermissions(false, STATE_ENV));
  const asDenoJson = await cli(flags, [
    "permissions",
    "--format",
    "deno-json",
    "--base-url",
    "http://localhost:1234/v1",
  ], ROOT);
  assert.deepEqual(JSON.parse(asDenoJson.stdout).permissions.toolgate.net, ["localhost:1234"]);
  const bad = await cli(flags, ["permissions", "--format", "yaml"], ROOT);
  assert.equal(bad.code, 2);
});
