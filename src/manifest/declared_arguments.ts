/**
 * The arguments a pinned schema declares: an MCP server's tool runs only with what the user trusted. A JSON Schema
 * that says nothing of `additionalProperties` lets any key through, so a server whose tool grew an argument while
 * it runs (a definition the user never saw) could be handed it; this finds the first key the schema does not name.
 * Where the schema itself opens an object (`additionalProperties` true or a schema, `patternProperties` that match),
 * the key is declared by it.
 *
 * Not here: the preflight that answers with it (`preflight.ts`), the pins themselves (`pins.ts`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";

/**
 * How deep a schema is followed (nested objects, `$ref`s, combinators) before the search stops looking; an argument
 * nested deeper that holds anything is refused.
 */
const MAX_DEPTH = 32;

/** What one object level of a schema declares. */
interface Declared {
  readonly names: Set<string>;
  readonly patterns: RegExp[];
  /** The schema says any other key is allowed (`additionalProperties` true or a schema). */
  open: boolean;
  /** The schema describes this object's keys (`properties` or `patternProperties`) at all. */
  described: boolean;
}

/**
 * The path of the first argument in `args` (nested ones included, `a.b`, `list[0].c`) that `schema` does not
 * declare, or `undefined` when every one is declared. The arguments object itself declares only the keys its
 * schema names; a nested object is checked where its schema lists `properties` (a bare `{"type":"object"}` holds
 * anything, as it says).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { undeclaredArgument } from "./declared_arguments.ts";
 * const schema = { type: "object", properties: { path: { type: "string" } } };
 * assert.equal(undeclaredArgument({ path: "a.txt" }, schema), undefined);
 * assert.equal(undeclaredArgument({ path: "a.txt", mode: "w" }, schema), "mode");
 * assert.equal(undeclaredArgument({ x: 1 }, { type: "object", additionalProperties: true }), undefined);
 * ```
 */
export function undeclaredArgument(args: Record<string, unknown>, schema: unknown): string | undefined {
  // A tool whose definition has no input schema declares no argument.
  if (!isRecord(schema)) return Object.keys(args)[0];
  return undeclaredIn(args, schema, schema, "", 0, true);
}

function undeclaredIn(
  value: unknown,
  schema: unknown,
  root: unknown,
  path: string,
  depth: number,
  top: boolean,
): string | undefined {
  // Deeper than the search looks, an argument that holds anything cannot be shown declared: it is refused (a
  // recursive schema would otherwise carry an undeclared key past the check, one level below where it stops).
  if (depth > MAX_DEPTH) {
    const holds = Array.isArray(value) ? value.length > 0 : isRecord(value) && Object.keys(value).length > 0;
    return holds ? path : undefined;
  }
  const resolved = resolveRef(schema, root);
  if (!isRecord(resolved)) return undefined;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const itemSchema = Array.isArray(resolved.prefixItems) && index < resolved.prefixItems.length
        ? resolved.prefixItems[index]
        : resolved.items;
      const found = undeclaredIn(item, itemSchema, root, `${path}[${index}]`, depth + 1, false);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (!isRecord(value)) return undefined;
  const declared = declaredAt(resolved, root, depth);
  for (const key of Object.keys(value)) {
    const at = path === "" ? key : `${path}.${key}`;
    const named = declared.names.has(key) || declared.patterns.some((pattern) => pattern.test(key));
    if (!named && !declared.open && (top || declared.described)) return at;
    for (const sub of propertySchemas(resolved, root, key, depth)) {
      const found = undeclaredIn(value[key], sub, root, at, depth + 1, false);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** The keys one object level declares, its combinators' branches included. */
function declaredAt(schema: Record<string, unknown>, root: unknown, depth: number): Declared {
  const declared: Declared = { names: new Set(), patterns: [], open: false, described: false };
  const visit = (node: unknown, level: number) => {
    const current = resolveRef(node, root);
    if (!isRecord(current) || level > MAX_DEPTH) return;
    if (isRecord(current.properties)) {
      declared.described = true;
      for (const name of Object.keys(current.properties)) declared.names.add(name);
    }
    if (isRecord(current.patternProperties)) {
      declared.described = true;
      for (const source of Object.keys(current.patternProperties)) {
        try {
          declared.patterns.push(new RegExp(source, "u"));
        } catch {
          // A pattern that does not compile declares nothing (the schema engine refuses it anyway).
        }
      }
    }
    for (const key of ["additionalProperties", "unevaluatedProperties"]) {
      if (current[key] === true || isRecord(current[key])) declared.open = true;
    }
    for (const key of ["allOf", "anyOf", "oneOf"]) {
      const branches = current[key];
      if (Array.isArray(branches)) { for (const branch of branches) visit(branch, level + 1); }
    }
  };
  visit(schema, depth);
  return declared;
}

/** The schemas a key's value must meet at this level: its `properties` entry, in every branch that has one. */
function propertySchemas(
  schema: Record<string, unknown>,
  root: unknown,
  key: string,
  depth: number,
): unknown[] {
  const found: unknown[] = [];
  const visit = (node: unknown, level: number) => {
    const current = resolveRef(node, root);
    if (!isRecord(current) || level > MAX_DEPTH) return;
    if (isRecord(current.properties) && Object.hasOwn(current.properties, key)) {
      found.push(current.properties[key]);
    }
    for (const combinator of ["allOf", "anyOf", "oneOf"]) {
      const branches = current[combinator];
      if (Array.isArray(branches)) { for (const branch of branches) visit(branch, level + 1); }
    }
  };
  visit(schema, depth);
  return found;
}

/** A local `$ref` (`#/...`) followed within the root schema; any other schema as it is. */
function resolveRef(schema: unknown, root: unknown): unknown {
  let current = schema;
  for (let hops = 0; hops < MAX_DEPTH && isRecord(current) && typeof current.$ref === "string"; hops++) {
    const ref = current.$ref;
    if (!ref.startsWith("#")) return current;
    let target: unknown = root;
    for (const segment of ref.slice(1).split("/").filter((s) => s !== "")) {
      if (!isRecord(target) && !Array.isArray(target)) return undefined;
      target = (target as Record<string, unknown>)[
        decodeURIComponent(segment).replaceAll("~1", "/").replaceAll("~0", "~")
      ];
    }
    current = target;
  }
  return current;
}
