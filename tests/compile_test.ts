// The binary `deno task compile` builds cannot be run here (denort is not downloadable), so this builds the very
// same entry with `deno bundle` and runs it with exactly the flags compile bakes in, from another folder.
import assert from "node:assert/strict";
import { join } from "node:path";
import { compileFlags, ROOT } from "../src/build/flags.ts";
import { auditDirFor } from "../src/state.ts";
import { runProgram } from "./helpers.ts";

Deno.test("the bundled entry runs validate, list and call from another folder under the baked flags", async () => {
  const out = await Deno.makeTempDir();
  const bundle = join(out, "toolgate.js");
  const built = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", join(ROOT, "src", "main.ts"), "-o", bundle],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(built.code, 0, new TextDecoder().decode(built.stderr));
  // The state folder is baked in from the building environment: here a temp one, which the run then uses.
  const state = await Deno.makeTempDir();
  const env = { XDG_STATE_HOME: state };
  const flags = await compileFlags({ ...Deno.env.toObject(), ...env });
  assert.ok(flags.includes("--no-prompt"));
  assert.ok(flags.every((flag) => !/^--allow-(read|write|run|env|net)$/.test(flag)), "every grant is scoped");
  const elsewhere = await Deno.makeTempDir();
  const run = (...args: string[]) =>
    runProgram(Deno.execPath(), [
      "run",
      ...flags,
      bundle,
      "--tools",
      join(ROOT, "tools.json"),
      "--locked",
      ...args,
    ], {
      cwd: elsewhere,
      env,
    });
  const validate = await run("validate");
  assert.equal(validate.code, 0, validate.stderr);
  assert.match(validate.stdout, /valid, \d+ tools?/);
  const list = await run("list", "--format", "names");
  assert.ok(list.stdout.split("\n").includes("get_time"), list.stderr);
  const call = await run("call", "get_time", '{"timezone":"Asia/Kolkata"}');
  assert.equal(call.code, 0, call.stderr);
  assert.match(JSON.parse(call.stdout).result.iso8601, /\+05:30$/);
  // The audit log lands in the state folder, under the workspace it ran in, never in the workspace itself.
  const auditDir = auditDirFor(env, await Deno.realPath(elsewhere));
  assert.equal((await Array.fromAsync(Deno.readDir(auditDir))).length, 1);
  assert.deepEqual(await Array.fromAsync(Deno.readDir(elsewhere)), []);
});
