// The CLI entry in-process (`run(argv, io)`): version and help wherever they are asked for, the `help` command,
// and `--` ending what counts as an option.
import assert from "node:assert/strict";
import { run, VERSION } from "../src/main.ts";
import { memoryIo } from "./support.ts";

Deno.test("main: --version works before and after a command, as the help says", async () => {
  for (const argv of [["--version"], ["call", "--version"], ["validate", "--version"], ["-version"]]) {
    const io = memoryIo();
    assert.equal(await run(argv, io), 0, argv.join(" "));
    assert.equal(io.out, `toolgate ${VERSION}\n`);
  }
});

Deno.test("main: `help` prints the global help, `help COMMAND` the command's, an unknown one is a usage error", async () => {
  const global = memoryIo();
  assert.equal(await run(["help"], global), 0);
  assert.match(global.out, /^toolgate .*\n\nUsage: toolgate <command>/);
  assert.match(global.out, /\n {2}help +this help, or a command's/);
  const call = memoryIo();
  assert.equal(await run(["help", "call"], call), 0);
  assert.match(call.out, /^toolgate call: /);
  const unknown = memoryIo();
  assert.equal(await run(["help", "nope"], unknown), 2);
  assert.match(unknown.err, /unknown command "nope"/);
});

Deno.test("main: after `--`, --help and --version are arguments, not requests", async () => {
  const io = memoryIo();
  // `permissions -- call --help` asks for the set of `call --help`, not for help.
  assert.equal(await run(["permissions", "--", "call", "--help"], io), 0, io.err);
  assert.match(io.out, /^--no-prompt /);
});
