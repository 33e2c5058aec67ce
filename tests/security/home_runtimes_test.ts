// Runtimes that live under the home folder run confined (issue 23, "What was seen" 3): a Python tool run by a venv
// whose interpreter is pyenv's, a Node tool with Node under `~/.nvm`, a `deno run` launcher with Deno under
// `~/.deno/bin`, each in a scratch home passed to toolgate as HOME. toolgate shows each one's real install folder,
// read-only, and nothing else of that home: a planted `~/.ssh/id_rsa`, `~/.config`, `~/.aws`, shell history and
// toolgate's own state stay unreadable from the same tools. What toolgate cannot show (an interpreter that is not
// there, or one that lies where it never shows anything, as a hostile symlink in the workspace would make it)
// answers `unavailable`, not retryable, naming the program and the profile's `read` list.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import type { Envelope, FailureEnvelope } from "../../src/contract.ts";
import { Executor } from "../../src/run/executor.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";
import { AUDIT_KEY } from "../executor_helpers.ts";
import { REPO, runToolgate, writeFiles } from "../support.ts";
import { confinedTest, realTempDir, SUPPORT } from "./helpers.ts";

await loadSchemaEngine();

/** The secrets planted in the scratch home, by path relative to it. */
const SECRETS = [
  ".ssh/id_rsa",
  ".aws/credentials",
  ".config/app/token",
  ".bash_history",
  ".local/state/toolgate/secrets.json",
  ".local/share/keyrings/login.keyring",
  ".cache/app/session",
];

/** A scratch home with secrets, a project (its manifest and tools) in it, and a workspace beside it. */
interface World {
  readonly home: string;
  readonly project: string;
  readonly workspace: string;
}

async function makeWorld(): Promise<World> {
  const root = await realTempDir("toolgate_home_rt_");
  const home = join(root, "home");
  const project = join(home, "proj");
  const workspace = join(root, "workspace");
  await Deno.mkdir(project, { recursive: true });
  await Deno.mkdir(workspace);
  for (const secret of SECRETS) {
    await Deno.mkdir(dirname(join(home, secret)), { recursive: true });
    await Deno.writeTextFile(join(home, secret), `SECRET ${secret}\n`);
  }
  return { home, project, workspace };
}

/** Puts `source`'s real file at `target`: a hard link (same content, a path of its own, no symlink), else a copy. */
async function placeBinary(source: string, target: string): Promise<void> {
  await Deno.mkdir(dirname(target), { recursive: true });
  const real = await Deno.realPath(source);
  try {
    await Deno.link(real, target);
  } catch {
    await Deno.copyFile(real, target);
    await Deno.chmod(target, 0o755);
  }
}

/** An executor over `tools` (manifest in the project), confined, with the scratch home as HOME. */
function executorIn(world: World, tools: Record<string, unknown>[], path: string): Executor {
  const validated = validateManifest({ tools }, join(world.project, "tools.json"), {
    allowAbsoluteCommands: true,
  });
  assert.ok(validated.ok, validated.ok ? "" : validated.errors.join("\n"));
  return new Executor({
    manifest: validated.manifest,
    env: { PATH: path, HOME: world.home },
    cwd: world.workspace,
    auditDir: null,
    auditKey: AUDIT_KEY,
    sandbox: "require",
    // bwrap as found on this machine's PATH: the tools' PATH need not hold it.
    bwrap: SUPPORT.ok ? SUPPORT.bwrap : "bwrap",
  });
}

/** What each probe tool answers: `ok`, its runtime, what it could read of `paths`, and the home's listing. */
interface Probe {
  readonly answer: string;
  readonly runtime: string;
  readonly readable: string[];
  readonly home: string[] | null;
}

function probeOf(envelope: Envelope): Probe {
  assert.ok(envelope.ok, JSON.stringify(envelope));
  return envelope.result as Probe;
}

/** The paths each probe tries to read: every planted secret, and toolgate's config folder. */
function targets(world: World): string[] {
  return [...SECRETS.map((secret) => join(world.home, secret)), join(world.home, ".config")];
}

