/**
 * The input side of the tool execution model: the JSON arguments on stdin, read into checked values with the
 * same leniency as the executor's preflight (string-encoded numbers and booleans, JSON-encoded arrays, empty
 * optional strings treated as absent), so a tool run without the preflight behaves the same.
 *
 * @module
 */
import { invalidArgs } from "./envelope.ts";

/** Reads all of stdin as the arguments object; empty input is `{}`. */
export async function readStdinArgs(): Promise<Args> {
  const raw = await new Response(Deno.stdin.readable).text();
  return Args.parse(raw);
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
 * import { Args } from "./args.ts";
 * const args = Args.parse('{"path":"a.txt","offset":"10"}');
 * args.string("path"); // "a.txt"
 * args.integer("offset", 0, { min: 0 }); // 10
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
  optionalString(name: string, fallback: string): string {
    const value = this.#get(name);
    if (value === undefined || value === null || value === "") return fallback;
    if (typeof value !== "string") throw invalidArgs(name, `${name} must be a string`, "a string");
    return value;
  }

  /** An optional string that keeps `""` when given (content that may be empty). */
  optionalText(name: string, fallback: string): string {
    const value = this.#get(name);
    if (value === undefined || value === null) return fallback;
    if (typeof value !== "string") throw invalidArgs(name, `${name} must be a string`, "a string");
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

  /** An optional value from a closed set, matched case-insensitively and returned in its declared form. */
  choice<T extends string>(name: string, choices: readonly T[], fallback: T): T {
    const value = this.#get(name);
    const expected = `one of ${choices.join(", ")}`;
    if (value === undefined || value === null || value === "") return fallback;
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

  /** Refuses any key no getter asked for, as `additionalProperties: false` does. */
  done(): void {
    for (const key of Object.keys(this.#values)) {
      if (!this.#seen.has(key)) {
        throw invalidArgs(
          key,
          `unknown argument ${JSON.stringify(key)}`,
          `only ${[...this.#seen].join(", ")}`,
        );
      }
    }
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
