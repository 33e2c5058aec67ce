/** The preflight: the envelope seed's coercions, the one-line example, and which error the model is told. */
import assert from "node:assert/strict";
import type { FailureEnvelope } from "../../src/contract.ts";
import { preflight } from "../../src/manifest/preflight.ts";
import { executorOf, manifestOf } from "../executor_helpers.ts";
import { loadSchemaEngine, markSchemaChecked, SchemaCompiler } from "../../src/manifest/schema.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

type Schema = Record<string, unknown>;

function check(schema: Schema | undefined, argsText: string) {
  const manifest = manifestOf([{ name: "t", command: ["/bin/cat"], ...(schema ? { schema } : {}) }]);
  return preflight(manifest.tools[0], argsText, new SchemaCompiler());
}

/** The checked arguments, or a failed assertion carrying the envelope. */
function accepted(schema: Schema, args: unknown): Record<string, unknown> {
  const verdict = check(schema, JSON.stringify(args));
  assert.ok(verdict.ok, verdict.ok ? "" : JSON.stringify(verdict.envelope));
  return verdict.args;
}

function refused(schema: Schema | undefined, argsText: string): FailureEnvelope {
  const verdict = check(schema, argsText);
  assert.ok(!verdict.ok, `accepted ${argsText}`);
  assert.equal(verdict.envelope.kind, "invalid_args");
  assert.equal(verdict.envelope.tool, "t");
  return verdict.envelope;
}

const object = (properties: Schema, extra: Schema = {}): Schema => ({ type: "object", properties, ...extra });

Deno.test("preflight: string-encoded integers become integers; others stay wrong", () => {
  const schema = object({ n: { type: "integer" } });
  assert.deepEqual(accepted(schema, { n: "15" }), { n: 15 });
  assert.deepEqual(accepted(schema, { n: " -3 " }), { n: -3 });
  assert.deepEqual(accepted(schema, { n: "+7" }), { n: 7 });
  assert.deepEqual(accepted(schema, { n: 4 }), { n: 4 });
  for (const bad of ["1.5", "abc", "12345678901234567890", "0x10"]) {
    assert.equal(refused(schema, JSON.stringify({ n: bad })).field, "n", bad);
  }
});

Deno.test("preflight: string-encoded numbers become numbers", () => {
  const schema = object({ x: { type: "number" } });
  for (
    const [text, value] of [["3.14", 3.14], ["-2", -2], [".5", 0.5], ["1e3", 1000], [" 2.5 ", 2.5]] as const
  ) {
    assert.deepEqual(accepted(schema, { x: text }), { x: value }, text);
  }
  for (const bad of ["NaN", "Infinity", "1,5", "three"]) {
    assert.equal(refused(schema, JSON.stringify({ x: bad })).field, "x", bad);
  }
});

Deno.test("preflight: true/false/1/0/yes/no in any case become booleans", () => {
  const schema = object({ on: { type: "boolean" } });
  const cases: [string, boolean][] = [
    ["true", true],
    ["TRUE", true],
    ["True", true],
    ["yes", true],
    ["YeS", true],
    ["1", true],
    ["false", false],
    ["FALSE", false],
    ["no", false],
    ["No", false],
    ["0", false],
    [" yes ", true],
  ];
  for (const [text, value] of cases) assert.deepEqual(accepted(schema, { on: text }), { on: value }, text);
  for (const bad of ["maybe", "on", "2", "y"]) {
    const envelope = refused(schema, JSON.stringify({ on: bad }));
    assert.equal(envelope.field, "on");
    assert.match(envelope.expected!, /boolean/);
  }
});

Deno.test("preflight: ajv's own coercion is off: a boolean is not an integer, a number not a string", () => {
  assert.equal(refused(object({ n: { type: "integer" } }), '{"n":true}').field, "n");
  assert.equal(refused(object({ s: { type: "string" } }), '{"s":5}').field, "s");
  assert.equal(refused(object({ s: { type: "string" } }), '{"s":["a"]}').field, "s");
});

Deno.test("preflight: JSON-encoded arrays and objects are decoded, their insides coerced too", () => {
  const schema = object({
    tags: { type: "array", items: { type: "string" } },
    counts: { type: "array", items: { type: "integer" } },
    opts: object({ deep: { type: "boolean" } }),
  });
  assert.deepEqual(
    accepted(schema, { tags: '["a","b"]', counts: '["1", 2]', opts: '{"deep":"yes"}' }),
    { tags: ["a", "b"], counts: [1, 2], opts: { deep: true } },
  );
  assert.deepEqual(accepted(schema, { counts: ["3", "4"] }), { counts: [3, 4] });
  // A bare string is not an array: the model hears so.
  const envelope = refused(schema, '{"tags":"a,b"}');
  assert.equal(envelope.field, "tags");
  assert.match(envelope.expected!, /array of string/);
  assert.equal(refused(schema, '{"opts":"deep"}').field, "opts");
  assert.equal(refused(schema, '{"tags":"[not json"}').field, "tags");
});

