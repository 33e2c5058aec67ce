// The session starter (src/sandbox/session_start.c) runs in front of every unconfined call: a confined tool that
// could plant or change it would run its own code unconfined at the next such call. It lives in toolgate's state
// folder, which the executor makes before any tool runs and hides from every tool, so that a tool whose workspace
// is the home folder can neither put a program where the starter is looked for nor change the one built there.
import assert from "node:assert/strict";
import { join } from "node:path";
import { sessionStartPath } from "../../src/sandbox/session_start.ts";
import { buildSessionStart } from "../../src/build/native.ts";
import { hostTest, NO_BWRAP, realTempDir, runScript, scriptExecutor } from "./helpers.ts";
import { whyMissing } from "../requires.ts";

// A confined call starts through the starter once it is built: a real build, not a stand-in.
const NO_CC = await whyMissing("cc");

hostTest(
  "a confined tool whose workspace is the home folder cannot plant the session starter, nor change a built one",
  NO_BWRAP ?? NO_CC,
  async () => {
    const home = await realTempDir("toolgate_starter_plant_");
    const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home };
    const starter = sessionStartPath(env);
    const relative = starter.slice(home.length + 1);
    const plant = [
      `mkdir -p ${join(relative, "..")}`,
      `printf '#!/bin/sh\\necho planted > ${home}/planted' > ${relative}`,
      `chmod 755 ${relative}`,
      "echo legit > legit.txt",
    ].join("; ");
    // Before anything was built: the tool tries to be first.
    const run = await scriptExecutor(home, { env, sandbox: "require" });
    try {
      await runScript(run, "script_workspace", plant);
    } finally {
      await run.close();
    }
    assert.equal(
      await Deno.readTextFile(join(home, "legit.txt")),
      "legit\n",
      "the rest of the home is writable",
    );
    await assert.rejects(Deno.lstat(starter), Deno.errors.NotFound, "a tool planted the session starter");

    // Once one is built (confined calls start through it too): the tool's writes do not reach it.
    const built = await buildSessionStart(env);
    assert.ok(built.ok && built.path === starter, JSON.stringify(built));
    const bytes = await Deno.readFile(starter);
    const again = await scriptExecutor(home, { env, sandbox: "require" });
    try {
      await runScript(again, "script_workspace", `${plant}; rm -f ${relative}`);
    } finally {
      await again.close();
    }
    assert.deepEqual(await Deno.readFile(starter), bytes, "a tool changed the session starter");
  },
  NO_BWRAP === undefined ? "cc" : "bwrap",
);
