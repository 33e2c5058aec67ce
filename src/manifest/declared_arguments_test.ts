import assert from "node:assert/strict";
import { undeclaredArgument } from "./declared_arguments.ts";
import { preflight } from "./preflight.ts";
import { SchemaCompiler } from "./schema.ts";
import type { ToolSpec } from "./manifest_types.ts";

Deno.test("declared arguments: the arguments object holds only what its schema names, whatever additionalProperties says by its silence", () => {
  const schema = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
  assert.equal(undeclaredArgument({ text: "a" }, schema), undefined);
  assert.equal(undeclaredArgument({ text: "a", extra: "b" }, schema), "extra");
  assert.equal(undeclaredArgument({}, { type: "object" }), undefined);
  assert.equal(undeclaredArgument({ any: 1 }, { type: "object" }), "any");
  assert.equal(undeclaredArgument({ any: 1 }, undefined), "any");
  // The schema opens it itself: declared.
  assert.equal(
    undeclaredArgument({ any: 1 }, { type: "object", additionalProperties: { type: "number" } }),
    undefined,
  );
  assert.equal(
    undeclaredArgument({ x_1: 1, y: 2 }, {
      type: "object",
      patternProperties: { "^x_": { type: "number" } },
    }),
    "y",
  );
});

Deno.test("declared arguments: nested objects where their schema lists properties, arrays, $ref and combinators", () => {
  const schema = {
    type: "object",
    $defs: { point: { type: "object", properties: { x: {}, y: {} } } },
    properties: {
      options: { type: "object", properties: { depth: { type: "integer" } } },
      free: { type: "object" },
      points: { type: "array", items: { $ref: "#/$defs/point" } },
    },
    allOf: [{ properties: { mode: { type: "string" } } }],
  };
  assert.equal(
    undeclaredArgument({ options: { depth: 1 }, free: { anything: true }, mode: "r" }, schema),
    undefined,
  );
  assert.equal(undeclaredArgument({ options: { depth: 1, deep: true } }, schema), "options.deep");
  assert.equal(undeclaredArgument({ points: [{ x: 1, y: 2 }, { x: 1, z: 3 }] }, schema), "points[1].z");
  assert.equal(undeclaredArgument({ mode: "r", other: 1 }, schema), "other");
});

Deno.test("preflight: an MCP server's tool refuses an argument its pinned schema does not declare, naming it; a manifest tool does not", async () => {
  const schema = { type: "object", properties: { text: { type: "string" } } };
  const tool = (upstream: boolean) =>
    ({
      name: upstream ? "mcp__own__echo" : "echo",
      schema,
      ...(upstream ? { upstream: { server: "own", tool: "echo" } } : {}),
    }) as unknown as ToolSpec;
  const schemas = new SchemaCompiler();
  await schemas.ready(schema);
  const refused = preflight(tool(true), '{"text":"a","extra":"b"}', schemas);
  assert.ok(!refused.ok);
  assert.equal(refused.envelope.kind, "invalid_args");
  assert.equal(refused.envelope.field, "extra");
  assert.match(refused.envelope.message, /`extra`.*allowed: text/);
  assert.ok(preflight(tool(true), '{"text":"a"}', schemas).ok);
  assert.ok(preflight(tool(false), '{"text":"a","extra":"b"}', schemas).ok);
});
