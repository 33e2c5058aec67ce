// A confined call's gate (src/sandbox/tool_launch.ts, the cgroup script's descriptor and bwrap's --block-fd) and
// the processes started ahead behind it (src/process/starts_ahead.ts): a tool's program runs only once its call
// writes the gate, never because its stdin ended, and a call started ahead runs its tool once, for its call alone.
import assert from "node:assert/strict";
import { join } from "node:path";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest, type Manifest } from "../../src/manifest/manifest.ts";
import { ToolLauncher } from "../../src/sandbox/tool_launch.ts";
import { controlPlane } from "../../src/sandbox/control_plane.ts";
import { StartsAhead } from "../../src/process/starts_ahead.ts";
import { hostTest, NO_BWRAP, realTempDir, SUPPORT } from "../security/helpers.ts";
import { writeFiles } from "../support.ts";
import { pgrep, sleep, until } from "../processes.ts";

/** The gate needs the cgroup script, which opens bwrap's descriptor. */
const NO_GATE = NO_BWRAP ?? (SUPPORT.ok && SUPPORT.cgroups === undefined ? "no cgroups to set up here" : undefined);

const ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" };

/** A workspace whose tool notes each start in `starts.log` before it reads its arguments, then echoes them. */
async function workspace(): Promise<{ dir: string; manifest: Manifest; log: string }> {
  const dir = await realTempDir("toolgate_gate_");
  await writeFiles(dir, {
    "tools.json": {
      tools: [{ name: "note", command: ["./tools/bin/note"], permissions: "workspace", timeoutSec: 20 }],
    },
    "tools/bin/note": '#!/bin/sh\necho started >> starts.log\nprintf \'{"args":%s}\\n\' "$(cat)"\n',
  });
  await Deno.chmod(join(dir, "tools", "bin", "note"), 0o755);
  const loaded = await loadManifest(join(dir, "tools.json"));
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  return { dir, manifest: loaded.manifest, log: join(dir, "starts.log") };
}

async function starts(log: string): Promise<number> {
  return await Deno.readTextFile(log).then((text) => text.split("\n").length - 1, () => 0);
}

/** The sandboxes held at their gate for a workspace. */
function held(dir: string): Promise<number[]> {
  return pgrep(`--block-fd 4 .*${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`, false);
}

hostTest("gate: a gated start runs nothing of its tool until its gate, and the end of its stdin never opens it", NO_GATE, async () => {
  const w = await workspace();
  const launcher = new ToolLauncher({
    manifest: w.manifest,
    env: ENV,
    workspace: w.dir,
    controlPlane: controlPlane(w.manifest, ENV),
    sandbox: "require",
  });
  const tool = w.manifest.byName.get("note")!;
  const launch = await launcher.launch(tool, undefined, [], true);
  assert.ok(launch.ok && launch.gate !== undefined && launch.startsAhead, JSON.stringify(launch));
  const child = new Deno.Command(launch.program, {
    args: [...launch.args],
    cwd: w.dir,
    env: ENV,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Its caller went away before the call: stdin ends, and the tool must still not run.
  await child.stdin.close();
  await sleep(1000);
  assert.equal(await starts(w.log), 0, "the tool ran without its call");
  assert.equal(await held(w.dir).then((pids) => pids.includes(child.pid)), true, "held at its gate");
  child.kill("SIGKILL");
  await child.status;
  await Promise.all([child.stdout.cancel(), child.stderr.cancel()]);
  launcher.release(launch);
  assert.equal(await starts(w.log), 0);
});

hostTest("gate: a call started ahead runs its tool once, for its own arguments, and nothing waits after close", NO_GATE, async () => {
  const w = await workspace();
  const ahead = new StartsAhead();
  const executor = new Executor({
    manifest: w.manifest,
    env: ENV,
    cwd: w.dir,
    auditDir: null,
    sandbox: "require",
    startsAhead: ahead,
  });
  try {
    const first = await executor.call("note", '{"n":1}');
    assert.deepEqual(first, { ok: true, result: { args: { n: 1 } }, tool: "note" });
    ahead.refill();
    await until(async () => (await held(w.dir)).length > 0, "a sandbox held for the next call");
    const [waiting] = await held(w.dir);
    await sleep(500);
    assert.equal(await starts(w.log), 1, "the process started ahead ran nothing of the tool");
    const second = await executor.call("note", '{"n":2}');
    assert.deepEqual(second, { ok: true, result: { args: { n: 2 } }, tool: "note" });
    assert.equal(await starts(w.log), 2, "once per call");
    assert.ok(!(await held(w.dir)).includes(waiting), "the call took the process started ahead");
    ahead.refill();
    await until(async () => (await held(w.dir)).length > 0, "held again");
  } finally {
    await ahead.close();
    await executor.close();
  }
  assert.deepEqual(await held(w.dir), [], "close ended the process started ahead");
  assert.equal(await starts(w.log), 2);
});
