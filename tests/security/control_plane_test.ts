// Attacks on toolgate's control plane by a hostile tool (issue 10, "What was seen" 2 and 7): whatever its profile,
// a tool cannot change the manifest and what sits beside it, even when the workspace contains them; a program
// planted after the manifest was loaded is never run; a profile file cannot redefine a shipped profile; and where
// nothing can be confined, a tool that could write or reach the network does not run.
import assert from "node:assert/strict";
import { join } from "node:path";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { writeFiles } from "../support.ts";
import { confinedTest, realTempDir, runScript, SCRIPT_FIXTURE, scriptExecutor, snapshot } from "./helpers.ts";

/** A project whose folder holds its own manifest, tools, profiles and Deno config: the workspace contains them. */
async function projectWithControlPlane(): Promise<string> {
  const dir = await realTempDir("toolgate_project_");
  const script = await Deno.readTextFile(join(SCRIPT_FIXTURE, "..", "tools", "bin", "run_script"));
  await writeFiles(dir, {
    "tools.json": await Deno.readTextFile(SCRIPT_FIXTURE),
    "tools/bin/run_script": script,
    "permissions/tight.json": await Deno.readTextFile(
      join(SCRIPT_FIXTURE, "..", "permissions", "tight.json"),
    ),
    "deno.json": '{ "tasks": { "agent": "echo untouched" } }\n',
    "deno.lock": '{ "version": "5" }\n',
  });
  return dir;
}

const ATTACK = [
  "echo pwned >> tools.json",
  "echo pwned > permissions/tight.json",
  "echo '{}' > permissions/none.json",
  "echo pwned > tools/bin/run_script",
  "echo pwned > tools/bin/new_tool",
  "echo pwned > deno.json",
  "echo pwned > deno.lock",
  "rm -f tools.json deno.json",
  "mv tools tools.moved",
  "mv permissions perms.moved",
  "ln -sf /etc/passwd deno.lock",
  "echo legit > legit.txt",
].join("; ");

confinedTest("no tool can change the control plane inside its workspace, whatever its profile", async () => {
  const project = await projectWithControlPlane();
  const manifestPath = join(project, "tools.json");
  const before = await snapshot(project);
  const executor = await scriptExecutor(project, {}, manifestPath);
  for (const tool of ["script_workspace", "script_tight", "script_network"]) {
    await runScript(executor, tool, ATTACK);
  }
  const after = await snapshot(project);
  assert.equal(after.get("legit.txt"), "legit\n", "the rest of the workspace stays writable");
  after.delete("legit.txt");
  assert.deepEqual(after, before);
});

/** A confined executor over the script fixture whose workspace is the home folder `home` (HOME too). */
async function homeExecutor(home: string): Promise<Executor> {
  const loaded = await loadManifest(SCRIPT_FIXTURE);
  assert.ok(loaded.ok);
  return new Executor({
    manifest: loaded.manifest,
    env: { PATH: "/usr/bin:/bin", HOME: home },
    cwd: home,
    auditDir: null,
    sandbox: "require",
  });
}

// toolgate's state (the audit key, the secret store's key file) and its configuration (the secret store itself).
for (
  const [folder, where, secret] of [
    ["state", [".local", "state", "toolgate"], "audit.key"],
    ["config", [".config", "toolgate"], "secrets.json"],
  ] as const
) {
  confinedTest(`the ${folder} folder is masked where a workspace would show it`, async () => {
    const home = await realTempDir("toolgate_home_");
    const dir = join(home, ...where);
    const shown = where.join("/");
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(join(dir, secret), "not for tools");
    // The workspace is the home folder itself: the folder lies inside it.
    const executor = await homeExecutor(home);
    const result = await runScript(
      executor,
      "script_workspace",
      `ls -A ${shown}; cat ${shown}/${secret}; echo x > ${shown}/planted; echo end`,
    );
    assert.doesNotMatch(result.out, /not for tools/);
    assert.match(
      result.out,
      new RegExp(`^cat: [^ ]*${secret.replace(".", "\\.")}: No such file`),
      "it shows empty",
    );
    assert.equal(await Deno.readTextFile(join(dir, secret)), "not for tools");
    assert.ok(![...Deno.readDirSync(dir)].some((e) => e.name === "planted"), "nothing was planted there");
  });
}

confinedTest(
  "the state and config folders are masked even when they do not exist when toolgate starts",
  async () => {
    // A home folder as the workspace, with neither folder yet: a tool must not be the one to make them (the secret
    // store would then write into the tool's folder, in the tool's view).
    const home = await realTempDir("toolgate_home_");
    const executor = await homeExecutor(home);
    const folders = [".local/state/toolgate", ".config/toolgate"];
    await runScript(
      executor,
      "script_workspace",
      folders.map((folder) => `mkdir -p ${folder}; echo x > ${folder}/planted`).join("; "),
    );
    for (const folder of folders) {
      await assert.rejects(Deno.stat(join(home, folder, "planted")), Deno.errors.NotFound, folder);
    }
  },
);

