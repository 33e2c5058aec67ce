/**
 * The CLI as a user meets it: exit codes, stdout and stderr. `validate` runs the real `src/main.ts` as a subprocess
 * under scoped grants; listing, usage errors, help and the version run in-process through `main.run`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import denoJson from "../deno.json" with { type: "json" };
import {
  hasStackTrace,
  type ProcessResult,
  REPO,
  runCli,
  runInProcess,
  runToolgate,
  tempDir,
  writeFiles,
  writeManifest,
} from "./support.ts";

const TIME_TOOL = {
  name: "get_time",
  description: "Get the current time",
  schema: { type: "object", properties: { timezone: { type: "string" } }, required: ["timezone"] },
  command: ["./tools/bin/get_time"],
  readOnly: true,
};
const ECHO_TOOL = { name: "echo", command: ["./tools/bin/echo", "-n"] };

/** Asserts what every run must hold: the expected exit code, and no stack trace anywhere. */
function expectExit(result: ProcessResult, code: number): void {
  assert.equal(result.code, code, `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  assert.ok(!hasStackTrace(result.stderr), result.stderr);
  assert.ok(!hasStackTrace(result.stdout), result.stdout);
}

/** Asserts a usage error: exit 2, the message, and a pointer at the right `--help`. */
function expectUsage(result: ProcessResult, message: string, help: string): void {
  expectExit(result, 2);
  assert.equal(result.stdout, "");
  assert.equal(result.stderr, `toolgate: ${message}\nSee \`${help}\`.\n`);
}

// --- validate -----------------------------------------------------------------------------------------------------

Deno.test("validate: a valid manifest exits 0 with a one-line summary", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: [TIME_TOOL, ECHO_TOOL] }, ["get_time", "echo"]);
  const result = await runCli(["validate", "--tools", path]);
  expectExit(result, 0);
  assert.equal(result.stdout, `${path}: valid, 2 tools\n`);
  assert.equal(result.stderr, "");
});

Deno.test("validate: one tool and zero tools read right", async () => {
  await using dir = await tempDir();
  const one = await writeManifest(join(dir.path, "one"), { tools: [TIME_TOOL] }, ["get_time"]);
  assert.equal((await runCli(["validate", "--tools", one])).stdout, `${one}: valid, 1 tool\n`);
  const zero = await writeManifest(join(dir.path, "zero"), {});
  assert.equal((await runCli(["validate", "--tools", zero])).stdout, `${zero}: valid, 0 tools\n`);
});

Deno.test("validate: an invalid manifest exits 1 with every error on stderr, in order", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, {
    tools: [
      { name: "a", command: [] },
      { command: ["./tools/bin/b"] },
      { name: "a", command: ["./tools/bin/../hack"], extra: 1 },
    ],
  });
  const result = await runCli(["validate", "--tools", path]);
  expectExit(result, 1);
  assert.equal(result.stdout, "");
  assert.equal(
    result.stderr,
    [
      'tool[0] "a": command must have at least program name',
      "tool[1]: name is required",
      'tool[2] "a": duplicate name',
      'tool[2] "a": command[0] escapes ./tools/bin after normalization (got "./tools/bin/../hack" -> "./tools/hack")',
      'warning: tool[2] "a": unknown field "extra" (ignored)',
      "",
    ].join("\n"),
  );
});

Deno.test("validate: compiles every schema, so an unresolvable $ref fails it", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, {
    tools: [{ name: "x", command: ["./tools/bin/x"], schema: { $ref: "#/definitions/missing" } }],
  }, ["x"]);
  const result = await runCli(["validate", "--tools", path]);
  expectExit(result, 1);
  assert.equal(
    result.stderr,
    `tool[0] "x": schema is invalid: can't resolve reference #/definitions/missing from id #\n`,
  );
});

Deno.test("validate: warnings go to stderr and do not fail a valid manifest", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { version: 1, tools: [{ ...TIME_TOOL, note: "x" }] }, [
    "get_time",
  ]);
  const result = await runCli(["validate", "--tools", path]);
  expectExit(result, 0);
  assert.equal(result.stdout, `${path}: valid, 1 tool\n`);
  assert.equal(
    result.stderr,
    `warning: ${path}: unknown field "version" (ignored)\nwarning: tool[0] "get_time": unknown field "note" (ignored)\n`,
  );
});

Deno.test("validate: a JSONC syntax error exits 1 with PATH:LINE:COL", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, '{\n  "tools": [\n    {"name": "a" "command": []}\n  ]\n}\n');
  const result = await runCli(["validate", "--tools", path]);
  expectExit(result, 1);
  assert.equal(result.stderr, `${path}:3:18: comma expected\n`);
});

