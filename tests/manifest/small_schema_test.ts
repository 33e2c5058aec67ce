// The small validator against ajv: the same verdicts and the same errors, on every tool schema in the repository
// and on schemas written to reach each keyword it knows, for generated arguments (valid, near misses, wrong types).
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "../support.ts";
import { smallValidator } from "../../src/manifest/small_schema.ts";
import { KNOWN_HERE, LEFT_TO_AJV } from "../../src/manifest/small_schema_subset.ts";
import { DRAFTS, newAjv } from "../../src/manifest/schema_engine.ts";
import { seededRandom } from "../seeded_random.ts";

type Schema = Record<string, unknown>;

/** Every `schema` and `outputSchema` of every manifest in the repository (the built-in tools' among them). */
async function repoSchemas(): Promise<Schema[]> {
  const listed = await new Deno.Command("git", { args: ["ls-files", "*.json"], cwd: REPO, stdout: "piped" })
    .output();
  const schemas: Schema[] = [];
  for (const file of new TextDecoder().decode(listed.stdout).split("\n").filter(Boolean)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(await Deno.readTextFile(join(REPO, file)));
    } catch {
      continue;
    }
    const tools = (parsed as { tools?: unknown })?.tools;
    if (!Array.isArray(tools)) continue;
    for (const tool of tools) {
      for (const key of ["schema", "outputSchema"]) {
        const schema = (tool as Schema | null)?.[key];
        if (schema && typeof schema === "object" && !Array.isArray(schema)) schemas.push(schema as Schema);
      }
    }
  }
  return schemas;
}

/** Schemas that reach each keyword the small validator knows, and the orders ajv reports them in. */
const WRITTEN: Schema[] = [
  { type: "object", properties: { n: { type: "integer", minimum: 1, maximum: 5 } }, required: ["n"] },
  { type: "integer", minimum: 2 },
  { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 10, maximum: 9.5 },
  { type: ["string", "null"], minLength: 2, maxLength: 3 },
  { type: ["integer", "string"], minimum: 0, minLength: 1 },
  { type: "string", enum: ["a", "b", "ab"] },
  { type: "string", enum: ["a", "b"], minLength: 1, maxLength: 1 },
  { enum: [1, "1", null, { a: [1] }, [1, 2]] },
  { const: { a: 1, b: [true] } },
  { const: "x", type: "string", minLength: 2 },
  { type: "array", items: { type: "integer", maximum: 3 }, minItems: 1, maxItems: 2 },
  { type: "array", items: { type: "object", required: ["k"], additionalProperties: false } },
  { minItems: 1, minLength: 1, minimum: 1, required: ["a"] },
  { type: "object", additionalProperties: { type: "string", maxLength: 2 } },
  {
    type: "object",
    properties: { "a/b": { type: "string" }, "c~d": { type: "integer" }, "e f": { enum: [1] } },
    additionalProperties: false,
    required: ["a/b", "zz", "c~d"],
  },
  {
    type: "object",
    properties: Object.fromEntries(
      ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10"].map((p) => [p, { type: "boolean" }]),
    ),
    additionalProperties: false,
  },
  { type: "object", properties: { x: { description: "any" }, y: {} }, required: ["x"], title: "t" },
  { type: "object", properties: { deep: { type: "object", properties: { d: { type: "null" } } } } },
  { $schema: "http://json-schema.org/draft-07/schema#", type: "object", "x-unknown": { type: "string" } },
  { type: "boolean" },
  { type: "object", additionalProperties: true, minLength: 2 },
];

const KEYS = ["extra", "a/b", "c~d", "constructor", "properties", "n", "k", "p1", "p11", "x"];
const STRINGS = ["", "a", "ab", "abc", "B", "UTC", "\u{1F600}", "\u{1F600}\u{1F600}", "x".repeat(40)];
const NUMBERS = [0, 1, 2, 3, 5, 6, -1, 0.5, 9.5, 10, 2.5, 1e21];

/** A value for `schema`: mostly near it (its types, its names, its bounds), sometimes anything at all. */
function valueFor(schema: unknown, next: () => number, depth = 0): unknown {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  const s = (schema && typeof schema === "object" ? schema : {}) as Schema;
  if (Array.isArray(s.enum) && next() < 0.4) return pick(s.enum);
  if (s.const !== undefined && next() < 0.3) return s.const;
  const types = s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
  const type = types.length > 0 && next() < 0.8
    ? pick(types as string[])
    : pick(["string", "number", "integer", "boolean", "null", "object", "array"]);
  switch (type) {
    case "string":
      return pick(STRINGS);
    case "number":
      return pick(NUMBERS);
    case "integer":
      return pick(NUMBERS.filter(Number.isInteger));
    case "boolean":
      return next() < 0.5;
    case "null":
      return null;
    case "array": {
      if (depth > 3) return [];
      return Array.from({ length: Math.floor(next() * 4) }, () => valueFor(s.items, next, depth + 1));
    }
    default: {
      if (depth > 3) return {};
      const out: Schema = {};
      const properties = (s.properties ?? {}) as Schema;
      const required = Array.isArray(s.required) ? s.required as string[] : [];
      for (const name of [...Object.keys(properties), ...required]) {
        if (next() < 0.75) out[name] = valueFor(properties[name], next, depth + 1);
      }
      if (next() < 0.3) out[pick(KEYS)] = valueFor(s.additionalProperties, next, depth + 1);
      return out;
    }
  }
}

