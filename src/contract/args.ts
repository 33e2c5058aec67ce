/**
 * The input side of the tool execution model: the JSON arguments on stdin, read into checked values with the
 * same leniency as the executor's preflight (string-encoded numbers and booleans, JSON-encoded arrays, empty
 * optional strings treated as absent), so a tool run without the preflight behaves the same. A tool's arguments
 * are declared once, as a JSON Schema in `tools/schemas/` ({@linkcode ArgsSchema}): {@linkcode readArgs} reads
 * them by it (names, types, bounds, enums, defaults, required), and `tools.json` carries the very same schema.
 *
 * @module
 */
import { invalidArgs } from "./tool_output.ts";

/** What every argument's schema may say besides its type. */
interface ArgCommon {
  /** What the argument is, with an example: the model reads it, and an `invalid_args` failure quotes it. */
  readonly description?: string;
  /** An argument an approval question shows first (toolgate strips it before a model or an MCP host sees it). */
  readonly "x-toolgate-risk"?: true;
}

/** A string argument; `minLength: 1` refuses `""`, `enum` a closed set (matched case-insensitively). */
export interface StringArg extends ArgCommon {
  readonly type: "string";
  readonly enum?: readonly string[];
  readonly minLength?: number;
  readonly default?: string;
}

/** An integer argument; a string of digits is accepted. */
export interface IntegerArg extends ArgCommon {
  readonly type: "integer";
  readonly minimum?: number;
  readonly maximum?: number;
  readonly default?: number;
}

/** A boolean argument; `"true"`/`"false"`/`"1"`/`"0"`/`"yes"`/`"no"` are accepted. */
export interface BooleanArg extends ArgCommon {
  readonly type: "boolean";
  readonly default?: boolean;
}

/** An array argument: read raw (a JSON-encoded string decoded), its items checked by the tool itself. */
export interface ArrayArg extends ArgCommon {
  readonly type: "array";
  readonly items: Readonly<Record<string, unknown>>;
  readonly default?: readonly unknown[];
}

/** One argument's schema: the part of JSON Schema the built-in tools use, and {@linkcode readArgs} reads. */
export type ArgSchema = StringArg | IntegerArg | BooleanArg | ArrayArg;

/**
 * A tool's arguments: a strict JSON Schema object. An optional argument declares its `default`.
 *
 * @example
 * ```ts
 * import type { ArgsSchema } from "./args.ts";
 * const schema = {
 *   type: "object",
 *   properties: { path: { type: "string", minLength: 1, description: "Relative path, e.g. a.txt" } },
 *   required: ["path"],
 *   additionalProperties: false,
 * } as const satisfies ArgsSchema;
 * ```
 */
export interface ArgsSchema {
  readonly type: "object";
  readonly properties: Readonly<Record<string, ArgSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties: false;
}

/** The value one argument's schema reads to. */
export type ArgValue<P> = P extends { readonly enum: readonly (infer E)[] } ? E
  : P extends { readonly type: "string" } ? string
  : P extends { readonly type: "integer" } ? number
  : P extends { readonly type: "boolean" } ? boolean
  : unknown;

/** The arguments a schema reads to: every declared argument, given or defaulted. */
export type ArgValues<S extends ArgsSchema> = {
  -readonly [K in keyof S["properties"]]: ArgValue<S["properties"][K]>;
};

/**
 * Reads arguments by their schema: a missing required argument first, then an undeclared one, then each
 * argument in the schema's order, as the preflight reports them. Throws an `invalid_args` failure naming the
 * field, with what it expects.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Args, readArgs } from "./args.ts";
 * const schema = {
 *   type: "object",
 *   properties: { n: { type: "integer", minimum: 1, default: 5 }, mode: { type: "string", enum: ["a", "b"] } },
 *   required: ["mode"],
 *   additionalProperties: false,
 * } as const;
 * assert.deepEqual(readArgs(schema, Args.parse('{"n":"12","mode":"B"}')), { n: 12, mode: "b" });
 * ```
 */
export function readArgs<S extends ArgsSchema>(schema: S, args: Args): ArgValues<S> {
  const required = new Set<string>(schema.required ?? []);
  const names = Object.keys(schema.properties);
  for (const name of required) args.require(name, expectedOf(schema.properties[name], true));
  args.refuseUnknown(names);
  const values: Record<string, unknown> = {};
  for (const name of names) values[name] = readArg(args, name, schema.properties[name], required.has(name));
  return values as ArgValues<S>;
}

