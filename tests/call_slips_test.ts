// `toolgate call` typed by a person: a misspelt tool name gets the nearest names and arguments that are not JSON
// get their line and column, on stderr; the envelope on stdout (what a model would get) stays as it was.
import assert from "node:assert/strict";
import { hasStackTrace, runCli, tempDir, writeManifest } from "./support.ts";

const TOOLS = ["get_time", "get_date", "fs_stat"].map((name) => ({
  name,
  command: [`./tools/bin/${name}`],
  readOnly: true,
  permissions: "none",
}));

Deno.test("call: an unknown tool name lists the nearest names on stderr, and the envelope names none", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: TOOLS }, TOOLS.map((t) => t.name));
  const typo = await runCli(["call", "get_tme", "{}", "--tools", path, "--sandbox", "off", "--no-audit"]);
  assert.equal(typo.code, 1);
  assert.ok(!hasStackTrace(typo.stderr), typo.stderr);
  const envelope = JSON.parse(typo.stdout);
  assert.equal(envelope.kind, "tool_not_found");
  assert.equal(envelope.message, 'There is no tool named "get_tme".', "a model is given no near names");
  assert.match(typo.stderr, /toolgate: no tool is named "get_tme"; did you mean get_time\?\n$/);

  const far = await runCli(["call", "zzzzzz", "{}", "--tools", path, "--sandbox", "off", "--no-audit"]);
  assert.match(far.stderr, /no tool is named "zzzzzz"; the tools are get_time, get_date, fs_stat\n$/);
});

Deno.test("call: arguments that are not JSON are named by line and column on stderr", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, { tools: TOOLS }, TOOLS.map((t) => t.name));
  const cases: [string, RegExp][] = [
    ['{"timezone": "UTC",}', /line 1, column 20: property name expected/],
    ['{"timezone":\n  UTC}', /line 2, column 3: /],
    ["{'timezone': 'UTC'}", /line 1, column 2: /],
  ];
  for (const [args, where] of cases) {
    const result = await runCli([
      "call",
      "get_time",
      args,
      "--tools",
      path,
      "--sandbox",
      "off",
      "--no-audit",
    ]);
    assert.equal(result.code, 1, result.stderr);
    assert.equal(JSON.parse(result.stdout).kind, "invalid_args");
    assert.match(result.stderr, /toolgate: the arguments are not JSON: /);
    assert.match(result.stderr, where, args);
  }
  // Valid JSON that breaks the schema gets no such line.
  const wrong = await runCli(["call", "get_time", "[1]", "--tools", path, "--sandbox", "off", "--no-audit"]);
  assert.equal(JSON.parse(wrong.stdout).kind, "invalid_args");
  assert.doesNotMatch(wrong.stderr, /not JSON/);
});
