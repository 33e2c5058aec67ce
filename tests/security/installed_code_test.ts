// The installed command's code (the bundle `deno task install` builds into the data folder) is toolgate's own: a
// tool whose workspace holds it (the home folder) can neither change, replace nor move it, so the next run of the
// command never runs the tool's code unconfined.
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO, runProgram } from "../support.ts";
import { confinedTest, realTempDir, SCRIPT_FIXTURE, snapshot } from "./helpers.ts";

confinedTest(
  "a tool cannot change the installed bundle, even when its workspace is the home folder",
  async () => {
    const home = await realTempDir("toolgate_installed_home_");
    const env = {
      HOME: home,
      XDG_DATA_HOME: join(home, ".local", "share"),
      XDG_STATE_HOME: join(home, "state"),
    };
    // Installed with the runtime's own cache (a HOME of its own would make Deno fetch every package again).
    const installed = await runProgram(
      Deno.execPath(),
      ["task", "-q", "install", "--bin", join(home, ".local", "bin")],
      { cwd: REPO, env: { XDG_DATA_HOME: env.XDG_DATA_HOME, XDG_STATE_HOME: env.XDG_STATE_HOME } },
    );
    assert.equal(installed.code, 0, installed.stderr);
    const bundle = join(home, ".local", "share", "toolgate", "bundle");
    const before = await snapshot(bundle);
    assert.ok(before.has("launch.js") && before.has("main.js"), "the bundle is there");
    const attack = [
      "echo pwned >> .local/share/toolgate/bundle/launch.js",
      "echo pwned > .local/share/toolgate/bundle/main.js",
      "rm -f .local/share/toolgate/bundle/main.js",
      "mv .local/share/toolgate/bundle .local/share/toolgate/moved",
      "echo legit > legit.txt",
    ].join("; ");
    // A project's own tool that may write its workspace (a built-in one's sandbox binds toolgate's code read-only
    // anyway): `call` is the person's own command, so it runs, confined to the home folder.
    const call = await runProgram(
      join(home, ".local", "bin", "toolgate"),
      ["call", "--tools", SCRIPT_FIXTURE, "script_workspace", JSON.stringify({ script: attack })],
      { cwd: home, env },
    );
    assert.equal(call.code, 0, call.stderr);
    assert.equal(JSON.parse(call.stdout).ok, true, call.stdout);
    assert.equal(
      await Deno.readTextFile(join(home, "legit.txt")),
      "legit\n",
      "the rest of the home stays writable",
    );
    assert.deepEqual(await snapshot(bundle), before);
  },
);