function readArg(args: Args, name: string, schema: ArgSchema, required: boolean): unknown {
  switch (schema.type) {
    case "string": {
      if (schema.enum !== undefined) return args.choice(name, schema.enum, schema.default);
      const expected = expectedOf(schema, required);
      if (required) return args.string(name, { allowEmpty: (schema.minLength ?? 0) < 1, expected });
      return args.optionalString(name, schema.default ?? "", expected);
    }
    case "integer":
      return args.integer(name, schema.default ?? 0, { min: schema.minimum, max: schema.maximum });
    case "boolean":
      return args.boolean(name, schema.default ?? false);
    case "array":
      return args.raw(name) ?? schema.default;
  }
}

/** What a value of `schema` looks like, in the words the getters use, with its description. */
function expectedOf(schema: ArgSchema, required: boolean): string {
  const words = schema.type === "string"
    ? (schema.enum
      ? `one of ${schema.enum.join(", ")}`
      : required && (schema.minLength ?? 0) >= 1
      ? "a non-empty string"
      : "a string")
    : schema.type === "integer"
    ? describeBounds({ min: schema.minimum, max: schema.maximum })
    : schema.type === "boolean"
    ? "true or false"
    : "an array";
  return schema.description ? `${words} (${schema.description})` : words;
}

/** Reads all of stdin as the arguments object (empty input is `{}`) and reads it by the tool's schema. */
export async function readStdinArgs<S extends ArgsSchema>(schema: S): Promise<ArgValues<S>> {
  return readArgs(schema, Args.parse(await readAllText(Deno.stdin)));
}

/**
 * All of a reader's bytes as UTF-8 text (as `Response.text()` decodes: a leading BOM dropped, bad bytes replaced),
 * with plain reads: `new Response(Deno.stdin.readable)` loads the runtime's fetch and streams code on first use,
 * about 5 ms of every built-in tool's start (measured with `--cpu-prof`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readAllText } from "./args.ts";
 * const file = await Deno.makeTempFile();
 * await Deno.writeTextFile(file, '{"n":1}');
 * using reader = await Deno.open(file);
 * assert.equal(await readAllText(reader), '{"n":1}');
 * ```
 */
export async function readAllText(
  reader: { read(buffer: Uint8Array): Promise<number | null> },
): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const buffer = new Uint8Array(65_536);
    const read = await reader.read(buffer);
    if (read === null) break;
    chunks.push(buffer.subarray(0, read));
    total += read;
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return new TextDecoder().decode(bytes);
}

/** Bounds of an integer argument. */
export interface IntegerOptions {
  min?: number;
  max?: number;
}

/**
 * The arguments of one call: typed getters that throw an `invalid_args` failure naming the field, and
 * {@linkcode Args.done} to refuse keys the tool does not know.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Args } from "./args.ts";
 * const args = Args.parse('{"path":"a.txt","offset":"10"}');
 * assert.equal(args.string("path"), "a.txt");
 * assert.equal(args.integer("offset", 0, { min: 0 }), 10);
 * args.done();
 * ```
 */
export class Args {
  readonly #values: Record<string, unknown>;
  readonly #seen = new Set<string>();

  private constructor(values: Record<string, unknown>) {
    this.#values = values;
  }