Deno.test('preflight: "null" becomes null only where the schema allows null', () => {
  assert.deepEqual(accepted(object({ n: { type: ["integer", "null"] } }), { n: "null" }), { n: null });
  assert.deepEqual(accepted(object({ n: { type: ["integer", "null"] } }), { n: "7" }), { n: 7 });
  assert.equal(refused(object({ n: { type: "integer" } }), '{"n":"null"}').field, "n");
  // Where a string is allowed, "null" is a string.
  assert.deepEqual(accepted(object({ s: { type: ["string", "null"] } }), { s: "null" }), { s: "null" });
});

Deno.test("preflight: blank optional strings are dropped, required ones kept", () => {
  const schema = object({
    path: { type: "string", minLength: 1 },
    note: { type: "string" },
    limit: { type: "integer" },
  }, { required: ["path"] });
  assert.deepEqual(accepted(schema, { path: "a", note: "", limit: "  " }), { path: "a" });
  assert.deepEqual(accepted(schema, { path: "a", note: " \t\n" }), { path: "a" });
  assert.deepEqual(accepted(schema, { path: "a", note: " x " }), { path: "a", note: " x " });
  const envelope = refused(schema, '{"path":""}');
  assert.equal(envelope.field, "path");
  assert.match(envelope.expected!, /length >= 1/);
});

Deno.test("preflight: enum strings take their declared spelling", () => {
  const schema = object({ scope: { type: "string", enum: ["pinned", "Recent", "all"] } });
  assert.deepEqual(accepted(schema, { scope: "PINNED" }), { scope: "pinned" });
  assert.deepEqual(accepted(schema, { scope: "recent" }), { scope: "Recent" });
  assert.deepEqual(accepted(schema, { scope: "all" }), { scope: "all" });
  const envelope = refused(schema, '{"scope":"everything"}');
  assert.equal(envelope.field, "scope");
  assert.equal(envelope.expected, 'one of "pinned", "Recent", "all"');
  // An integer enum still takes a string-encoded member.
  assert.deepEqual(accepted(object({ level: { type: "integer", enum: [1, 2, 3] } }), { level: "2" }), {
    level: 2,
  });
});

Deno.test("preflight: a stray {properties: {...}} wrapper is unwrapped when that is clearly the slip", () => {
  const schema = object({ city: { type: "string" }, days: { type: "integer" } }, {
    required: ["city"],
    additionalProperties: false,
  });
  assert.deepEqual(accepted(schema, { properties: { city: "Oslo", days: "3" } }), { city: "Oslo", days: 3 });
  // The schema echoed back around the arguments: its own keys go, the arguments stay.
  assert.deepEqual(
    accepted(schema, { type: "object", properties: { city: "Oslo" }, required: ["city"] }),
    { city: "Oslo" },
  );
  // No inner key matches: not a wrapper, so the model hears about the unexpected argument.
  assert.equal(refused(schema, '{"properties":{"town":"Oslo"}}').field, "city");
});

Deno.test("preflight: properties is left alone when it is a declared argument", () => {
  const schema = object({ properties: { type: "object" }, city: { type: "string" } });
  assert.deepEqual(accepted(schema, { properties: { city: "Oslo" } }), { properties: { city: "Oslo" } });
});

Deno.test("preflight: arguments that are not a JSON object get a one-line example", () => {
  const schema = object({
    timezone: { type: "string" },
    days: { type: "integer" },
    mode: { enum: ["a", "b"] },
  }, { required: ["timezone", "days", "mode"] });
  for (const text of ["[1]", "42", "not json", "null", '"Europe/Oslo"', "{", "true"]) {
    const envelope = refused(schema, text);
    assert.equal(envelope.field, undefined);
    assert.equal(envelope.expected, '{"timezone":"...","days":1,"mode":"a"}');
    assert.ok(!envelope.message.includes("\n"), envelope.message);
    assert.ok(envelope.message.includes(envelope.expected!), envelope.message);
  }
});

Deno.test("preflight: empty arguments text means {}", () => {
  assert.deepEqual(check(object({ a: { type: "string" } }), "").ok, true);
  assert.deepEqual(check(object({ a: { type: "string" } }), "  \n").ok, true);
  assert.equal(refused(object({ a: { type: "string" } }, { required: ["a"] }), "").field, "a");
});

Deno.test("preflight: a tool without a schema takes any object as is", () => {
  const verdict = check(undefined, '{"n":"15","x":[1]}');
  assert.ok(verdict.ok);
  assert.deepEqual(verdict.args, { n: "15", x: [1] });
  assert.equal(refused(undefined, "[]").expected, "{}");
});