/** The `tools/bin` probe programs and their sources: the same probe in Python, JavaScript and TypeScript. */
function probeFiles(world: World): Record<string, string> {
  const paths = JSON.stringify(targets(world));
  const home = JSON.stringify(world.home);
  return {
    "tools/bin/py": `#!${world.home}/venvs/tool/bin/python
import json, os, sys
json.load(sys.stdin)
readable = []
for path in ${paths}:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path).read()
        readable.append(path)
    except OSError:
        pass
try:
    listing = sorted(os.listdir(${home}))
except OSError:
    listing = None
print(json.dumps({"answer": "ok", "runtime": sys.executable, "prefix": sys.prefix, "readable": readable, "home": listing}))
`,
    "tools/bin/nd": `#!/usr/bin/env node
const fs = require("fs");
const readable = [];
for (const path of ${paths}) {
  try {
    if (fs.statSync(path).isDirectory()) fs.readdirSync(path); else fs.readFileSync(path);
    readable.push(path);
  } catch {}
}
let home = null;
try { home = fs.readdirSync(${home}).sort(); } catch {}
console.log(JSON.stringify({ answer: "ok", runtime: process.execPath, readable, home }));
`,
    "tools/bin/dn":
      `#!/bin/sh\nexec deno run --quiet --no-prompt --no-config --no-lock --allow-read "$(dirname -- "$0")/../src/dn.ts"\n`,
    "tools/src/dn.ts": `const readable: string[] = [];
for (const path of ${paths}) {
  try {
    if (Deno.statSync(path).isDirectory) [...Deno.readDirSync(path)]; else Deno.readFileSync(path);
    readable.push(path);
  } catch { /* hidden */ }
}
let home: string[] | null = null;
try { home = [...Deno.readDirSync(${home})].map((e) => e.name).sort(); } catch { /* hidden */ }
console.log(JSON.stringify({ answer: "ok", runtime: Deno.execPath(), readable, home }));
`,
  };
}

/** Every tool in the `none` profile: it sees the system folders, the workspace and its own files, nothing more. */
const TOOLS = ["py", "nd", "dn"].map((name) => ({
  name,
  command: [`./tools/bin/${name}`],
  permissions: "none",
  timeoutSec: 60,
}));

