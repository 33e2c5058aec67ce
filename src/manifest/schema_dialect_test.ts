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

Deno.test("schema dialect: a manifest schema that names no draft but uses 2020-12's keywords is checked as 2020-12 at every call; one no draft reads whole is refused at load", async () => {
  await loadSchemaEngine();
  const load = (schema: Record<string, unknown>) =>
    validateManifest(
      { tools: [{ name: "t", command: ["/bin/cat"], schema }] },
      "/tmp/tools.json",
      { allowAbsoluteCommands: true },
    );
  const schema = { type: "object", properties: { a: {}, b: {} }, dependentRequired: { a: ["b"] } };
  const loaded = load(schema);
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  // Read as draft-07, dependentRequired would check nothing and let {a} through.
  const compiled = new SchemaCompiler().compile({ ...loaded.manifest.tools[0].schema });
  assert.ok(compiled.ok);
  assert.equal(compiled.validate({ a: 1 }), false);
  assert.equal(compiled.validate({ a: 1, b: 2 }), true);
  const mixed = load({ type: "array", prefixItems: [{ type: "string" }], additionalItems: false });
  assert.ok(!mixed.ok);
  assert.match(mixed.errors.join("\n"), /schema is invalid: "prefixItems" \(at \/\) .*declare "\$schema"/);
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