Deno.test("small schema: its keyword lists and ajv's draft-07 keywords are the same set", () => {
  const ajv = newAjv(DRAFTS.draft7) as unknown as { RULES: { keywords: Record<string, unknown> } };
  const ajvKnows = new Set(Object.keys(ajv.RULES.keywords));
  const here = new Set([...KNOWN_HERE, ...LEFT_TO_AJV]);
  assert.deepEqual([...ajvKnows].filter((k) => !here.has(k)), [], "keywords ajv knows that the lists miss");
  assert.deepEqual(
    [...here].filter((k) => !ajvKnows.has(k)),
    [],
    "keywords in the lists that ajv does not know",
  );
  assert.deepEqual([...KNOWN_HERE].filter((k) => LEFT_TO_AJV.has(k)), []);
});

Deno.test("small schema: the same verdicts and errors as ajv, on the repository's schemas and written ones", async () => {
  const schemas = [...await repoSchemas(), ...WRITTEN];
  assert.ok(schemas.length > 40, `the repository's schemas were found (${schemas.length})`);
  const ajv = newAjv(DRAFTS.draft7);
  let taken = 0;
  let failing = 0;
  for (const [index, schema] of schemas.entries()) {
    const small = smallValidator(schema);
    if (small === undefined) continue;
    taken++;
    const reference = ajv.compile(schema);
    const next = seededRandom(index + 1);
    for (let i = 0; i < 300; i++) {
      const data = valueFor(schema, next);
      const expected = reference(data);
      const errors = reference.errors ?? null;
      assert.equal(small(data), expected, `${JSON.stringify(schema)} on ${JSON.stringify(data)}`);
      assert.deepEqual(small.errors, errors, `${JSON.stringify(schema)} on ${JSON.stringify(data)}`);
      if (!expected) failing++;
    }
  }
  // Most tool schemas keep to the subset; each written one does.
  assert.ok(taken >= WRITTEN.length + 30, `the small validator took ${taken} of ${schemas.length} schemas`);
  assert.ok(failing > 1_000, `enough generated arguments fail (${failing}) to compare the errors`);
});

Deno.test("small schema: a schema with a keyword ajv knows and it does not is left to ajv", () => {
  for (
    const schema of [
      { type: "string", pattern: "^a" },
      { type: "string", format: "date-time" },
      { type: "object", properties: { a: { $ref: "#/definitions/x" } }, definitions: { x: {} } },
      { anyOf: [{ type: "string" }] },
      { type: "object", properties: { a: false } },
      { type: "array", items: [{ type: "string" }] },
      { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" },
      { type: "object", properties: { a: { $schema: "http://json-schema.org/draft-07/schema#" } } },
      { enum: [] },
      { type: "string", nullable: true },
    ]
  ) {
    assert.equal(smallValidator(schema), undefined, JSON.stringify(schema));
  }
});

Deno.test("small schema: a checked schema within the subset is compiled without loading the schema engine", async () => {
  const code = [
    `import { markSchemaChecked, SchemaCompiler, schemaEngineLoaded } from ${
      JSON.stringify(join(REPO, "src", "manifest", "schema.ts"))
    };`,
    "const schema = { type: 'object', properties: { t: { type: 'string', minLength: 1 } }, required: ['t'] };",
    "markSchemaChecked(schema);",
    "const compiler = new SchemaCompiler();",
    "await compiler.ready(schema);",
    "const compiled = compiler.compile(schema);",
    "if (!compiled.ok) throw new Error(compiled.reason);",
    "console.log(JSON.stringify([compiled.validate({ t: 'x' }), compiled.validate({}), schemaEngineLoaded()]));",
    "const other = { type: 'string', pattern: '^a' };",
    "markSchemaChecked(other);",
    "await compiler.ready(other);",
    "console.log(JSON.stringify([compiler.compile(other).ok, schemaEngineLoaded()]));",
  ].join("\n");
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--config", join(REPO, "deno.json"), code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  assert.deepEqual(new TextDecoder().decode(output.stdout).trim().split("\n").map((l) => JSON.parse(l)), [
    [true, false, false],
    [true, true],
  ]);
});
