/**
 * An answer typed in the console's form, checked against the form before it goes back to whoever asked (a
 * `toolgate/1` tool, an MCP server): the fields it names, their types, the required ones.
 *
 * Not here: the forms waiting (`hub.ts`), their drawing (`page_script.js`), the terminal's form (ui/terminal_form.ts).
 *
 * @module
 */
import { isRecord } from "../contract.ts";

/**
 * A form's accepted values checked against its fields (MCP's flat `requestedSchema`): only its fields, each of its
 * type (a string, a number, an integer, a boolean, one of its choices, a list of them), every required one given;
 * or why not.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formContent } from "./form_answer.ts";
 * const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
 * assert.deepEqual(formContent(schema, { n: 2 }), { n: 2 });
 * assert.equal(formContent(schema, { n: "2" }), "the field n takes integer");
 * ```
 */
export function formContent(
  schema: Record<string, unknown>,
  content: unknown,
): Record<string, unknown> | string {
  if (!isRecord(content)) return "the content is an object of the form's fields";
  const fields = isRecord(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
  for (const name of required) {
    if (!(name in content)) return `the field ${name} is required`;
  }
  for (const [name, value] of Object.entries(content)) {
    const field = fields[name];
    if (!Object.hasOwn(fields, name) || !isRecord(field)) return `the form has no field ${name}`;
    const choices = Array.isArray(field.enum)
      ? field.enum
      : Array.isArray(field.oneOf)
      ? field.oneOf.filter(isRecord).map((option) => option.const)
      : undefined;
    const items = isRecord(field.items) && Array.isArray(field.items.enum) ? field.items.enum : undefined;
    const fits = field.type === "array"
      ? Array.isArray(value) &&
        value.every((item) => typeof item === "string" && (items?.includes(item) ?? true))
      : choices !== undefined
      ? choices.includes(value)
      : field.type === "boolean"
      ? typeof value === "boolean"
      : field.type === "integer"
      ? Number.isInteger(value)
      : field.type === "number"
      ? typeof value === "number" && Number.isFinite(value)
      : typeof value === "string";
    if (!fits) return `the field ${name} takes ${choices === undefined ? field.type : "one of its choices"}`;
  }
  return content;
}
