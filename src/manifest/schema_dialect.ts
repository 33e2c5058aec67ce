/**
 * The keywords a schema's own draft does not know but another draft checks: a schema without `$schema` is read
 * as draft-07, whose validator ignores `prefixItems` or `dependentRequired` (JSON Schema 2019-09 and 2020-12), and
 * a 2020-12 schema's validator ignores draft-07's `additionalItems`. Such a keyword would check nothing, and a
 * call the author meant to refuse would pass: the schema is refused instead, with the `$schema` that fixes it.
 *
 * Not here: the meta-schema check and the compiled validators (`schema.ts`), the engine (`schema_engine.ts`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";

type Draft = "draft-07" | "2019-09" | "2020-12";

const DRAFT_2020 = /json-schema\.org\/draft\/2020-12\/schema/;
const DRAFT_2019 = /json-schema\.org\/draft\/2019-09\/schema/;
const URL_2020 = "https://json-schema.org/draft/2020-12/schema";

/**
 * Each draft's foreign keywords (ajv 8's class for the draft does not register them, another draft's does), and
 * the draft they belong to. `$anchor` and `$defs` are absent: ajv resolves them in every draft.
 */
const FOREIGN: Record<Draft, Record<string, string>> = {
  "draft-07": Object.fromEntries(
    [
      "prefixItems",
      "dependentRequired",
      "dependentSchemas",
      "unevaluatedProperties",
      "unevaluatedItems",
      "minContains",
      "maxContains",
      "$dynamicRef",
      "$recursiveRef",
    ].map((keyword) => [keyword, "JSON Schema 2020-12"]),
  ),
  "2019-09": { prefixItems: "JSON Schema 2020-12" },
  "2020-12": { additionalItems: "draft-07 (2020-12 replaced it with prefixItems and items)" },
};

/** Keywords whose value maps names to subschemas (the names are not keywords). */
const SCHEMA_MAPS = new Set([
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
  "dependencies",
]);
/** Keywords whose value is a list of subschemas (`items` in its draft-07 array form too). */
const SCHEMA_LISTS = new Set(["allOf", "anyOf", "oneOf", "prefixItems", "items"]);
/** Keywords whose value is one subschema. */
const SCHEMA_ONE = new Set([
  "items",
  "additionalProperties",
  "additionalItems",
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contentSchema",
]);

function draftOf(schema: Record<string, unknown>): Draft {
  const declared = typeof schema.$schema === "string" ? schema.$schema : "";
  return DRAFT_2020.test(declared) ? "2020-12" : DRAFT_2019.test(declared) ? "2019-09" : "draft-07";
}

function pointer(key: string): string {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}

function foreignIn(
  schema: unknown,
  foreign: Record<string, string>,
  at: string,
): [string, string] | undefined {
  if (!isRecord(schema)) return undefined;
  for (const [key, value] of Object.entries(schema)) {
    if (Object.hasOwn(foreign, key)) return [key, at];
    const here = `${at}/${pointer(key)}`;
    const subschemas = SCHEMA_MAPS.has(key) && isRecord(value)
      ? Object.entries(value).map(([name, sub]) => [sub, `${here}/${pointer(name)}`] as const)
      : SCHEMA_LISTS.has(key) && Array.isArray(value)
      ? value.map((sub, i) => [sub, `${here}/${i}`] as const)
      : SCHEMA_ONE.has(key)
      ? [[value, here] as const]
      : [];
    for (const [sub, where] of subschemas) {
      const found = foreignIn(sub, foreign, where);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Why a schema cannot be trusted to check what it says: the first keyword (at any depth) that its draft's
 * validator would ignore although another draft checks it, with where it is and how to fix it; `undefined` when
 * there is none. An unknown keyword of no draft (`x-...` annotations) is not one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dialectProblem } from "./schema_dialect.ts";
 * assert.match(
 *   dialectProblem({ type: "object", properties: { tags: { prefixItems: [{ type: "string" }] } } })!,
 *   /^"prefixItems" \(at \/properties\/tags\) is a keyword of JSON Schema 2020-12/,
 * );
 * assert.equal(
 *   dialectProblem({ $schema: "https://json-schema.org/draft/2020-12/schema", prefixItems: [{ type: "string" }] }),
 *   undefined,
 * );
 * ```
 */
export function dialectProblem(schema: Record<string, unknown>): string | undefined {
  const draft = draftOf(schema);
  const found = foreignIn(schema, FOREIGN[draft], "");
  if (found === undefined) return undefined;
  const [keyword, at] = found;
  const reader = draft === "draft-07" ? 'draft-07 (a schema without "$schema" is read as draft-07)' : draft;
  const fix = draft === "2020-12" ? "write it the 2020-12 way" : `declare "$schema": "${URL_2020}"`;
  return `"${keyword}" (at ${at || "/"}) is a keyword of ${FOREIGN[draft][keyword]}, which ${reader} ` +
    `does not check: it would let through what it should refuse; ${fix}`;
}
