import assert from "node:assert/strict";
import { formContent } from "./form_answer.ts";

const SCHEMA = {
  type: "object",
  properties: {
    name: { type: "string" },
    age: { type: "integer" },
    score: { type: "number" },
    ok: { type: "boolean" },
    target: { type: "string", enum: ["staging", "prod"] },
    titled: { type: "string", oneOf: [{ const: "a", title: "A" }, { const: "b", title: "B" }] },
    tags: { type: "array", items: { type: "string", enum: ["x", "y"] } },
  },
  required: ["name"],
};

Deno.test("a fitting answer is taken as it is", () => {
  const content = { name: "Ada", age: 3, score: 1.5, ok: true, target: "prod", titled: "b", tags: ["x"] };
  assert.deepEqual(formContent(SCHEMA, content), content);
});

Deno.test("a misfit answer says why: a missing required field, a field not asked, a wrong type or choice", () => {
  assert.equal(formContent(SCHEMA, {}), "the field name is required");
  assert.equal(formContent(SCHEMA, { name: "Ada", extra: 1 }), "the form has no field extra");
  assert.equal(formContent(SCHEMA, { name: "Ada", age: 1.5 }), "the field age takes integer");
  assert.equal(
    formContent(SCHEMA, { name: "Ada", target: "dev" }),
    "the field target takes one of its choices",
  );
  assert.equal(
    formContent(SCHEMA, { name: "Ada", titled: "c" }),
    "the field titled takes one of its choices",
  );
  assert.equal(formContent(SCHEMA, { name: "Ada", ok: "yes" }), "the field ok takes boolean");
  assert.equal(formContent(SCHEMA, { name: "Ada", constructor: "x" }), "the form has no field constructor");
  assert.equal(formContent(SCHEMA, { name: "Ada", tags: ["z"] }), "the field tags takes array");
  assert.equal(formContent(SCHEMA, "Ada"), "the content is an object of the form's fields");
});
