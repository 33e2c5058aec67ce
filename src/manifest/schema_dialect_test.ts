import assert from "node:assert/strict";
import { dialectProblem } from "./schema_dialect.ts";
import { loadSchemaEngine, SchemaCompiler } from "./schema.ts";
import { validateManifest } from "./manifest.ts";

const URL_2020 = "https://json-schema.org/draft/2020-12/schema";

Deno.test("schema dialect: a 2020-12 keyword in a schema read as draft-07 is named, with where it is", () => {
  const schema = {
    type: "object",
    properties: { ids: { type: "array", items: { dependentRequired: { a: ["b"] } } } },
  };
  assert.match(
    dialectProblem(schema)!,
    /^"dependentRequired" \(at \/properties\/ids\/items\) is a keyword of/,
  );
  assert.match(dialectProblem({ allOf: [{ unevaluatedProperties: false }] })!, /at \/allOf\/0\)/);
  assert.match(dialectProblem({ $defs: { x: { minContains: 1 } } })!, /at \/\$defs\/x\)/);
});

Deno.test("schema dialect: a schema that declares its draft, names that look like keywords and annotations are not flagged", () => {
  assert.equal(
    dialectProblem({ $schema: URL_2020, type: "array", prefixItems: [{ type: "string" }] }),
    undefined,
  );
  // A property named like a keyword is a name; an example or an enum value is data; x- keys are annotations.
  assert.equal(
    dialectProblem({
      type: "object",
      properties: { prefixItems: { type: "string", examples: [{ prefixItems: 1 }] } },
      "x-note": { unevaluatedProperties: false },
    }),
    undefined,
  );
  assert.match(
    dialectProblem({ $schema: URL_2020, additionalItems: false })!,
    /^"additionalItems" \(at \/\)/,
  );
});

Deno.test("schema dialect: a manifest schema whose keyword its draft ignores is refused at load, not let through at call", async () => {
  await loadSchemaEngine();
  const result = validateManifest(
    {
      tools: [{
        name: "t",
        command: ["/bin/cat"],
        schema: { type: "object", properties: { a: {}, b: {} }, dependentRequired: { a: ["b"] } },
      }],
    },
    "/tmp/tools.json",
    { allowAbsoluteCommands: true },
  );
  assert.ok(!result.ok);
  assert.match(
    result.errors.join("\n"),
    /schema is invalid: "dependentRequired" \(at \/\) .*declare "\$schema"/,
  );
});

Deno.test("schema dialect: a schema no manifest checked (an MCP server's) is read as 2020-12 (MCP's default) where it names no draft, never checked as less", async () => {
  await loadSchemaEngine();
  const compiled = new SchemaCompiler().compile({ type: "array", prefixItems: [{ type: "string" }] });
  assert.ok(compiled.ok);
  assert.equal(compiled.validate([1]), false);
  // A keyword that neither draft-07 nor 2020-12 checks in its place (2019-09's prefixItems-less tuple reader):
  // refused, rather than checked as less than it says.
  const mixed = new SchemaCompiler().compile({
    $schema: "https://json-schema.org/draft/2019-09/schema",
    type: "array",
    prefixItems: [{ type: "string" }],
  });
  assert.ok(!mixed.ok);
  assert.match(mixed.reason, /"prefixItems"/);
  const declared = new SchemaCompiler().compile({
    $schema: URL_2020,
    type: "array",
    prefixItems: [{ type: "string" }],
  });
  assert.ok(declared.ok);
  assert.equal(declared.validate([1]), false);
  assert.equal(declared.validate(["a", 1]), true);
});
