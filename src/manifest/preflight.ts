/**
 * The preflight: turns a model's arguments text into a checked value, forgiving the slips local models make
 * (string-encoded scalars, arrays and objects, empty fillers, enum case, a stray `properties` wrapper) and
 * answering anything else with an `invalid_args` envelope that names the field and what it expects.
 *
 * @module
 */
import type { ErrorObject } from "npm:ajv@8.17.1";
import { failure, type FailureEnvelope, isRecord } from "../contract.ts";
import type { ToolSpec } from "./manifest_types.ts";
import type { SchemaCompiler } from "./schema.ts";
import { undeclaredArgument } from "./declared_arguments.ts";

/** The preflight's verdict: the arguments to send, or the envelope to answer with. */
export type PreflightResult = { ok: true; args: Record<string, unknown> } | {
  ok: false;
  envelope: FailureEnvelope;
};

type Schema = Record<string, unknown>;

function declaredTypes(schema: Schema): Set<string> | undefined {
  if (typeof schema.type === "string") return new Set([schema.type]);
  if (Array.isArray(schema.type)) {
    return new Set(schema.type.filter((t): t is string => typeof t === "string"));
  }
  return undefined;
}

const TRUE_WORDS = new Set(["true", "yes", "1"]);
const FALSE_WORDS = new Set(["false", "no", "0"]);
const INTEGER_TEXT = /^[+-]?\d+$/;
const NUMBER_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function parsedAs<T>(text: string, guard: (value: unknown) => value is T): T | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return guard(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A string the model sent where the schema wants another type, read as that type when it reads cleanly. */
function coerceString(value: string, schema: Schema, types: Set<string>): unknown {
  const text = value.trim();
  if (types.has("null") && text === "null") return null;
  if (types.has("integer") && INTEGER_TEXT.test(text) && Number.isSafeInteger(Number(text))) {
    return Number(text);
  }
  if (types.has("number") && NUMBER_TEXT.test(text) && Number.isFinite(Number(text))) return Number(text);
  if (types.has("boolean")) {
    const lower = text.toLowerCase();
    if (TRUE_WORDS.has(lower)) return true;
    if (FALSE_WORDS.has(lower)) return false;
  }
  if (types.has("array") && text.startsWith("[")) {
    const array = parsedAs(text, Array.isArray);
    if (array) return coerceValue(array, schema);
  }
  if (types.has("object") && text.startsWith("{")) {
    const object = parsedAs(text, isRecord);
    if (object) return coerceValue(object, schema);
  }
  return value;
}

function coerceValue(value: unknown, schema: unknown): unknown {
  if (!isRecord(schema)) return value;
  const types = declaredTypes(schema);
  if (typeof value === "string") {
    if (Array.isArray(schema.enum) && !schema.enum.includes(value)) {
      const lower = value.toLowerCase();
      const match = schema.enum.find((e) => typeof e === "string" && e.toLowerCase() === lower);
      if (match !== undefined) return match;
    }
    return types && !types.has("string") ? coerceString(value, schema, types) : value;
  }
  if (Array.isArray(value)) {
    return isRecord(schema.items) ? value.map((item) => coerceValue(item, schema.items)) : value;
  }
  if (isRecord(value) && isRecord(schema.properties)) return coerceObject(value, schema);
  return value;
}

function coerceObject(object: Record<string, unknown>, schema: Schema): Record<string, unknown> {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    const declared = Object.hasOwn(properties, key);
    // Many models fill unused optional fields with "": treat that as absent, but keep a required one so the
    // validator can say it must not be empty.
    if (declared && !required.has(key) && typeof value === "string" && value.trim() === "") continue;
    out[key] = declared ? coerceValue(value, properties[key]) : value;
  }
  return out;
}

/** `{"properties": {...}}` sent instead of the arguments themselves: unwrap it when that is clearly the slip. */
function unwrapProperties(args: Record<string, unknown>, schema: Schema): Record<string, unknown> {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const inner = args.properties;
  if (!isRecord(inner) || Object.hasOwn(properties, "properties")) return args;
  if (!Object.keys(inner).some((key) => Object.hasOwn(properties, key))) return args;
  const siblings = Object.entries(args).filter(([key]) =>
    key !== "properties" && Object.hasOwn(properties, key)
  );
  return { ...Object.fromEntries(siblings), ...inner };
}

