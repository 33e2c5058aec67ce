import assert from "node:assert/strict";
import { join } from "node:path";
import { validateManifest } from "../manifest/manifest.ts";
import { controlPlane } from "../sandbox/control_plane.ts";
import { probeSandbox } from "../sandbox/sandbox.ts";
import { ToolLauncher } from "../sandbox/tool_launch.ts";
import { runStep } from "./install_step.ts";

const support = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin");
if (!support.ok) console.log(`install_step_test: skipping: no sandbox: ${support.reason}`);

Deno.test({
  name: "install step: confined, it writes its own folder only and sees none of the home it was started from",
  ignore: !support.ok,
  async fn() {
    const home = await Deno.makeTempDir();
    try {
      const project = join(home, "project");
      const staging = join(home, "staging");
      await Deno.mkdir(project);
      await Deno.mkdir(staging);
      await Deno.writeTextFile(join(home, "secret.txt"), "not for installers\n");
      const loaded = validateManifest({ tools: [] }, join(project, "tools.json"));
      if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
      const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: home };
      const launcher = new ToolLauncher({
        manifest: loaded.manifest,
        env,
        workspace: project,
        controlPlane: controlPlane(loaded.manifest, env),
        sandbox: "require",
      });
      const script = [
        `echo made > ${staging}/lock`,
        // Inside, /tmp is the sandbox's own: a write there stays there.
        `(echo planted > ${home}/planted) 2>/dev/null`,
        `cat ${home}/secret.txt 2>/dev/null || echo hidden`,
      ].join("; ");
      const done = await runStep(launcher, {
        what: "a step",
        program: "/bin/sh",
        args: ["-c", script],
        write: [staging],
        read: [],
        net: [],
        env: {},
      });
      assert.ok(done.ok, done.ok ? "" : done.reason);
      assert.deepEqual(done.stdout.trim().split("\n"), ["hidden"]);
      assert.equal(await Deno.readTextFile(join(staging, "lock")), "made\n");
      await assert.rejects(Deno.stat(join(home, "planted")));
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  },
});