  /** Parses the arguments text: a JSON object (empty text is `{}`). */
  static parse(raw: string): Args {
    if (raw.trim() === "") return new Args({});
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      throw invalidArgs("arguments", "arguments are not valid JSON", "a JSON object");
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw invalidArgs("arguments", "arguments must be a JSON object", "a JSON object");
    }
    return new Args(value as Record<string, unknown>);
  }

  /** Arguments already parsed (toolgate's own tools read theirs after the preflight). */
  static of(values: Readonly<Record<string, unknown>>): Args {
    return new Args({ ...values });
  }

  #get(name: string): unknown {
    this.#seen.add(name);
    return Object.hasOwn(this.#values, name) ? this.#values[name] : undefined;
  }

  /** A required string; `allowEmpty` keeps `""` (e.g. new file contents). */
  string(name: string, options: { allowEmpty?: boolean; expected?: string } = {}): string {
    const value = this.#get(name);
    if (value === undefined || value === null) {
      throw invalidArgs(name, `missing required argument ${name}`, options.expected ?? "a string");
    }
    if (typeof value !== "string") {
      throw invalidArgs(name, `${name} must be a string`, options.expected ?? "a string");
    }
    if (!options.allowEmpty && value === "") {
      throw invalidArgs(name, `${name} must not be empty`, options.expected ?? "a non-empty string");
    }
    return value;
  }

  /** An optional string: `fallback` when absent, null or empty. */
  optionalString(name: string, fallback: string, expected = "a string"): string {
    const value = this.#get(name);
    if (value === undefined || value === null || value === "") return fallback;
    if (typeof value !== "string") throw invalidArgs(name, `${name} must be a string`, expected);
    return value;
  }

  /** An optional integer within bounds; a string of digits is accepted. */
  integer(name: string, fallback: number, bounds: IntegerOptions = {}): number {
    const value = this.#get(name);
    const expected = describeBounds(bounds);
    if (value === undefined || value === null || value === "") return fallback;
    const number = typeof value === "string" && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
    if (typeof number !== "number" || !Number.isSafeInteger(number)) {
      throw invalidArgs(name, `${name} must be an integer`, expected);
    }
    if (
      (bounds.min !== undefined && number < bounds.min) || (bounds.max !== undefined && number > bounds.max)
    ) {
      throw invalidArgs(name, `${name} is out of range: ${number}`, expected);
    }
    return number;
  }

  /** An optional boolean; `"true"`/`"false"`/`"1"`/`"0"`/`"yes"`/`"no"` are accepted. */
  boolean(name: string, fallback: boolean): boolean {
    const value = this.#get(name);
    if (value === undefined || value === null || value === "") return fallback;
    if (typeof value === "boolean") return value;
    if (typeof value === "string") {
      const lowered = value.trim().toLowerCase();
      if (["true", "1", "yes"].includes(lowered)) return true;
      if (["false", "0", "no"].includes(lowered)) return false;
    }
    throw invalidArgs(name, `${name} must be a boolean`, "true or false");
  }

  /**
   * A value from a closed set, matched case-insensitively and returned in its declared form; `fallback` when
   * absent, required when there is none.
   */
  choice<T extends string>(name: string, choices: readonly T[], fallback?: T): T {
    const value = this.#get(name);
    const expected = `one of ${choices.join(", ")}`;
    if (value === undefined || value === null || value === "") {
      if (fallback === undefined) throw invalidArgs(name, `missing required argument ${name}`, expected);
      return fallback;
    }
    if (typeof value !== "string") throw invalidArgs(name, `${name} must be a string`, expected);
    const found = choices.find((c) => c.toLowerCase() === value.trim().toLowerCase());
    if (found === undefined) {
      throw invalidArgs(name, `${name} has an unknown value ${JSON.stringify(value)}`, expected);
    }
    return found;
  }

  /** A raw value (for arrays and objects the tool checks itself); a JSON-encoded string is decoded. */
  raw(name: string): unknown {
    const value = this.#get(name);
    if (typeof value === "string" && /^\s*[[{]/.test(value)) {
      try {
        return JSON.parse(value);
      } catch {
        return value;
      }
    }
    return value;
  }

  /** Refuses a call without `name` (absent or null), as `required` does. */
  require(name: string, expected: string): void {
    const value = Object.hasOwn(this.#values, name) ? this.#values[name] : undefined;
    if (value === undefined || value === null) {
      throw invalidArgs(name, `missing required argument ${name}`, expected);
    }
  }

  /** Refuses any key but `names`, as `additionalProperties: false` does. */
  refuseUnknown(names: readonly string[]): void {
    for (const key of Object.keys(this.#values)) {
      if (!names.includes(key)) {
        throw invalidArgs(key, `unknown argument ${JSON.stringify(key)}`, `only ${names.join(", ")}`);
      }
    }
  }

  /** Refuses any key no getter asked for, as `additionalProperties: false` does. */
  done(): void {
    this.refuseUnknown([...this.#seen]);
  }
}

function describeBounds(bounds: IntegerOptions): string {
  if (bounds.min !== undefined && bounds.max !== undefined) {
    return `an integer from ${bounds.min} to ${bounds.max}`;
  }
  if (bounds.min !== undefined) return `an integer >= ${bounds.min}`;
  if (bounds.max !== undefined) return `an integer <= ${bounds.max}`;
  return "an integer";
}