Deno.test("validate: a missing manifest exits 1 and says so", async () => {
  await using dir = await tempDir();
  const path = join(dir.path, "absent.json");
  const result = await runCli(["validate", "--tools", path]);
  expectExit(result, 1);
  assert.equal(result.stderr, `${path}: cannot read the manifest: no such file\n`);
});

Deno.test("validate: absolute commands need --allow-absolute-commands", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: [{ name: "abs", command: ["/bin/echo"] }] });
  const refused = await runCli(["validate", "--tools", path]);
  expectExit(refused, 1);
  assert.equal(
    refused.stderr,
    'tool[0] "abs": absolute command[0] "/bin/echo" is refused; pass --allow-absolute-commands to allow it ' +
      "(meant for tests)\n",
  );
  const allowed = await runCli(["validate", "--tools", path, "--allow-absolute-commands"]);
  expectExit(allowed, 0);
});

Deno.test("validate: a program that is missing, not executable or not a file is an error naming the tool and the path, among the others", async () => {
  await using dir = await tempDir();
  const bin = join(dir.path, "tools", "bin");
  const path = await writeManifest(dir.path, {
    tools: [
      TIME_TOOL,
      { name: "fetch", command: ["./tools/bin/fetch"] },
      { name: "plain", command: ["./tools/bin/plain"] },
      { name: "folder", command: ["./tools/bin/folder"] },
      { name: "get_time", command: ["./tools/bin/get_time"] },
      { name: "gone", command: ["/nonexistent/toolgate-test/gone"] },
    ],
  }, ["get_time"]);
  await Deno.writeTextFile(join(bin, "plain"), "#!/bin/sh\n", { mode: 0o644 });
  await Deno.chmod(join(bin, "plain"), 0o644);
  await Deno.mkdir(join(bin, "folder"));
  // As a user runs it: the launcher, under the least permission set (which must let it look at /nonexistent).
  const result = await runToolgate(["validate", "--tools", path, "--allow-absolute-commands"], dir.path);
  expectExit(result, 1);
  assert.equal(result.stdout, "");
  assert.equal(
    result.stderr,
    [
      `tool[1] "fetch": the program ${join(bin, "fetch")} does not exist`,
      `tool[2] "plain": the program ${join(bin, "plain")} is not executable (chmod +x it)`,
      `tool[3] "folder": the program ${join(bin, "folder")} is a directory, not a program`,
      'tool[4] "get_time": duplicate name',
      'tool[5] "gone": the program /nonexistent/toolgate-test/gone does not exist',
      "",
    ].join("\n"),
  );
});

Deno.test("validate and call agree on a missing program: validate names it, call answers unavailable naming it and validate", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: [TIME_TOOL, { ...ECHO_TOOL, readOnly: true }] }, [
    "get_time",
  ]);
  const program = join(dir.path, "tools", "bin", "echo");
  const validate = await runCli(["validate", "--tools", path]);
  expectExit(validate, 1);
  assert.equal(validate.stderr, `tool[1] "echo": the program ${program} does not exist\n`);
  // The other commands load the manifest: one missing program does not take the other tools down.
  const call = await runToolgate(["call", "echo", "{}", "--tools", path, "--sandbox", "off"], dir.path);
  expectExit(call, 1);
  const envelope = JSON.parse(call.stdout);
  assert.equal(envelope.kind, "unavailable");
  assert.equal(envelope.retryable, false);
  assert.ok(envelope.message.includes(`the program ${program} did not exist`), envelope.message);
  assert.match(envelope.message, /`toolgate validate`/);
  const other = await runToolgate(
    ["call", "get_time", '{"timezone":"UTC"}', "--tools", path, "--sandbox", "off"],
    dir.path,
  );
  expectExit(other, 0);
});

// --- list ---------------------------------------------------------------------------------------------------------

Deno.test("list: OpenAI definitions by default, as JSON on stdout", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: [TIME_TOOL, ECHO_TOOL] });
  const result = await runInProcess(["list", "--tools", path]);
  expectExit(result, 0);
  assert.equal(result.stderr, "");
  assert.deepEqual(JSON.parse(result.stdout), [
    {
      type: "function",
      function: { name: "get_time", description: "Get the current time", parameters: TIME_TOOL.schema },
    },
    { type: "function", function: { name: "echo" } },
  ]);
  const explicit = await runInProcess(["list", "--tools", path, "--format", "openai"]);
  assert.equal(explicit.stdout, result.stdout);
});

