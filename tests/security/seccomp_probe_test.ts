// The sandbox probe tries the seccomp filter once (issue 41, fail closed): `auto` knows before the first confined
// call whether bubblewrap loads it here, a confined call is refused before anything of it starts where it cannot
// (naming --sandbox unfiltered, the named degraded mode), and doctor says which. A bubblewrap that cannot load a
// filter is played by a wrapper in front of the real one that answers `--seccomp` as bwrap does on a kernel
// without seccomp filters.
import assert from "node:assert/strict";
import { join } from "node:path";
import { probeSandbox } from "../../src/sandbox/sandbox.ts";
import { setupReport } from "../../src/commands/setup_report.ts";
import { confinedTest, realTempDir, scriptExecutor, SUPPORT } from "./helpers.ts";

confinedTest(
  "seccomp probe: the sandbox probe loads the filter under bubblewrap once, and says so",
  async () => {
    const support = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin", "bwrap", {});
    assert.ok(support.ok, JSON.stringify(support));
    assert.deepEqual(support.seccomp, { ok: true });
  },
);

/** A `bwrap` that runs the real one, but fails as bwrap does where the kernel cannot load a seccomp filter. */
async function filterlessBwrap(dir: string): Promise<string> {
  assert.ok(SUPPORT.ok);
  const wrapper = join(dir, "bwrap");
  await Deno.writeTextFile(
    wrapper,
    `#!/bin/sh\nfor a in "$@"; do [ "$a" = --seccomp ] && { echo 'bwrap: Unable to set up system call filtering: Invalid argument' >&2; exit 1; }; done\nexec ${SUPPORT.bwrap} "$@"\n`,
  );
  await Deno.chmod(wrapper, 0o755);
  return wrapper;
}

confinedTest(
  "seccomp probe: where the filter cannot be loaded, a confined call is refused before it starts, naming --sandbox unfiltered; doctor says so",
  async () => {
    const dir = await realTempDir("toolgate_seccomp_probe_");
    const bwrap = await filterlessBwrap(dir);
    const support = await probeSandbox("/usr/bin:/bin", bwrap, {});
    assert.ok(support.ok, JSON.stringify(support));
    assert.equal(support.seccomp?.ok, false);
    assert.match(support.seccomp?.ok === false ? support.seccomp.reason : "", /system call filtering/);

    const workspace = await realTempDir("toolgate_seccomp_probe_ws_");
    const env = {
      PATH: "/usr/local/bin:/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? "/root",
      XDG_STATE_HOME: dir,
    };
    const auto = await scriptExecutor(workspace, { sandbox: "auto", bwrap, env });
    // Said once at start, before any call.
    assert.ok((await auto.startNotes()).some((note) => /seccomp filter cannot be loaded/.test(note)));
    const refused = await auto.call("script_workspace", JSON.stringify({ script: "echo ran > ran.txt" }));
    assert.equal(refused.ok, false, JSON.stringify(refused));
    if (refused.ok) return;
    assert.equal(refused.kind, "unavailable", JSON.stringify(refused));
    assert.match(refused.message, /seccomp filter cannot be loaded on this machine/);
    assert.match(refused.message, /--sandbox unfiltered/);
    assert.throws(() => Deno.statSync(join(workspace, "ran.txt")), Deno.errors.NotFound);

    // The named degraded mode runs it confined, without the filter, and says so.
    const unfiltered = await scriptExecutor(workspace, { sandbox: "unfiltered", bwrap, env });
    const ran = await unfiltered.call("script_workspace", JSON.stringify({ script: "echo ran > ran.txt" }));
    assert.ok(ran.ok, JSON.stringify(ran));
    assert.match(JSON.stringify(ran.warnings), /--sandbox unfiltered/);
    assert.equal(Deno.readTextFileSync(join(workspace, "ran.txt")), "ran\n");

    const report = await setupReport({
      env: { ...env, TOOLGATE_BWRAP: bwrap, XDG_CONFIG_HOME: dir },
      cwd: workspace,
    });
    assert.equal(report.confinement.seccomp?.loads, false, JSON.stringify(report.confinement));
    assert.ok(
      report.problems.some((p) =>
        /seccomp filter cannot be loaded/.test(p.problem) && /unfiltered/.test(p.fix)
      ),
      JSON.stringify(report.problems),
    );
  },
);
