/** Tools disclosed on demand: stubs, the first call answered with the definition, alwaysLoad, resumed runs. */
import assert from "node:assert/strict";
import { calledTools, STUB_PARAMETERS, summaryOf, ToolDisclosure } from "../../src/agent/lazy_tools.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { AGENT_TOOLS } from "./run_cli.ts";

const loaded = await loadManifest(AGENT_TOOLS);
if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
const manifest = loaded.manifest;
const call = (name: string) => ({
  id: `c_${name}`,
  type: "function" as const,
  function: { name, arguments: "{}" },
});

Deno.test("lazy: a summary is the description's first sentence or line, cut to 100 characters", () => {
  assert.equal(summaryOf("Sleep for a while. Then report."), "Sleep for a while.");
  assert.equal(summaryOf("List files\nrecursively, too."), "List files");
  assert.equal(summaryOf("Version 1.5 of it, no full stop"), "Version 1.5 of it, no full stop");
  const long = summaryOf("word ".repeat(60));
  assert.equal(long?.length, 100);
  assert.ok(long?.endsWith("…"));
  assert.equal(summaryOf("   "), undefined);
  assert.equal(summaryOf(undefined), undefined);
});

Deno.test("lazy: stubs first, in the manifest's order; an alwaysLoad tool in full from the start", () => {
  const disclosure = new ToolDisclosure(manifest, { lazy: true });
  const tools = disclosure.definitions();
  assert.deepEqual(tools.map((t) => t.function.name), manifest.tools.map((t) => t.name));
  const nap = tools.find((t) => t.function.name === "nap")!;
  assert.deepEqual(nap, {
    type: "function",
    function: {
      name: "nap",
      description: "Sleep for a while and report when the sleep started and ended.",
      parameters: STUB_PARAMETERS,
    },
  });
  const echo = tools.find((t) => t.function.name === "echo")!;
  assert.deepEqual(
    Object.keys(echo.function.parameters?.properties as object),
    ["value"],
    "alwaysLoad: in full",
  );
  assert.equal(disclosure.stubs, manifest.tools.length - 1);
  assert.equal(disclosure.isStub("echo"), false);
  assert.equal(
    disclosure.isStub("no_such_tool"),
    false,
    "an unknown tool is not a stub: the executor answers it",
  );
});

Deno.test("lazy: the first call of a stub is answered with its definition, not run, and it is in full from then on", () => {
  const disclosure = new ToolDisclosure(manifest, { lazy: true });
  assert.equal(disclosure.isStub("nap"), true);
  const envelope = disclosure.disclose(call("nap"));
  assert.equal(envelope.ok, false);
  assert.equal(envelope.kind, "invalid_args");
  assert.equal(envelope.retryable, true);
  assert.equal(envelope.tool, "nap");
  assert.equal(envelope.not_run, true);
  assert.match(envelope.message, /nap was not run.*call nap again/);
  const definition = envelope.definition as { name: string; parameters: { required: string[] } };
  assert.equal(definition.name, "nap");
  assert.deepEqual(definition.parameters.required, ["label"]);
  assert.equal(disclosure.isStub("nap"), false);
  const nap = disclosure.definitions().find((t) => t.function.name === "nap")!;
  assert.deepEqual(nap.function, definition, "the next request carries the same full definition");
});

Deno.test("lazy: off, every tool is in full; a resumed conversation's called tools start in full", () => {
  assert.equal(new ToolDisclosure(manifest, { lazy: false }).stubs, 0);
  const called = calledTools([
    { role: "user", content: "go" },
    { role: "assistant", content: null, tool_calls: [call("nap"), call("gone_tool")] },
    { role: "tool", tool_call_id: "c_nap", content: "{}" },
  ]);
  assert.deepEqual([...called], ["nap", "gone_tool"]);
  const resumed = new ToolDisclosure(manifest, { lazy: true, loaded: called });
  assert.equal(resumed.isStub("nap"), false);
  assert.equal(resumed.isStub("note"), true);
  assert.equal(resumed.stubs, manifest.tools.length - 2, "nap and the alwaysLoad echo");
});
