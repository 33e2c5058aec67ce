/**
 * Which schemas the small validator (`small_schema.ts`) checks exactly as ajv does: the keywords it knows, those
 * that change no answer, and every other keyword ajv's draft-07 class knows, which leaves a schema to ajv. A test
 * holds the lists to what ajv registers (`tests/manifest/small_schema_test.ts`).
 *
 * @module
 */

type Schema = Record<string, unknown>;

/** Keywords the small validator checks. */
export const CHECKED: ReadonlySet<string> = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
]);

/**
 * The keywords ajv's draft-07 class knows and that change nothing a validator answers: annotations and the
 * content vocabulary (which draft-07 ajv only reads).
 */
const INERT = new Set([
  "$comment",
  "title",
  "description",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
  "examples",
  "contentMediaType",
  "contentEncoding",
  "contentSchema",
]);

/**
 * Every other keyword ajv's draft-07 class (with ajv-formats) knows: a schema using one is left to ajv. A test
 * holds the three lists to what ajv registers.
 */
export const LEFT_TO_AJV: ReadonlySet<string> = new Set([
  "$schema",
  "$id",
  "$defs",
  "$vocabulary",
  "definitions",
  "id",
  "$ref",
  "nullable",
  "multipleOf",
  "pattern",
  "maxProperties",
  "minProperties",
  "uniqueItems",
  "not",
  "anyOf",
  "oneOf",
  "allOf",
  "if",
  "then",
  "else",
  "propertyNames",
  "dependencies",
  "patternProperties",
  "additionalItems",
  "contains",
  "format",
  "formatMinimum",
  "formatMaximum",
  "formatExclusiveMinimum",
  "formatExclusiveMaximum",
  "$async",
]);

/** The keywords the small validator handles or knowingly ignores, for the test that compares the lists with ajv's. */
export const KNOWN_HERE: ReadonlySet<string> = new Set([...CHECKED, ...INERT]);

const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;
const TYPES = new Set(["string", "number", "integer", "boolean", "null", "object", "array"]);
/** The number bounds, in the order ajv checks them. */
export const NUMBER_BOUNDS = ["maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"] as const;

/** A schema object (not a boolean schema, not an array). */
export function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function nonNegativeInteger(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/**
 * Whether the small validator checks `schema` (at any depth) exactly as ajv does; `root` allows a draft-07
 * `$schema`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { within } from "./small_schema_subset.ts";
 * assert.ok(within({ type: "object", properties: { n: { type: "integer" } } }, true));
 * assert.equal(within({ type: "string", pattern: "^a" }, true), false);
 * ```
 */
export function within(schema: unknown, root: boolean): boolean {
  if (!isSchema(schema)) return false;
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$schema" && root && typeof value === "string" && DRAFT_07.test(value)) continue;
    if (LEFT_TO_AJV.has(key)) return false;
    if (!CHECKED.has(key)) continue;
    if (!keywordWithin(key, value)) return false;
  }
  return true;
}

function keywordWithin(key: string, value: unknown): boolean {
  switch (key) {
    case "type":
      return typeof value === "string" ? TYPES.has(value) : Array.isArray(value) && value.length > 0 &&
        value.every((t) => typeof t === "string" && TYPES.has(t));
    case "properties":
      return isSchema(value) && Object.values(value).every((sub) => within(sub, false));
    case "required":
      return Array.isArray(value) && value.every((name) => typeof name === "string");
    case "additionalProperties":
      return typeof value === "boolean" || within(value, false);
    case "items":
      return within(value, false);
    case "enum":
      // ajv refuses an empty enum when it compiles: ajv says so.
      return Array.isArray(value) && value.length > 0;
    case "const":
      return true;
    default:
      return (NUMBER_BOUNDS as readonly string[]).includes(key)
        ? typeof value === "number" && Number.isFinite(value)
        : nonNegativeInteger(value);
  }
}
