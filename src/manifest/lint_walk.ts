/**
 * The manifest lint's walk of a tool's argument schema: every object schema and every property, wherever it
 * nests, and every piece of model-facing text (the description, titles, property names); with the small readers
 * of a schema node the rules share.
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import type { ToolSpec } from "./manifest_types.ts";
import { EXAMPLE_MARKER } from "./lint_phrases.ts";

const quote = (text: string): string => JSON.stringify(text);

/**
 * A JSON Schema node, as the walk reads it.
 *
 * @example
 * ```ts
 * import type { Schema } from "./lint_walk.ts";
 * const schema: Schema = { type: "object", properties: {} };
 * ```
 */
export type Schema = Record<string, unknown>;

/**
 * A property gives an example: `e.g. ...` in its description, or `examples`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { givesExample } from "./lint_walk.ts";
 * assert.ok(givesExample({ type: "string", examples: ["a.txt"] }));
 * ```
 */
export function givesExample(schema: Schema): boolean {
  return (typeof schema.description === "string" && EXAMPLE_MARKER.test(schema.description)) ||
    (Array.isArray(schema.examples) && schema.examples.length > 0);
}

/**
 * The types a schema declares, as a list.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { typesOf } from "./lint_walk.ts";
 * assert.deepEqual(typesOf({ type: ["string", "null"] }), ["string", "null"]);
 * ```
 */
export function typesOf(schema: Schema): string[] {
  if (typeof schema.type === "string") return [schema.type];
  return Array.isArray(schema.type) ? schema.type.filter((t): t is string => typeof t === "string") : [];
}

function isObjectSchema(schema: Schema): boolean {
  const types = typesOf(schema);
  if (types.length > 0) return types.includes("object");
  return isRecord(schema.properties) || isRecord(schema.patternProperties);
}

/**
 * The values are spelled out by the schema itself (`enum`, `const`, or branches that are all `const`s).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hasClosedSet } from "./lint_walk.ts";
 * assert.ok(hasClosedSet({ type: "string", enum: ["a", "b"] }));
 * ```
 */
export function hasClosedSet(schema: Schema): boolean {
  if (Array.isArray(schema.enum) || "const" in schema) return true;
  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = schema[key];
    if (
      Array.isArray(branches) && branches.length > 0 && branches.every((b) => isRecord(b) && hasClosedSet(b))
    ) {
      return true;
    }
  }
  return isRecord(schema.items) && hasClosedSet(schema.items);
}

/** One property of an object schema, anywhere in a tool's schema. */
export interface PropertyAt {
  /** Where it is, as an argument path: `path`, `env[].name`, `anyOf[0].mode`, `$defs.point.x`. */
  readonly path: string;
  readonly schema: Schema;
  readonly optional: boolean;
  /** An enclosing property's description already gives an example of the whole value. */
  readonly exampled: boolean;
}

/** One object schema, anywhere in a tool's schema (`""` is the arguments object itself). */
export interface ObjectAt {
  readonly path: string;
  readonly schema: Schema;
}

const join = (path: string, name: string): string => path === "" ? name : `${path}.${name}`;

/**
 * Every object schema and every property of a tool's schema: through properties, patternProperties,
 * additionalProperties, items, prefixItems, additionalItems, anyOf/oneOf/allOf, not, if/then/else, $defs,
 * definitions and dependentSchemas.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { walkSchema } from "./lint_walk.ts";
 * assert.equal(walkSchema({ type: "object", properties: { path: { type: "string" } } }).properties[0].path, "path");
 * ```
 */
export function walkSchema(root: Schema): { objects: ObjectAt[]; properties: PropertyAt[] } {
  const objects: ObjectAt[] = [];
  const properties: PropertyAt[] = [];
  const visit = (node: unknown, path: string, exampled: boolean, isRoot = false): void => {
    if (!isRecord(node)) return;
    // The root is the arguments object whatever it declares: a schema of `{}` takes any arguments at all.
    if (isRoot || isObjectSchema(node)) objects.push({ path, schema: node });
    const required = Array.isArray(node.required) ? node.required : [];
    if (isRecord(node.properties)) {
      for (const [name, child] of Object.entries(node.properties)) {
        if (!isRecord(child)) continue;
        const at = join(path, name);
        properties.push({ path: at, schema: child, optional: !required.includes(name), exampled });
        visit(child, at, exampled || givesExample(child));
      }
    }
    const sub = (child: unknown, at: string) => visit(child, at, exampled);
    if (isRecord(node.patternProperties)) {
      for (const [pattern, child] of Object.entries(node.patternProperties)) {
        sub(child, join(path, `/${pattern}/`));
      }
    }
    sub(node.additionalProperties, join(path, "*"));
    if (Array.isArray(node.items)) node.items.forEach((child, i) => sub(child, `${path}[${i}]`));
    else sub(node.items, `${path}[]`);
    if (Array.isArray(node.prefixItems)) node.prefixItems.forEach((child, i) => sub(child, `${path}[${i}]`));
    sub(node.additionalItems, `${path}[]`);
    for (const key of ["anyOf", "oneOf", "allOf"] as const) {
      const branches = node[key];
      if (Array.isArray(branches)) branches.forEach((child, i) => sub(child, join(path, `${key}[${i}]`)));
    }
    for (const key of ["not", "if", "then", "else"] as const) sub(node[key], join(path, key));
    for (const key of ["$defs", "definitions", "dependentSchemas"] as const) {
      const defs = node[key];
      if (isRecord(defs)) {
        for (const [name, child] of Object.entries(defs)) sub(child, join(path, `${key}.${name}`));
      }
    }
  };
  visit(root, "", false, true);
  return { objects, properties };
}
/**
 * Every piece of model-facing text of a tool: its description, and each description, title and property name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { textsOf } from "./lint_walk.ts";
 * assert.deepEqual(textsOf({ description: "Read a file." }), [["description", "Read a file."]]);
 * ```
 */
export function textsOf(
  tool: Pick<ToolSpec, "description" | "schema">,
): Array<[where: string, text: string]> {
  const texts: Array<[string, string]> = [];
  if (tool.description !== undefined) texts.push(["description", tool.description]);
  if (tool.schema === undefined) return texts;
  const { objects, properties } = walkSchema(tool.schema);
  for (const { path, schema } of objects) {
    if (path === "") {
      for (const key of ["description", "title"] as const) {
        if (typeof schema[key] === "string") texts.push([`schema ${key}`, schema[key] as string]);
      }
    }
  }
  for (const { path, schema } of properties) {
    texts.push([`argument name ${quote(path)}`, path]);
    for (const key of ["description", "title"] as const) {
      if (typeof schema[key] === "string") texts.push([`argument ${quote(path)}`, schema[key] as string]);
    }
  }
  return texts;
}