/**
 * Applies the lenient coercions of the envelope contract to parsed arguments, guided by the tool's schema.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { coerceArguments } from "./preflight.ts";
 * const schema = { type: "object", properties: { n: { type: "integer" }, on: { type: "boolean" } } };
 * assert.deepEqual(coerceArguments({ n: "15", on: "Yes" }, schema), { n: 15, on: true });
 * ```
 */
export function coerceArguments(args: Record<string, unknown>, schema: Schema): Record<string, unknown> {
  return coerceObject(unwrapProperties(args, schema), schema);
}

/** A JSON pointer into `data` as a field path: `items[0].name`. */
function fieldPath(pointer: string, data: unknown, extra?: string): string {
  const segments = pointer === ""
    ? []
    : pointer.slice(1).split("/").map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
  if (extra !== undefined) segments.push(extra);
  let path = "";
  let current: unknown = data;
  for (const segment of segments) {
    path += Array.isArray(current) ? `[${segment}]` : (path === "" ? segment : `.${segment}`);
    current = isRecord(current) || Array.isArray(current)
      ? (current as Record<string, unknown>)[segment]
      : undefined;
  }
  return path;
}

function typeWords(schema: Schema): string | undefined {
  const types = declaredTypes(schema);
  if (!types) return undefined;
  return [...types].map((t) =>
    t === "array" && isRecord(schema.items) && typeof schema.items.type === "string"
      ? `array of ${schema.items.type}`
      : t
  ).join(" or ");
}

const BOUNDS: [string, string][] = [
  ["minimum", ">="],
  ["exclusiveMinimum", ">"],
  ["maximum", "<="],
  ["exclusiveMaximum", "<"],
  ["minLength", "length >="],
  ["maxLength", "length <="],
  ["minItems", "items >="],
  ["maxItems", "items <="],
];

/** What a value for `schema` looks like, in a few words a model can act on. */
export function describeSchema(schema: unknown): string {
  if (!isRecord(schema)) return "any JSON value";
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  if (schema.const !== undefined) return `exactly ${JSON.stringify(schema.const)}`;
  const parts = [typeWords(schema) ?? "a value"];
  for (const [key, words] of BOUNDS) {
    if (typeof schema[key] === "number") parts.push(`${words} ${schema[key]}`);
  }
  if (typeof schema.pattern === "string") parts.push(`matching /${schema.pattern}/`);
  if (typeof schema.format === "string") parts.push(`in ${schema.format} format`);
  let text = parts.join(", ");
  if (typeof schema.description === "string" && schema.description.trim() !== "") {
    text += ` (${schema.description.trim()})`;
  }
  return text;
}

/** A one-line example of the arguments object, built from the schema: what a model should send. */
export function exampleArguments(schema: Schema | undefined): string {
  const properties = schema && isRecord(schema.properties) ? schema.properties : {};
  const required = schema && Array.isArray(schema.required)
    ? schema.required.filter((r) => typeof r === "string")
    : [];
  const keys = required.length > 0 ? required : Object.keys(properties).slice(0, 3);
  const example: Record<string, unknown> = {};
  for (const key of keys) {
    const property = properties[key];
    const types = isRecord(property) ? declaredTypes(property) : undefined;
    if (isRecord(property) && Array.isArray(property.enum)) example[key] = property.enum[0];
    else if (isRecord(property) && property.default !== undefined) example[key] = property.default;
    else if (types?.has("integer") || types?.has("number")) example[key] = 1;
    else if (types?.has("boolean")) example[key] = true;
    else if (types?.has("array")) example[key] = [];
    else if (types?.has("object")) example[key] = {};
    else example[key] = "...";
  }
  return JSON.stringify(example);
}

