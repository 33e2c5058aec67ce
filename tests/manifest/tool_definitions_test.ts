/** The manifest's tools as OpenAI functions, Anthropic tools and MCP tools, in manifest order. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FAILURE_ENVELOPE_SCHEMA } from "../../src/contract.ts";
import {
  exportTools,
  mcpOutputSchema,
  toAnthropic,
  toMcp,
  toOpenAI,
} from "../../src/manifest/tool_definitions.ts";
import { loadManifest, validateManifest } from "../../src/manifest/manifest.ts";
import { type Manifest } from "../../src/manifest/manifest_types.ts";
import { tempDir, writeManifest } from "../support.ts";
import { REPO } from "../support.ts";

const TIME_SCHEMA = {
  type: "object",
  properties: { timezone: { type: "string", description: "IANA timezone, e.g. Europe/Helsinki" } },
  required: ["timezone"],
  additionalProperties: false,
};

/** Three tools: full, bare, and read-only with a description but no schema. */
async function sampleManifest(): Promise<Manifest> {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, {
    tools: [
      {
        name: "get_time",
        description: "Get current time for an IANA timezone",
        schema: TIME_SCHEMA,
        command: ["./tools/bin/get_time"],
        readOnly: true,
        concurrent: true,
      },
      { name: "bare", command: ["./tools/bin/bare"] },
      { name: "ro", description: "Reads", command: ["./tools/bin/ro"], readOnly: true },
    ],
  });
  const result = await loadManifest(path);
  assert.ok(result.ok, result.ok ? "" : result.errors.join("\n"));
  return result.manifest;
}

/** Plain JSON, as it goes over the wire. */
const wire = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

Deno.test("OpenAI: type function, in manifest order; description and parameters left out when absent", async () => {
  const manifest = await sampleManifest();
  const exported = exportTools(manifest, "openai");
  assert.deepEqual(wire(exported), [
    {
      type: "function",
      function: {
        name: "get_time",
        description: "Get current time for an IANA timezone",
        parameters: TIME_SCHEMA,
      },
    },
    { type: "function", function: { name: "bare" } },
    { type: "function", function: { name: "ro", description: "Reads" } },
  ]);
  const bare = toOpenAI(manifest.tools[1]);
  assert.ok(!("description" in bare.function));
  assert.ok(!("parameters" in bare.function));
});

Deno.test("Anthropic: name, description, input_schema (an empty object schema when absent)", async () => {
  const manifest = await sampleManifest();
  assert.deepEqual(wire(exportTools(manifest, "anthropic")), [
    { name: "get_time", description: "Get current time for an IANA timezone", input_schema: TIME_SCHEMA },
    { name: "bare", input_schema: { type: "object", properties: {} } },
    { name: "ro", description: "Reads", input_schema: { type: "object", properties: {} } },
  ]);
  assert.ok(!("description" in toAnthropic(manifest.tools[1])));
});

Deno.test("MCP: name, description, inputSchema and annotations with readOnlyHint from readOnly", async () => {
  const manifest = await sampleManifest();
  assert.deepEqual(wire(exportTools(manifest, "mcp")), [
    {
      name: "get_time",
      description: "Get current time for an IANA timezone",
      inputSchema: TIME_SCHEMA,
      annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
      execution: { taskSupport: "optional" },
    },
    {
      name: "bare",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: false, openWorldHint: false },
      execution: { taskSupport: "optional" },
    },
    {
      name: "ro",
      description: "Reads",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
      execution: { taskSupport: "optional" },
    },
  ]);
  assert.equal(toMcp(manifest.tools[1]).annotations.readOnlyHint, false);
});

Deno.test("names: the tool names in manifest order", async () => {
  assert.deepEqual(exportTools(await sampleManifest(), "names"), ["get_time", "bare", "ro"]);
});

Deno.test("exports are fresh objects: changing one does not touch the manifest or the next export", async () => {
  const manifest = await sampleManifest();
  const first = toAnthropic(manifest.tools[1]);
  first.input_schema.type = "changed";
  assert.deepEqual(wire(toAnthropic(manifest.tools[1]).input_schema), { type: "object", properties: {} });
  const openai = toOpenAI(manifest.tools[0]);
  openai.function.parameters!.type = "changed";
  assert.equal(manifest.tools[0].schema?.type, "object");
});

Deno.test("an empty manifest exports empty lists", async () => {
  await using dir = await tempDir();
  const result = await loadManifest(await writeManifest(dir.path, {}));
  assert.ok(result.ok);
  for (const format of ["openai", "anthropic", "mcp", "names"] as const) {
    assert.deepEqual(exportTools(result.manifest, format), []);
  }
});