Deno.test("preflight: a missing required argument is reported first, whatever else is wrong", () => {
  const schema = object({
    city: { type: "string", description: "a city name" },
    days: { type: "integer", minimum: 1 },
  }, { required: ["city"], additionalProperties: false });
  const envelope = refused(schema, '{"days":"zero","extra":1}');
  assert.equal(envelope.field, "city");
  assert.equal(envelope.expected, "string (a city name)");
  assert.match(envelope.message, /Missing required argument `city`/);
});

Deno.test("preflight: an unexpected argument comes before type and value errors", () => {
  const schema = object({ city: { type: "string" }, days: { type: "integer", minimum: 1 } }, {
    required: ["city"],
    additionalProperties: false,
  });
  const envelope = refused(schema, '{"city":"Oslo","days":0,"zoom":2}');
  assert.equal(envelope.field, "zoom");
  assert.equal(envelope.expected, "only these arguments: city, days");
  const value = refused(schema, '{"city":"Oslo","days":0}');
  assert.equal(value.field, "days");
  assert.equal(value.expected, "integer, >= 1");
});

Deno.test("preflight: array items are named with [i] in the field path", () => {
  const schema = object({
    items: {
      type: "array",
      items: object({ name: { type: "string" }, count: { type: "integer" } }, { required: ["name"] }),
    },
  });
  const missing = refused(schema, '{"items":[{"name":"a"},{"count":1}]}');
  assert.equal(missing.field, "items[1].name");
  assert.match(missing.message, /`items\[1\]\.name`/);
  const wrong = refused(schema, '{"items":[{"name":"a","count":"many"}]}');
  assert.equal(wrong.field, "items[0].count");
  assert.equal(wrong.expected, "integer");
  assert.deepEqual(accepted(schema, { items: [{ name: "a", count: "2" }] }), {
    items: [{ name: "a", count: 2 }],
  });
  const matrix = object({ m: { type: "array", items: { type: "array", items: { type: "integer" } } } });
  assert.equal(refused(matrix, '{"m":[[1],[2,"x"]]}').field, "m[1][1]");
});

Deno.test("preflight: a schema that does not compile makes the tool unavailable, not the arguments wrong", () => {
  const verdict = check(object({ a: { $ref: "#/definitions/missing" } }), "{}");
  assert.ok(!verdict.ok);
  assert.equal(verdict.envelope.kind, "unavailable");
  assert.equal(verdict.envelope.retryable, false);
});

Deno.test("preflight: the tool receives the coerced arguments on stdin", async () => {
  const schema = object({ n: { type: "integer" }, on: { type: "boolean" }, note: { type: "string" } });
  const executor = executorOf({ command: ["./tools/bin/echo_stdin"], schema });
  const envelope = await executor.call("t", '{"n":"15","on":"Yes","note":""}');
  assert.deepEqual(envelope, { ok: true, result: { n: 15, on: true }, tool: "t" });
});

Deno.test("preflight: an invalid call never starts the tool", async () => {
  const schema = object({ n: { type: "integer" } }, { required: ["n"] });
  const executor = executorOf({ command: ["./tools/bin/respond", "{}", "", "0"], schema });
  const envelope = await executor.call("t", "{}");
  assert.equal(envelope.ok, false);
  assert.equal((envelope as FailureEnvelope).kind, "invalid_args");
  assert.equal((envelope as FailureEnvelope).exit_code, undefined);
});

Deno.test("a schema that passed the meta-schema check is compiled without checking it again; any other is checked", async () => {
  // ajv's own check at compile compiled the draft's whole meta-schema at every built-in tool's first call. The
  // schemas here are ones the meta-schema refuses but ajv compiles: which one is checked shows in the result.
  await loadSchemaEngine();
  const refused = () => ({ type: "object", properties: { a: { type: "string", minLength: -1 } } });
  const unchecked = new SchemaCompiler().compile(refused());
  assert.equal(unchecked.ok, false, "a schema nobody checked is checked at compile");
  assert.match(unchecked.ok ? "" : unchecked.reason, /schema is invalid/);
  const vouched = refused();
  markSchemaChecked(vouched);
  assert.equal(new SchemaCompiler().compile(vouched).ok, true, "a checked schema is not checked again");
  // check() itself marks what passes.
  const compiler = new SchemaCompiler();
  const fine = { type: "object", properties: { a: { type: "string" } } };
  assert.equal(compiler.check(fine), undefined);
  const compiled = compiler.compile(fine);
  assert.ok(compiled.ok && compiled.validate({ a: "x" }) && !compiled.validate({ a: 1 }));
});