Deno.test("list --format anthropic and mcp", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: [TIME_TOOL, ECHO_TOOL] });
  const anthropic = await runInProcess(["list", "--tools", path, "--format", "anthropic"]);
  expectExit(anthropic, 0);
  assert.deepEqual(JSON.parse(anthropic.stdout), [
    { name: "get_time", description: "Get the current time", input_schema: TIME_TOOL.schema },
    { name: "echo", input_schema: { type: "object", properties: {} } },
  ]);
  const mcp = await runInProcess(["list", "--tools", path, "--format=mcp"]);
  expectExit(mcp, 0);
  assert.deepEqual(JSON.parse(mcp.stdout), [
    {
      name: "get_time",
      description: "Get the current time",
      inputSchema: TIME_TOOL.schema,
      annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
      execution: { taskSupport: "optional" },
    },
    {
      name: "echo",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: false, openWorldHint: false },
      execution: { taskSupport: "optional" },
    },
  ]);
});

Deno.test("list --format names prints one name a line", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: [TIME_TOOL, ECHO_TOOL] });
  const result = await runInProcess(["list", "--tools", path, "--format", "names"]);
  expectExit(result, 0);
  assert.equal(result.stdout, "get_time\necho\n");
});

Deno.test("list: an invalid manifest exits 1 with its errors and prints no definitions", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: [{ name: "x", command: ["echo"] }] });
  const result = await runInProcess(["list", "--tools", path]);
  expectExit(result, 1);
  assert.equal(result.stdout, "");
  assert.equal(result.stderr, 'tool[0] "x": relative command[0] must start with ./tools/bin/\n');
});

// --- where the manifest comes from ------------------------------------------------------------------------------

Deno.test("the manifest defaults to ./tools.json in the working directory", async () => {
  await using dir = await tempDir();
  await writeManifest(dir.path, { tools: [ECHO_TOOL] });
  const result = await runInProcess(["list", "--format", "names"], { cwd: dir.path });
  expectExit(result, 0);
  assert.equal(result.stdout, "echo\n");
});

Deno.test("TOOLGATE_TOOLS names the manifest; --tools wins over it", async () => {
  await using dir = await tempDir();
  const fromEnv = await writeManifest(join(dir.path, "env"), { tools: [ECHO_TOOL] });
  const fromFlag = await writeManifest(join(dir.path, "flag"), { tools: [TIME_TOOL] });
  const env = { TOOLGATE_TOOLS: fromEnv };
  const viaEnv = await runInProcess(["list", "--format", "names"], { cwd: dir.path, env });
  expectExit(viaEnv, 0);
  assert.equal(viaEnv.stdout, "echo\n");
  const viaFlag = await runInProcess(["list", "--format", "names", "--tools", fromFlag], {
    cwd: dir.path,
    env,
  });
  assert.equal(viaFlag.stdout, "get_time\n");
});

Deno.test("a relative --tools resolves against the working directory", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(join(dir.path, "sub"), { tools: [ECHO_TOOL] }, ["echo"]);
  const result = await runInProcess(["validate", "--tools", "sub/tools.json"], { cwd: dir.path });
  expectExit(result, 0);
  assert.equal(result.stdout, `${path}: valid, 1 tool\n`);
});

Deno.test("relative commands resolve against the manifest's folder when the CLI runs from another folder", async () => {
  await using dir = await tempDir();
  // The manifest's folder holds a real program; the cwd holds a tools/bin/x that escapes through a symlink.
  const manifestDir = join(dir.path, "project");
  const cwd = join(dir.path, "elsewhere");
  await writeFiles(dir.path, { "project/tools/bin/x": "#!/bin/sh\n", "outside/x": "#!/bin/sh\n" });
  await Deno.chmod(join(manifestDir, "tools/bin/x"), 0o755);
  await Deno.mkdir(join(cwd, "tools/bin"), { recursive: true });
  await Deno.symlink(join(dir.path, "outside/x"), join(cwd, "tools/bin/x"));
  const manifest = { tools: [{ name: "x", command: ["./tools/bin/x"] }] };
  await writeManifest(manifestDir, manifest);
  await writeManifest(cwd, manifest);

  const fromElsewhere = await runInProcess(["validate", "--tools", join(manifestDir, "tools.json")], { cwd });
  expectExit(fromElsewhere, 0);
  // And the other way round: the manifest whose own tools/bin/x escapes is refused from any cwd.
  const escaping = await runInProcess(["validate", "--tools", join(cwd, "tools.json")], { cwd: manifestDir });
  expectExit(escaping, 1);
  assert.match(
    escaping.stderr,
    /^tool\[0\] "x": command\[0\] "\.\/tools\/bin\/x" resolves outside \.\/tools\/bin/,
  );
});

// --- usage errors, help, version ----------------------------------------------------------------------------------

Deno.test("an unknown command exits 2, names it, and points at --help", async () => {
  expectUsage(await runInProcess(["frobnicate"]), 'unknown command "frobnicate"', "toolgate --help");
});

Deno.test("an unknown flag exits 2, names it, and points at the command's --help", async () => {
  expectUsage(
    await runInProcess(["validate", "--bogus"]),
    "unknown option --bogus",
    "toolgate validate --help",
  );
  expectUsage(await runInProcess(["list", "-bogus"]), "unknown option -bogus", "toolgate list --help");
  expectUsage(await runInProcess(["list", "-x"]), "unknown option -x", "toolgate list --help");
});