Deno.test("a program that appears after the manifest was loaded is not run", async () => {
  const dir = await realTempDir();
  await writeFiles(dir, {
    "tools.json": { tools: [{ name: "late", command: ["./tools/bin/late"], permissions: "none" }] },
    "tools/bin/.keep": "",
  });
  const loaded = await loadManifest(join(dir, "tools.json"));
  assert.ok(loaded.ok);
  // Planted by a tool (or anyone) once toolgate is running.
  const marker = join(dir, "ran.txt");
  await writeFiles(dir, { "tools/bin/late": `#!/bin/sh\ntouch ${marker}\necho '{}'\n` });
  const executor = new Executor({
    manifest: loaded.manifest,
    env: { PATH: "/usr/bin:/bin" },
    cwd: dir,
    auditDir: null,
    sandbox: "off",
  });
  const envelope = await executor.call("late", "{}");
  assert.equal(!envelope.ok && envelope.kind, "unavailable");
  assert.match(!envelope.ok ? envelope.message : "", /did not exist when toolgate loaded the manifest/);
  assert.equal(await Deno.stat(marker).then(() => true, () => false), false);
});

Deno.test("a profile file beside the manifest cannot redefine a shipped profile", async () => {
  const dir = await realTempDir();
  await writeFiles(dir, {
    "tools.json": { tools: [{ name: "t", command: ["./tools/bin/t"], permissions: "none" }] },
    "tools/bin/t": "#!/bin/sh\necho '{}'\n",
    "permissions/none.json": { write: ["/"], net: true },
  });
  const loaded = await loadManifest(join(dir, "tools.json"));
  assert.ok(loaded.ok);
  const tool = loaded.manifest.byName.get("t")!;
  assert.deepEqual(tool.profile.write, []);
  assert.equal(tool.profile.net, false);
  assert.match(loaded.warnings.join("\n"), /permissions\/none\.json is ignored: "none" is a shipped profile/);
});

Deno.test("fail closed: without bubblewrap, auto refuses a tool that can write or reach the network", async () => {
  const workspace = await realTempDir();
  const executor = await scriptExecutor(workspace, { bwrap: "/nonexistent/bwrap", sandbox: "auto" });
  for (const tool of ["script_workspace", "script_network"]) {
    const envelope = await executor.call(tool, JSON.stringify({ script: "echo ran > ran.txt" }));
    assert.equal(!envelope.ok && envelope.kind, "unavailable", tool);
    assert.equal(!envelope.ok && envelope.retryable, false);
    assert.match(!envelope.ok ? envelope.message : "", /--sandbox off/);
  }
  assert.equal(await Deno.stat(join(workspace, "ran.txt")).then(() => true, () => false), false);
  // A tool without side effects runs, unconfined, and says so.
  const none = await executor.call("script_none", JSON.stringify({ script: "echo hi" }));
  assert.ok(none.ok);
  assert.match(none.warnings?.[0] ?? "", /^not confined: bubblewrap \(bwrap\) is not installed/);
  const notes = await executor.startNotes();
  assert.equal(notes.length, 1);
  assert.match(
    notes[0],
    /script_none will run unconfined.*3 tools that can write or reach the network will not run/,
  );
  assert.match(notes[0], /--sandbox require/);
});

Deno.test("a workspace inside toolgate's own folder is said at start when a tool that can write may run, not for a read-only call", async () => {
  // The manifest's own folder as the workspace: what the README's first command does in the checkout.
  const executor = await scriptExecutor(join(SCRIPT_FIXTURE, ".."), { sandbox: "off" });
  const inside = async (names?: string[]) =>
    (await executor.startNotes(names)).filter((note) => /lies inside .*belongs to toolgate/.test(note));
  assert.equal((await inside()).length, 1, "the whole manifest has tools that can write");
  assert.match((await inside(["script_workspace"]))[0] ?? "", /run toolgate from your project's folder/);
  assert.deepEqual(await inside(["script_none"]), [], "a call that cannot write loses nothing there");
});

Deno.test("--sandbox off runs every tool unconfined, because the person said so", async () => {
  const workspace = await realTempDir();
  const executor = await scriptExecutor(workspace, { bwrap: "/nonexistent/bwrap", sandbox: "off" });
  const envelope = await executor.call("script_workspace", JSON.stringify({ script: "echo ran > ran.txt" }));
  assert.ok(envelope.ok);
  assert.equal(await Deno.readTextFile(join(workspace, "ran.txt")), "ran\n");
  assert.match((await executor.startNotes()).join("\n"), /the sandbox is off/);
});

confinedTest("bwrap is resolved once: the binary the probe ran is the binary every call runs", async () => {
  const workspace = await realTempDir();
  const bin = await realTempDir("toolgate_bin_");
  const log = join(bin, "calls.log");
  const real = ["/usr/bin/bwrap", "/bin/bwrap"].find((path) => {
    try {
      return Deno.statSync(path).isFile;
    } catch {
      return false;
    }
  });
  await writeFiles(bin, {
    "tools/bin/bwrap": `#!/bin/sh\necho call >> ${log}\nexec ${real} "$@"\n`,
  });
  const executor = await scriptExecutor(workspace);
  // The executor looks bwrap up once, on its environment's PATH, which starts with the logging wrapper.
  const wrapped = new Executor({
    manifest: executor.manifest,
    env: { PATH: `${join(bin, "tools", "bin")}:/usr/bin:/bin`, HOME: Deno.env.get("HOME") ?? "/root" },
    cwd: workspace,
    auditDir: null,
    sandbox: "require",
  });
  for (let i = 0; i < 2; i++) assert.match((await runScript(wrapped, "script_none", "echo ok")).out, /ok/);
  const calls = (await Deno.readTextFile(log)).trim().split("\n");
  assert.ok(calls.length >= 3, `the probe and both calls went through the same bwrap: ${calls.length}`);
});
