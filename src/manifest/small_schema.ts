/**
 * A small validator for the subset of JSON Schema (draft-07) that tool schemas nearly always use, with exactly
 * ajv's errors (toolgate's options: `allErrors`, `verbose`, `strict: false`): the same list, in the same order,
 * each with the same `instancePath`, `schemaPath`, `keyword`, `params`, `message`, `schema`, `parentSchema` and
 * `data`. Why: loading ajv (and its Node layer), making an ajv and compiling one schema cost a built-in tool's
 * call some 20 ms of its main process (`docs/performance.md`); this module is a few hundred lines with no
 * import that is not type-only.
 *
 * It knows `type`, `properties`, `required`, `additionalProperties`, `items` (one schema), `enum`, `const`, the
 * number bounds and the length and item counts, and it ignores what ajv ignores (annotations, unknown keywords).
 * A schema that uses any other keyword ajv knows (`pattern`, `format`, `$ref`, `anyOf` ...), a boolean
 * subschema, or a `$schema` other than draft-07 gets `undefined`: ajv compiles it as before. The order of the
 * checks is ajv's: the keywords that apply to any type, then those of numbers, strings, arrays and objects, each
 * group in the order ajv registers its keywords (`tests/manifest/small_schema_test.ts` compares the two on every
 * schema in the repository and on generated arguments).
 *
 * @module
 */
import type { ErrorObject } from "npm:ajv@8.17.1";
import { isSchema, NUMBER_BOUNDS, within } from "./small_schema_subset.ts";

/** A validator as ajv's are used: `true` or `false`, with the errors of the last `false` in `errors`. */
export interface SmallValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

type Schema = Record<string, unknown>;

/** JSON equality as ajv's (fast-deep-equal's) for parsed JSON. */
function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a && b && typeof a === "object" && typeof b === "object") {
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    if (Array.isArray(a) && Array.isArray(b)) {
      return a.length === b.length && a.every((item, i) => equal(item, b[i]));
    }
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((key) => Object.hasOwn(b, key) && equal((a as Schema)[key], (b as Schema)[key]));
  }
  return a !== a && b !== b;
}

/** A string's length in code points, as ajv counts for `minLength` and `maxLength`. */
function codePoints(text: string): number {
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    length++;
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      if ((text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
    }
  }
  return length;
}

function isType(type: string, data: unknown): boolean {
  switch (type) {
    case "null":
      return data === null;
    case "array":
      return Array.isArray(data);
    case "object":
      return typeof data === "object" && data !== null && !Array.isArray(data);
    case "integer":
      return typeof data === "number" && !(data % 1) && !isNaN(data);
    case "number":
      return typeof data === "number";
    case "string":
      return typeof data === "string";
    case "boolean":
      return typeof data === "boolean";
    default:
      return false;
  }
}