Deno.test("a missing value exits 2 and names the option", async () => {
  expectUsage(
    await runInProcess(["validate", "--tools"]),
    "option --tools needs a value",
    "toolgate validate --help",
  );
  expectUsage(
    await runInProcess(["list", "--format"]),
    "option --format needs a value",
    "toolgate list --help",
  );
  expectUsage(
    await runInProcess(["list", "--tools", "--format", "names"]),
    "option --tools needs a value (a value that starts with a dash is written --tools=-VALUE)",
    "toolgate list --help",
  );
});

Deno.test("a bad --format exits 2 and lists the good ones", async () => {
  expectUsage(
    await runInProcess(["list", "--format", "xml"]),
    '--format must be one of openai, anthropic, mcp, names (got "xml")',
    "toolgate list --help",
  );
});

Deno.test("a value given to a flag that takes none, or a stray argument, exits 2", async () => {
  expectUsage(
    await runInProcess(["validate", "--allow-absolute-commands=yes"]),
    "option --allow-absolute-commands takes no value",
    "toolgate validate --help",
  );
  expectUsage(
    await runInProcess(["validate", "tools.json"]),
    'unexpected argument "tools.json"',
    "toolgate validate --help",
  );
  expectUsage(await runInProcess(["list", "names"]), 'unexpected argument "names"', "toolgate list --help");
});

Deno.test("--help shows the global help and exits 0", async () => {
  for (const flag of ["--help", "-h", "-help"]) {
    const result = await runInProcess([flag]);
    expectExit(result, 0);
    assert.match(result.stdout, /^Usage: toolgate <command> \[options\]$/m);
    assert.match(result.stdout, /^ {2}validate /m);
    assert.match(result.stdout, /^ {2}list /m);
    assert.match(result.stdout, /--tools PATH/);
    assert.equal(result.stderr, "");
  }
});

Deno.test("every command has its own --help, exit 0", async () => {
  // Every command the global help lists, so that a command added later is held to the same rule.
  const global = (await runInProcess(["--help"])).stdout;
  const section = global.slice(global.indexOf("Commands:\n") + "Commands:\n".length);
  const commands = section.slice(0, section.indexOf("\n\n")).split("\n").map((line) =>
    line.trim().split(/\s+/)[0]
  );
  assert.ok(commands.includes("validate") && commands.includes("list"), global);
  const spellings = (command: string) =>
    command === "validate" || command === "list"
      ? [[command, "--help"], [command, "-h"], ["--help", command]]
      : [[command, "--help"]];
  for (const command of commands) {
    for (const args of spellings(command)) {
      const result = await runInProcess(args);
      expectExit(result, 0);
      assert.ok(result.stdout.startsWith(`toolgate ${command}: `), result.stdout);
      assert.match(result.stdout, new RegExp(`^Usage: toolgate \\[?${command}\\b`, "m"));
      assert.match(result.stdout, /Exit codes: 0 success, 1 failure, 2 usage error\./);
    }
  }
  const list = await runInProcess(["list", "--help"]);
  assert.match(list.stdout, /--format FORMAT/);
});

Deno.test("--version prints the version from deno.json", async () => {
  for (const flag of ["--version", "-version"]) {
    const result = await runInProcess([flag]);
    expectExit(result, 0);
    assert.equal(result.stdout, `toolgate ${denoJson.version}\n`);
  }
});

Deno.test("agentcli's single-dash spellings work: -tools PATH, -tools=PATH, -format", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: [TIME_TOOL, ECHO_TOOL] }, ["get_time", "echo"]);
  for (
    const args of [
      ["-tools", path, "list", "-format", "names"],
      ["list", "-tools", path, "-format", "names"],
      ["list", `-tools=${path}`, "-format=names"],
      ["--tools", path, "list", "--format", "names"],
    ]
  ) {
    const result = await runInProcess(args);
    expectExit(result, 0);
    assert.equal(result.stdout, "get_time\necho\n", args.join(" "));
  }
  const validate = await runInProcess(["-tools", path, "validate", "-allow-absolute-commands"]);
  expectExit(validate, 0);
});

Deno.test("the repository's own tools.json validates and lists get_time from the repository root", async () => {
  const validate = await runInProcess(["validate"], { cwd: REPO });
  expectExit(validate, 0);
  assert.match(
    validate.stdout,
    new RegExp(`^${RegExp.escape(join(REPO, "tools.json"))}: valid, \\d+ tools?\n$`),
  );
  const list = await runInProcess(["list", "--format", "names"], { cwd: REPO });
  expectExit(list, 0);
  assert.ok(list.stdout.split("\n").includes("get_time"), list.stdout);
});