function schemaAt(root: Schema, pointer: string): unknown {
  let current: unknown = root;
  for (const segment of pointer.split("/").slice(1)) {
    if (!isRecord(current)) return undefined;
    current = current[segment.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return current;
}

const ERROR_ORDER = (error: ErrorObject): number =>
  error.keyword === "required" ? 0 : error.keyword === "additionalProperties" ? 1 : 2;

function invalidFromAjv(
  errors: readonly ErrorObject[],
  data: unknown,
  root: Schema,
  tool: string,
): FailureEnvelope {
  // ajv reports every error; the model gets the first by a fixed order: missing, then unexpected, then the rest.
  const error = [...errors].sort((a, b) => ERROR_ORDER(a) - ERROR_ORDER(b))[0];
  if (error.keyword === "required") {
    const missing = String(error.params.missingProperty);
    const field = fieldPath(error.instancePath, data, missing);
    const parent = isRecord(error.parentSchema)
      ? error.parentSchema
      : schemaAt(root, error.schemaPath.replace(/^#/, "").replace(/\/required$/, ""));
    const propertySchema = isRecord(parent) && isRecord(parent.properties)
      ? parent.properties[missing]
      : undefined;
    const expected = describeSchema(propertySchema);
    return failure("invalid_args", `Missing required argument \`${field}\`: ${expected}.`, {
      field,
      expected,
      tool,
    });
  }
  if (error.keyword === "additionalProperties") {
    const extra = String(error.params.additionalProperty);
    const field = fieldPath(error.instancePath, data, extra);
    const parent = error.parentSchema;
    const allowed = isRecord(parent) && isRecord(parent.properties) ? Object.keys(parent.properties) : [];
    const expected = allowed.length > 0 ? `only these arguments: ${allowed.join(", ")}` : "no arguments";
    return failure(
      "invalid_args",
      `Unexpected argument \`${field}\`; allowed: ${allowed.join(", ") || "none"}.`,
      {
        field,
        expected,
        tool,
      },
    );
  }
  const field = fieldPath(error.instancePath, data) || undefined;
  const expected = describeSchema(error.parentSchema);
  const subject = field ? `argument \`${field}\`` : "arguments";
  return failure(
    "invalid_args",
    `Invalid ${subject}: ${error.message ?? error.keyword} (expected ${expected}).`,
    {
      field,
      expected,
      tool,
    },
  );
}

/**
 * An MCP server's tool gets only the arguments its pinned schema declares (its spec's schema is the pinned one):
 * an undeclared one is `invalid_args`, named, even where the schema leaves `additionalProperties` open.
 */
function pinnedOnly(tool: ToolSpec, args: Record<string, unknown>): PreflightResult {
  if (tool.upstream === undefined) return { ok: true, args };
  const field = undeclaredArgument(args, tool.schema);
  if (field === undefined) return { ok: true, args };
  // A nested one is named by its path; the arguments' own names are listed for a top-level one.
  const top = !/[.[]/.test(field);
  const allowed = top && isRecord(tool.schema) && isRecord(tool.schema.properties)
    ? Object.keys(tool.schema.properties)
    : [];
  const expected = !top
    ? "only what the trusted schema declares"
    : allowed.length > 0
    ? `only these arguments: ${allowed.join(", ")}`
    : "no arguments";
  return {
    ok: false,
    envelope: failure(
      "invalid_args",
      `Unexpected argument \`${field}\`: the MCP server's tool was trusted without it, so it is not sent` +
        (top ? `; allowed: ${allowed.join(", ") || "none"}.` : "."),
      { field, expected, tool: tool.name },
    ),
  };
}

/**
 * Parses, coerces and validates a tool call's arguments text against the tool's schema.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { preflight } from "./preflight.ts";
 * import { loadManifest } from "./manifest.ts";
 * import { SchemaCompiler } from "./schema.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const tool = loaded.manifest.byName.get("get_time")!;
 * const verdict = preflight(tool, '{"timezone": "UTC"}', new SchemaCompiler());
 * assert.ok(verdict.ok);
 * assert.equal(verdict.args.timezone, "UTC");
 * ```
 */
export function preflight(tool: ToolSpec, argsText: string, schemas: SchemaCompiler): PreflightResult {
  let parsed: unknown;
  const trimmed = argsText.trim();
  try {
    parsed = trimmed === "" ? {} : JSON.parse(trimmed);
  } catch {
    parsed = undefined;
  }
  const schema = tool.schema as Schema | undefined;
  if (!isRecord(parsed)) {
    const example = exampleArguments(schema);
    return {
      ok: false,
      envelope: failure("invalid_args", `Arguments must be a JSON object, e.g. ${example}`, {
        expected: example,
        tool: tool.name,
      }),
    };
  }
  if (!schema) return pinnedOnly(tool, parsed);
  const args = coerceArguments(parsed, schema);
  const compiled = schemas.compile(schema);
  if (!compiled.ok) {
    return {
      ok: false,
      envelope: failure("unavailable", `The tool's schema does not compile: ${compiled.reason}`, {
        tool: tool.name,
        retryable: false,
      }),
    };
  }
  if (compiled.validate(args)) return pinnedOnly(tool, args);
  return { ok: false, envelope: invalidFromAjv(compiled.validate.errors ?? [], args, schema, tool.name) };
}
