/** toolgate as a library: everything a Deno program needs comes from `src/mod.ts`, and works. */
import assert from "node:assert/strict";
import { join } from "node:path";
import * as toolgate from "../src/mod.ts";
import {
  type Envelope,
  Executor,
  exportTools,
  failure,
  isError,
  isSuccess,
  loadManifest,
  Policy,
  serialize,
  success,
  successPayload,
  truncateForModel,
  validateManifest,
} from "../src/mod.ts";
// One format at a time is the exports module's own business; the library hands out exportTools.
import { toAnthropic, toMcp, toOpenAI } from "../src/manifest/tool_definitions.ts";
import { loadSchemaEngine } from "../src/manifest/schema.ts";
import { FIXTURES } from "./support.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

const MANIFEST = join(FIXTURES, "mcp", "tools.json");

/** An executor over the fixture manifest, working in a temp folder removed with it. */
async function executor(): Promise<{ exec: Executor; cwd: string } & AsyncDisposable> {
  const loaded = await loadManifest(MANIFEST);
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  const cwd = await Deno.makeTempDir({ prefix: "toolgate_lib_" });
  const exec = new Executor({
    manifest: loaded.manifest,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
    cwd,
    auditDir: null,
    sandbox: "off",
  });
  return { exec, cwd, [Symbol.asyncDispose]: () => Deno.remove(cwd, { recursive: true }) };
}

Deno.test("mod.ts exports the loader, the executor, the policy, the scheduler, the exports and the contract, and no more", () => {
  const expected = [
    // manifest
    "loadManifest",
    "validateManifest",
    // executor
    "Executor",
    "EXECUTOR_DEFAULTS",
    "SANDBOX_MODES",
    // the run's redaction of secrets, for a caller's own output (issue 17)
    "redactionFor",
    // exports
    "exportTools",
    "EXPORT_FORMATS",
    // the approval policy and the scheduler
    "Policy",
    "OWN_COMMAND",
    "Scheduler",
    "CallLimit",
    // a person's stop (issue 14)
    "UserStop",
    // traces (issue 29): an executor's tracing, from the OpenTelemetry variables, or none
    "openTracing",
    "NO_TRACING",
    // contract
    "FAILURE_KINDS",
    "success",
    "failure",
    "serialize",
    "asEnvelope",
    "isError",
    "isSuccess",
    "successPayload",
    "failureMessage",
    "MODEL_TEXT_LIMIT",
    "truncateForModel",
    // denials the model can read (issue 41)
    "DENIAL_KINDS",
    "withDenials",
  ];
  assert.deepEqual(Object.keys(toolgate).sort(), [...expected].sort());
});

Deno.test("load a manifest and run a call through the executor", async () => {
  await using ctx = await executor();
  const envelope = await ctx.exec.call("echo", '{"text":"from a library"}');
  assert.deepEqual(envelope, success({ echo: { text: "from a library" } }, { tool: "echo" }));
  assert.equal(isSuccess(serialize(envelope)), true);
  assert.deepEqual(successPayload(serialize(envelope)), { echo: { text: "from a library" } });
});

Deno.test("the executor's pipeline step by step: prepare, the caller's verdict, run", async () => {
  await using ctx = await executor();
  const { exec } = ctx;
  const bad = await exec.prepare("echo", "{}");
  assert.equal(bad.ok, false);
  assert.equal(!bad.ok && bad.envelope.kind, "invalid_args");

  const prepared = await exec.prepare("note", '{"text":"x"}');
  assert.ok(prepared.ok);
  assert.equal(prepared.call.tool.readOnly, false);
  const refused: Envelope = await exec.refuse(prepared.call, failure("user_denied", "Not today."));
  assert.equal(isError(serialize(refused)), true);

  const ran = await exec.run(prepared.call);
  assert.deepEqual(ran.ok && ran.result, { written: true });
  assert.equal(await Deno.readTextFile(join(ctx.cwd, "notes")), '{"text":"x"}\n');

  const unknown = await exec.call("missing", "{}");
  assert.equal(!unknown.ok && unknown.kind, "tool_not_found");

  const cancelled = await exec.call("tree", "{}", { signal: AbortSignal.abort() });
  assert.equal(!cancelled.ok && cancelled.cancelled, true);
});

Deno.test("a library caller that runs calls a model chose passes the one policy: writes and egress need approval", async () => {
  await using ctx = await executor();
  const { exec } = ctx;
  const policy = new Policy();
  const write = await exec.call("note", '{"text":"x"}', { policy });
  assert.equal(!write.ok && write.kind, "rejected");
  await assert.rejects(Deno.stat(join(ctx.cwd, "notes")), Deno.errors.NotFound);
  // Read-only, but its profile reaches the network: egress needs approval too.
  const egress = await exec.call("net_echo", "{}", { policy });
  assert.equal(!egress.ok && egress.kind, "rejected");
  assert.equal(
    (await exec.call("echo", '{"text":"free"}', { policy })).ok,
    true,
    "read-only and local: free",
  );
  const asked: string[] = [];
  const person = new Policy({ ask: (question) => (asked.push(question.tool), Promise.resolve("yes")) });
  assert.equal((await exec.call("note", '{"text":"y"}', { policy: person })).ok, true);
  assert.deepEqual(asked, ["note"]);
  // Without a policy, executor.call is the caller's own command, as `toolgate call`: approved by definition.
  assert.equal((await exec.call("note", '{"text":"z"}')).ok, true);
});

Deno.test("the exports: OpenAI, Anthropic and MCP shapes of the same tools", async () => {
  const loaded = await loadManifest(MANIFEST);
  assert.ok(loaded.ok);
  const { manifest } = loaded;
  assert.deepEqual(exportTools(manifest, "names"), manifest.tools.map((tool) => tool.name));
  const echo = manifest.byName.get("echo")!;
  assert.equal(toOpenAI(echo).function.name, "echo");
  assert.deepEqual(toAnthropic(echo).input_schema, echo.schema);
  assert.deepEqual(toMcp(echo).annotations, {
    readOnlyHint: true,
    destructiveHint: false,
    openWorldHint: false,
  });
  assert.equal(toMcp(manifest.byName.get("net_echo")!).annotations.openWorldHint, true);
  assert.equal((exportTools(manifest, "mcp") as unknown[]).length, manifest.tools.length);
});

Deno.test("validateManifest takes a manifest that never was a file", () => {
  const result = validateManifest(
    { tools: [{ name: "bad name", command: ["./tools/bin/x"] }] },
    "/srv/tools.json",
  );
  assert.equal(result.ok, false);
  assert.match(!result.ok ? result.errors[0] : "", /^tool\[0\] "bad name": name must match/);
  assert.equal(truncateForModel("short"), "short");
});