/** Puts the three runtimes and probes in the world's home; returns the tools' PATH (home runtimes first). */
async function homeRuntimes(world: World): Promise<string> {
  const { home } = world;
  // The venv, made by the python3 on this machine's PATH (pyenv's, under its own home folder).
  const venv = new Deno.Command("python3", {
    args: ["-m", "venv", "--without-pip", join(home, "venvs", "tool")],
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  assert.ok(venv.success, new TextDecoder().decode(venv.stderr));
  const nodeBin = join(home, ".nvm", "versions", "node", "v20", "bin");
  await placeBinary("/usr/bin/node", join(nodeBin, "node"));
  await Deno.mkdir(join(home, ".nvm", "versions", "node", "v20", "lib", "node_modules"), { recursive: true });
  await placeBinary(Deno.execPath(), join(home, ".deno", "bin", "deno"));
  await writeFiles(world.project, { ...probeFiles(world), "tools.json": JSON.stringify({ tools: TOOLS }) });
  // The home runtimes first on PATH, as nvm's and Deno's installers put them: the system ones come after.
  return [join(home, ".deno", "bin"), nodeBin, "/usr/local/bin", "/usr/bin", "/bin"].join(":");
}

/** Of the home folder, each tool sees only the path to its own files and to its runtime's install folder. */
const HOME_SEEN: Record<string, string[]> = {
  py: ["proj", "venvs"],
  nd: [".nvm", "proj"],
  dn: [".deno", "proj"],
};

function assertConfinedProbe(name: string, probe: Probe, world: World): void {
  const runtime: Record<string, string> = {
    py: join(world.home, "venvs", "tool", "bin", "python"),
    nd: join(world.home, ".nvm", "versions", "node", "v20", "bin", "node"),
    dn: join(world.home, ".deno", "bin", "deno"),
  };
  assert.equal(probe.answer, "ok", name);
  assert.equal(probe.runtime, runtime[name], `${name}: the runtime under the home folder ran`);
  assert.deepEqual(probe.readable, [], `${name} read secrets of the home folder`);
  // The scratch home lies under /tmp, which is the sandbox's own (writable, private): Deno makes its cache
  // folder there. The host's `.cache` is not shown (its planted file is unreadable, above).
  const seen = probe.home?.filter((entry) => entry !== ".cache");
  assert.deepEqual(seen, HOME_SEEN[name], `${name} sees more of the home folder than it needs`);
}

confinedTest(
  "a venv (pyenv's Python), Node under ~/.nvm and a deno run launcher with Deno under ~/.deno run confined, and none of them reads ~/.ssh, ~/.config or toolgate's state",
  async () => {
    const world = await makeWorld();
    const executor = executorIn(world, TOOLS, await homeRuntimes(world));
    for (const name of ["py", "nd", "dn"]) {
      assertConfinedProbe(name, probeOf(await executor.call(name, "{}")), world);
    }
  },
);

confinedTest(
  "the same runtimes run confined under toolgate's least permission set, through its launcher",
  async () => {
    const world = await makeWorld();
    const path = await homeRuntimes(world);
    const denoDir = Deno.env.get("DENO_DIR") ||
      join(Deno.env.get("XDG_CACHE_HOME") || join(Deno.env.get("HOME") ?? "/root", ".cache"), "deno");
    for (const name of ["py", "dn"]) {
      const tools = join(world.project, "tools.json");
      const args = ["call", name, "{}", "--tools", tools, "--sandbox", "require", "--no-audit"];
      const run = await runToolgate(args, world.workspace, {
        HOME: world.home,
        PATH: path,
        DENO_DIR: denoDir,
      });
      assert.equal(run.code, 0, `${name}: ${run.stdout}${run.stderr}`);
      assertConfinedProbe(name, probeOf(JSON.parse(run.stdout)), world);
    }
  },
);

/** A tool whose first line names `interpreter`. */
function shebangTool(name: string, interpreter: string): Record<string, string> {
  return { [`tools/bin/${name}`]: `#!${interpreter}\necho '{"answer":"ok"}'\n` };
}

function unavailable(envelope: Envelope, program: string): FailureEnvelope {
  assert.equal(envelope.ok, false, JSON.stringify(envelope));
  const failed = envelope as FailureEnvelope;
  assert.equal(failed.kind, "unavailable", JSON.stringify(envelope));
  assert.equal(failed.retryable, false, JSON.stringify(envelope));
  assert.ok(failed.message.includes(program), `the message names ${program}: ${failed.message}`);
  assert.match(failed.message, /"read" list of the tool's permission profile "none"/);
  return failed;
}

confinedTest(
  "an interpreter the sandbox cannot show answers unavailable, not retryable, naming it and the profile's read list",
  async () => {
    const world = await makeWorld();
    await writeFiles(world.project, shebangTool("missing", "/usr/bin/env toolgate-no-such-interpreter"));
    const executor = executorIn(
      world,
      [{ name: "missing", command: ["./tools/bin/missing"], permissions: "none" }],
      "/usr/local/bin:/usr/bin:/bin",
    );
    unavailable(await executor.call("missing", "{}"), "toolgate-no-such-interpreter");
  },
);

confinedTest(
  "a hostile first line or venv symlink cannot make toolgate show ~/.ssh, ~/.config or its state folder",
  async () => {
    const world = await makeWorld();
    const { home, workspace } = world;
    // Executable files where secrets live: toolgate still never shows them.
    const planted = [".ssh/run", ".config/app/run", ".local/state/toolgate/run"].map((p) => join(home, p));
    for (const path of planted) {
      await Deno.writeTextFile(path, "#!/bin/sh\ncat ~/.ssh/id_rsa\n", { mode: 0o755 });
    }
    // A venv in the workspace, where a tool may write: its python made a symlink to the private key.
    await Deno.mkdir(join(workspace, ".venv", "bin"), { recursive: true });
    await Deno.writeTextFile(join(workspace, ".venv", "pyvenv.cfg"), `home = ${home}/.ssh\n`);
    await Deno.chmod(join(home, ".ssh", "id_rsa"), 0o700);
    await Deno.symlink(join(home, ".ssh", "id_rsa"), join(workspace, ".venv", "bin", "python"));
    const tools = [
      ...planted.map((path, i) => ({ name: `t${i}`, path })),
      { name: "venv", path: join(workspace, ".venv", "bin", "python") },
    ];
    for (const tool of tools) await writeFiles(world.project, shebangTool(tool.name, tool.path));
    const executor = executorIn(
      world,
      tools.map((tool) => ({ name: tool.name, command: [`./tools/bin/${tool.name}`], permissions: "none" })),
      "/usr/local/bin:/usr/bin:/bin",
    );
    for (const tool of tools) {
      const failed = unavailable(await executor.call(tool.name, "{}"), tool.path);
      assert.doesNotMatch(JSON.stringify(failed), /SECRET/);
    }
  },
);

confinedTest(
  "a venv symlink a tool planted toward a folder with bin/ and lib/ shows that one program, not the folder",
  async () => {
    const world = await makeWorld();
    const { home, workspace } = world;
    // A private project shaped a little like an install: bin/, lib/, and a secret beside them.
    const project = join(home, "work", "private");
    await writeFiles(project, { "secret.txt": "SECRET project\n", "lib/data/x": "x" });
    const secret = join(project, "secret.txt");
    await Deno.mkdir(join(project, "bin"));
    await Deno.writeTextFile(
      join(project, "bin", "run"),
      `#!/bin/sh\ncat ${secret} 2>/dev/null || echo '{"answer":"hidden"}'\n`,
      { mode: 0o755 },
    );
    await Deno.mkdir(join(workspace, ".venv", "bin"), { recursive: true });
    await Deno.writeTextFile(join(workspace, ".venv", "pyvenv.cfg"), `home = ${project}/bin\n`);
    await Deno.symlink(join(project, "bin", "run"), join(workspace, ".venv", "bin", "python"));
    await writeFiles(world.project, shebangTool("venv", join(workspace, ".venv", "bin", "python")));
    const executor = executorIn(
      world,
      [{ name: "venv", command: ["./tools/bin/venv"], permissions: "none" }],
      "/usr/local/bin:/usr/bin:/bin",
    );
    const envelope = await executor.call("venv", "{}");
    assert.ok(envelope.ok, JSON.stringify(envelope));
    assert.deepEqual(envelope.result, { answer: "hidden" });
  },
);

confinedTest(
  "the checkout's own launchers, copied anywhere, run with toolgate's runtime: no deno on PATH, none in the sandbox",
  async () => {
    const world = await makeWorld();
    const names = ["get_time", "fs_list_dir"];
    const files: Record<string, string> = {};
    for (const name of names) {
      files[`tools/bin/${name}`] = await Deno.readTextFile(join(REPO, "tools", "bin", name));
    }
    // The same text with one byte changed is the author's own program, not toolgate's launcher.
    files["tools/bin/exec"] = (await Deno.readTextFile(join(REPO, "tools", "bin", "exec"))).replace(
      "exec ",
      "exec  ",
    );
    await writeFiles(world.project, files);
    const empty = join(world.home, "empty-bin");
    await Deno.mkdir(empty);
    const executor = executorIn(
      world,
      [...names, "exec"].map((name) => ({ name, command: [`./tools/bin/${name}`], permissions: "none" })),
      empty,
    );
    const manifest = executor.manifest;
    assert.deepEqual(manifest.tools.map((tool) => tool.builtin), [...names, undefined]);
    const time = await executor.call("get_time", JSON.stringify({ timezone: "UTC" }));
    assert.ok(time.ok, JSON.stringify(time));
    assert.match(String((time.result as { iso8601: string }).iso8601), /^\d{4}-\d\d-\d\dT/);
    const listing = await executor.call("fs_list_dir", JSON.stringify({ path: "." }));
    assert.ok(listing.ok, JSON.stringify(listing));
  },
);

confinedTest(
  "a tool's first line changed between two calls is read again: the second call sees the new interpreter",
  async () => {
    const world = await makeWorld();
    await writeFiles(world.project, shebangTool("changes", "/bin/sh"));
    const executor = executorIn(
      world,
      [{ name: "changes", command: ["./tools/bin/changes"], permissions: "none" }],
      "/usr/local/bin:/usr/bin:/bin",
    );
    // Untouched for more than 2 s: the launcher keeps its first line from one call to the next.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    assert.equal((await executor.call("changes", "{}")).ok, true);
    assert.equal((await executor.call("changes", "{}")).ok, true);
    // The same file rewritten in place (same inode): its new first line names an interpreter that is not there.
    const script = join(world.project, "tools", "bin", "changes");
    using file = await Deno.open(script, { write: true, truncate: true });
    await file.write(new TextEncoder().encode(
      shebangTool("changes", "/usr/bin/env toolgate-no-such-one")[
        "tools/bin/changes"
      ],
    ));
    unavailable(await executor.call("changes", "{}"), "toolgate-no-such-one");
  },
);
