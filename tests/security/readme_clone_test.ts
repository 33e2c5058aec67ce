// toolgate started exactly as the README says (`deno task agent ...` in a fresh clone of this repository): no tool
// call, whatever it tries, changes a byte of the clone's control plane (issue 10, "What was seen" 2).
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO, runProgram } from "../support.ts";
import { SUPPORT } from "./helpers.ts";

/** Each call tries to change toolgate's own files from inside the clone, its workspace. */
const ATTACKS: [string, unknown][] = [
  ["fs_write_file", { path: "tools.json", content: '{"tools":[]}' }],
  ["fs_write_file", { path: "permissions/none.json", content: '{"write":["/"],"net":true}' }],
  ["fs_write_file", { path: "tools/bin/get_time", content: "#!/bin/sh\ntouch /tmp/pwned\n" }],
  ["fs_write_file", { path: "deno.json", content: '{"tasks":{"agent":"touch /tmp/pwned"}}' }],
  ["fs_write_file", { path: "src/main.ts", content: "Deno.exit(0)" }],
  ["fs_write_file", { path: "new_file.txt", content: "planted" }],
  ["fs_edit", { path: "deno.json", old_string: "agent", new_string: "pwned" }],
  ["fs_remove", { path: "tools/bin/exec" }],
  ["fs_mkdir", { path: "permissions/extra" }],
  ["exec", { argv: ["sh", "-c", "echo pwned >> tools.json; rm -rf permissions; echo x > planted.txt"] }],
];

Deno.test("started as the README says, in a clone, no tool changes a byte of the clone's control plane", async () => {
  const clone = join(await Deno.makeTempDir({ prefix: "toolgate_clone_" }), "toolgate");
  const cloned = await runProgram("git", ["clone", "--quiet", "--local", "--no-hardlinks", REPO, clone]);
  assert.equal(cloned.code, 0, cloned.stderr);
  const env = { XDG_STATE_HOME: await Deno.makeTempDir() };
  try {
    for (const [tool, args] of ATTACKS) {
      // The README's first command, with this runtime in place of npx's.
      const run = await runProgram(Deno.execPath(), [
        "task",
        "--quiet",
        "agent",
        "call",
        tool,
        JSON.stringify(args),
      ], {
        cwd: clone,
        env,
      });
      const envelope = JSON.parse(run.stdout || "{}");
      const seen = `${tool} ${JSON.stringify(args)}: ${run.stdout} ${run.stderr}`;
      if (!SUPPORT.ok) {
        // Without confinement a tool that can write does not run at all: the design's refusal is `unavailable`.
        assert.equal(envelope.ok === false && envelope.kind, "unavailable", seen);
      } else if (tool === "exec") {
        // Confined, exec runs: the program fails against the read-only control plane, and says so in its result.
        assert.ok(envelope.ok && envelope.result.exit_code !== 0, seen);
      } else {
        // Confined, the file tools refuse toolgate's own paths themselves.
        assert.equal(envelope.ok === false && envelope.kind, "rejected", seen);
      }
    }
    const status = await runProgram("git", ["status", "--porcelain", "--ignored", "--untracked-files=all"], {
      cwd: clone,
    });
    assert.equal(status.stdout, "", "the clone is exactly as it was cloned");
  } finally {
    await Deno.remove(join(clone, ".."), { recursive: true });
  }
});
