// A confined call's gate (src/sandbox/gate.ts) and the processes started ahead behind it
// (src/process/starts_ahead.ts): a tool's program runs only once its call writes the gate, never because its stdin
// ended, and a call started ahead runs its tool once, for its own arguments.
import assert from "node:assert/strict";
import { join } from "node:path";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { type Manifest } from "../../src/manifest/manifest_types.ts";
import { ToolLauncher } from "../../src/sandbox/tool_launch.ts";
import { controlPlane } from "../../src/sandbox/control_plane.ts";
import { StartsAhead } from "../../src/process/starts_ahead.ts";
import { confinedTest, realTempDir } from "../security/helpers.ts";
import { GATE_CLOSED_EXIT } from "../../src/sandbox/gate.ts";
import { writeFiles } from "../support.ts";
import { heldAtGate, sleep, until } from "../processes.ts";

const ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" };
/** An environment whose own cgroups name none toolgate can use: no cgroup script. */
const NO_CGROUPS = { ...ENV, TOOLGATE_CGROUP: "0::" };

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

confinedTest(
  "gate: a gated start runs nothing of its tool until its gate, and the end of its stdin ends it",
  async () => {
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
    // A loaded machine may take a while to bring the start to its gate: waited for, then given time to go wrong.
    // The start waiting at its gate: this one (its workspace is its own), before bwrap or inside its sandbox.
    await until(async () => (await heldAtGate(w.dir)).length > 0, "waiting at its gate", 20_000);
    await sleep(300);
    assert.equal(await starts(w.log), 0, "the tool ran before its call");
    // Its caller went away before the call: stdin ends, and the start ends without the tool.
    await child.stdin.close();
    const output = await child.output();
    launcher.release(launch);
    assert.equal(output.code, GATE_CLOSED_EXIT, new TextDecoder().decode(output.stderr));
    assert.equal(await starts(w.log), 0, "the tool ran without its call");
  },
);

for (const [where, env] of [["", ENV], [" (no cgroups: a shell waits at the gate)", NO_CGROUPS]] as const) {
  confinedTest(
    `gate: a call started ahead runs its tool once, for its own arguments, and nothing waits after close${where}`,
    async () => {
      await startedAhead(env);
    },
  );
}

async function startedAhead(env: Record<string, string>): Promise<void> {
  const w = await workspace();
  const ahead = new StartsAhead();
  const executor = new Executor({
    manifest: w.manifest,
    env,
    cwd: w.dir,
    auditDir: null,
    sandbox: "require",
    startsAhead: ahead,
  });
  try {
    const first = await executor.call("note", '{"n":1}');
    assert.deepEqual(first, { ok: true, result: { args: { n: 1 } }, tool: "note" });
    ahead.refill();
    await until(async () => (await heldAtGate(w.dir)).length > 0, "a start waiting for the next call");
    const [waiting] = await heldAtGate(w.dir);
    await sleep(500);
    assert.equal(await starts(w.log), 1, "the process started ahead ran nothing of the tool");
    const second = await executor.call("note", '{"n":2}');
    assert.deepEqual(second, { ok: true, result: { args: { n: 2 } }, tool: "note" });
    assert.equal(await starts(w.log), 2, "once per call");
    assert.ok(!(await heldAtGate(w.dir)).includes(waiting), "the call took the process started ahead");
    ahead.refill();
    await until(async () => (await heldAtGate(w.dir)).length > 0, "held again");
  } finally {
    await ahead.close();
    await executor.close();
  }
  assert.deepEqual(await heldAtGate(w.dir), [], "close ended the process started ahead");
  assert.equal(await starts(w.log), 2);
}