/** A key as a JSON pointer segment, and as ajv writes it into a schema path (a URI fragment). */
const pointer = (key: string) => key.replace(/~/g, "~0").replace(/\//g, "~1");
const fragment = (key: string) => encodeURIComponent(pointer(key));

const COMPARISON: Record<string, string> = {
  maximum: "<=",
  minimum: ">=",
  exclusiveMaximum: "<",
  exclusiveMinimum: ">",
};

/** One schema's checks against one value, in ajv's order, each error pushed onto `errors`. */
class Run {
  readonly errors: ErrorObject[] = [];

  #error(
    at: string,
    schemaAt: string,
    keyword: string,
    params: Record<string, unknown>,
    message: string,
    parent: Schema,
    data: unknown,
  ): void {
    this.errors.push({
      instancePath: at,
      schemaPath: `${schemaAt}/${keyword}`,
      keyword,
      params,
      message,
      schema: parent[keyword],
      parentSchema: parent,
      data,
    });
  }

  check(schema: Schema, data: unknown, at: string, schemaAt: string): void {
    const declared = schema.type === undefined
      ? []
      : Array.isArray(schema.type)
      ? schema.type
      : [schema.type];
    const types = declared as string[];
    // ajv checks the type first unless it is one type whose own group of keywords the schema uses; then the
    // type error comes where that group would run.
    const typeInGroup = types.length === 1 && this.#usesGroup(schema, types[0]);
    const typeError = () =>
      this.#error(
        at,
        schemaAt,
        "type",
        { type: schema.type },
        `must be ${types.join(",")}`,
        schema,
        data,
      );
    if (types.length > 0 && !typeInGroup && !types.some((type) => isType(type, data))) typeError();
    // Keywords of any type: `const`, then `enum`.
    if (schema.const !== undefined && !equal(data, schema.const)) {
      this.#error(
        at,
        schemaAt,
        "const",
        { allowedValue: schema.const },
        "must be equal to constant",
        schema,
        data,
      );
    }
    if (Array.isArray(schema.enum) && !schema.enum.some((value) => equal(data, value))) {
      this.#error(
        at,
        schemaAt,
        "enum",
        { allowedValues: schema.enum },
        "must be equal to one of the allowed values",
        schema,
        data,
      );
    }
    for (const group of ["number", "string", "array", "object"]) {
      if (!this.#usesGroup(schema, group)) continue;
      if (isType(group, data)) this.#group(group, schema, data, at, schemaAt);
      else if (typeInGroup && types[0] === group) typeError();
    }
  }

  #usesGroup(schema: Schema, group: string): boolean {
    switch (group) {
      case "number":
        return NUMBER_BOUNDS.some((key) => schema[key] !== undefined);
      case "string":
        return schema.minLength !== undefined || schema.maxLength !== undefined;
      case "array":
        return schema.minItems !== undefined || schema.maxItems !== undefined || schema.items !== undefined;
      case "object":
        return schema.required !== undefined || schema.additionalProperties !== undefined ||
          schema.properties !== undefined;
      default:
        return false;
    }
  }

  #group(group: string, schema: Schema, data: unknown, at: string, schemaAt: string): void {
    if (group === "number") {
      const value = data as number;
      for (const key of NUMBER_BOUNDS) {
        const limit = schema[key];
        if (typeof limit !== "number") continue;
        const fails = key === "maximum"
          ? value > limit
          : key === "minimum"
          ? value < limit
          : key === "exclusiveMaximum"
          ? value >= limit
          : value <= limit;
        if (fails || isNaN(value)) {
          this.#error(
            at,
            schemaAt,
            key,
            { comparison: COMPARISON[key], limit },
            `must be ${COMPARISON[key]} ${limit}`,
            schema,
            data,
          );
        }
      }
    } else if (group === "string") {
      for (const key of ["maxLength", "minLength"] as const) {
        const limit = schema[key];
        if (typeof limit !== "number") continue;
        const length = codePoints(data as string);
        if (key === "maxLength" ? length > limit : length < limit) {
          const comparison = key === "maxLength" ? "more" : "fewer";
          this.#error(
            at,
            schemaAt,
            key,
            { limit },
            `must NOT have ${comparison} than ${limit} characters`,
            schema,
            data,
          );
        }
      }
    } else if (group === "array") {
      const items = data as unknown[];
      for (const key of ["maxItems", "minItems"] as const) {
        const limit = schema[key];
        if (typeof limit !== "number") continue;
        if (key === "maxItems" ? items.length > limit : items.length < limit) {
          const comparison = key === "maxItems" ? "more" : "fewer";
          this.#error(
            at,
            schemaAt,
            key,
            { limit },
            `must NOT have ${comparison} than ${limit} items`,
            schema,
            data,
          );
        }
      }
      if (isSchema(schema.items)) {
        for (let i = 0; i < items.length; i++) {
          this.check(schema.items, items[i], `${at}/${i}`, `${schemaAt}/items`);
        }
      }
    } else {
      this.#object(schema, data as Schema, at, schemaAt);
    }
  }

  #object(schema: Schema, data: Schema, at: string, schemaAt: string): void {
    if (Array.isArray(schema.required)) {
      for (const name of schema.required as string[]) {
        if (data[name] === undefined) {
          this.#error(
            at,
            schemaAt,
            "required",
            { missingProperty: name },
            `must have required property '${name}'`,
            schema,
            data,
          );
        }
      }
    }
    const properties = isSchema(schema.properties) ? schema.properties : undefined;
    const names = properties ? Object.keys(properties).filter((name) => name !== "__proto__") : [];
    const additional = schema.additionalProperties;
    if (additional === false || isSchema(additional)) {
      // ajv's own test for a declared name: by a list up to eight names, by the properties object beyond.
      const declared = names.length > 8
        ? (key: string) => Object.prototype.hasOwnProperty.call(properties, key)
        : (key: string) => names.includes(key);
      for (const key in data) {
        if (declared(key)) continue;
        if (additional === false) {
          this.#error(
            at,
            schemaAt,
            "additionalProperties",
            { additionalProperty: key },
            "must NOT have additional properties",
            schema,
            data,
          );
        } else {
          this.check(
            additional as Schema,
            data[key],
            `${at}/${pointer(key)}`,
            `${schemaAt}/additionalProperties`,
          );
        }
      }
    }
    for (const name of names) {
      const sub = (properties as Schema)[name] as Schema;
      if (data[name] !== undefined) {
        this.check(sub, data[name], `${at}/${pointer(name)}`, `${schemaAt}/properties/${fragment(name)}`);
      }
    }
  }
}

/**
 * A validator for `schema` with ajv's answers, or `undefined` when the schema needs ajv (see the module).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { smallValidator } from "./small_schema.ts";
 * const validate = smallValidator({ type: "object", required: ["n"], properties: { n: { type: "integer" } } })!;
 * assert.ok(validate({ n: 1 }));
 * assert.equal(validate({}), false);
 * assert.equal(validate.errors?.[0].message, "must have required property 'n'");
 * assert.equal(smallValidator({ type: "string", format: "email" }), undefined); // ajv checks formats
 * ```
 */
export function smallValidator(schema: Record<string, unknown>): SmallValidator | undefined {
  if (!within(schema, true)) return undefined;
  const validate: SmallValidator = (data: unknown) => {
    const run = new Run();
    run.check(schema, data, "", "#");
    validate.errors = run.errors.length > 0 ? run.errors : null;
    return run.errors.length === 0;
  };
  validate.errors = null;
  return validate;
}