Deno.test("toolgate's own risk marks stay home: models and hosts get the schema without x-toolgate-risk", async () => {
  const loaded = await loadManifest(join(REPO, "tools.json"));
  assert.ok(loaded.ok);
  const exec = loaded.manifest.byName.get("exec")!;
  const properties = exec.schema!.properties as Record<string, Record<string, unknown>>;
  assert.equal(properties.argv["x-toolgate-risk"], true, "the manifest keeps the mark");
  for (
    const schema of [
      toOpenAI(exec).function.parameters,
      toAnthropic(exec).input_schema,
      toMcp(exec).inputSchema,
    ]
  ) {
    assert.doesNotMatch(JSON.stringify(schema), /x-toolgate-/);
    const argv = (schema!.properties as Record<string, Record<string, unknown>>).argv;
    assert.equal(argv.type, "array", "the rest of the schema is intact");
    assert.deepEqual(argv.items, { type: "string" });
  }
});

Deno.test("MCP: a declared outputSchema goes out beside the failure envelope, and no other export carries it", async () => {
  await using dir = await tempDir();
  const declared = {
    type: "object",
    properties: { n: { type: "integer", "x-toolgate-risk": true } },
    required: ["n"],
    additionalProperties: false,
  };
  const path = await writeManifest(dir.path, {
    tools: [{ name: "count", command: ["./tools/bin/count"], outputSchema: declared }],
  });
  const loaded = await loadManifest(path);
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  const tool = loaded.manifest.tools[0];
  const own = { ...declared, properties: { n: { type: "integer" } } };
  assert.deepEqual(wire(toMcp(tool).outputSchema), { type: "object", anyOf: [own, FAILURE_ENVELOPE_SCHEMA] });
  assert.ok(!("outputSchema" in toMcp(loaded.manifest.tools[0]).inputSchema));
  assert.doesNotMatch(JSON.stringify([toOpenAI(tool), toAnthropic(tool)]), /anyOf|"n"/);
  // A fresh copy each time: changing one leaves the manifest and the contract as they were.
  const first = toMcp(tool).outputSchema!;
  ((first.anyOf as Record<string, unknown>[])[1].required as string[]).push("changed");
  (first.anyOf as Record<string, unknown>[])[0].type = "changed";
  assert.deepEqual(wire(toMcp(tool).outputSchema), { type: "object", anyOf: [own, FAILURE_ENVELOPE_SCHEMA] });
  assert.equal(tool.outputSchema?.type, "object");
});

Deno.test("MCP: an outputSchema's dialect, identity and definitions stay at the root, so its $refs resolve", () => {
  const declared = {
    $schema: "http://json-schema.org/draft-07/schema#",
    $id: "https://example.com/tree.json",
    type: "object",
    definitions: { node: { type: "object", properties: { name: { type: "string" } } } },
    $defs: { leaf: { type: "string" } },
    properties: { root: { $ref: "#/definitions/node" }, tip: { $ref: "#/$defs/leaf" } },
  };
  assert.deepEqual(mcpOutputSchema(declared), {
    type: "object",
    $schema: declared.$schema,
    $id: declared.$id,
    definitions: declared.definitions,
    $defs: declared.$defs,
    anyOf: [{ type: "object", properties: declared.properties }, FAILURE_ENVELOPE_SCHEMA],
  });
});

Deno.test("a manifest's execution.taskSupport is MCP's execution of the tool; a bad one is an error", () => {
  const loaded = validateManifest({
    tools: [
      { name: "long", command: ["./tools/bin/long"], execution: { taskSupport: "required" } },
      { name: "plain", command: ["./tools/bin/plain"] },
    ],
  }, "/srv/tools.json");
  assert.ok(loaded.ok);
  assert.deepEqual(toMcp(loaded.manifest.tools[0]).execution, { taskSupport: "required" });
  // Said nothing: a client may run it either way (serve runs any call as a task, docs/mcp.md#tasks).
  assert.deepEqual(toMcp(loaded.manifest.tools[1]).execution, { taskSupport: "optional" });
  const bad = validateManifest({
    tools: [
      { name: "a", command: ["./tools/bin/a"], execution: { taskSupport: "always" } },
      { name: "b", command: ["./tools/bin/b"], execution: "required" },
      { name: "c", command: ["./tools/bin/c"], execution: { taskSupport: "optional", ttl: 5 } },
    ],
  }, "/srv/tools.json");
  assert.equal(bad.ok, false);
  assert.deepEqual(bad.ok ? [] : bad.errors, [
    'tool[0] "a": execution.taskSupport must be one of "forbidden", "optional", "required" (got "always")',
    'tool[1] "b": execution must be an object such as {"taskSupport": "optional"} (got "required")',
  ]);
  assert.deepEqual(bad.warnings, ['tool[2] "c": unknown field "execution.ttl" (ignored)']);
});
