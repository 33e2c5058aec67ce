/**
 * JSON Schema checking with ajv: the meta-schema check a manifest runs at load, and the compiled validators the
 * preflight uses, compiled once per schema on first use.
 *
 * @module
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "npm:ajv@8.17.1";
import { Ajv2019 } from "npm:ajv@8.17.1/dist/2019.js";
import { Ajv2020 } from "npm:ajv@8.17.1/dist/2020.js";
import addFormats from "npm:ajv-formats@3.0.1";

/** A compiled validator, or why the schema does not compile. */
export type Compiled = { ok: true; validate: ValidateFunction } | { ok: false; reason: string };

const DRAFT_2020 = /json-schema\.org\/draft\/2020-12\/schema/;
const DRAFT_2019 = /json-schema\.org\/draft\/2019-09\/schema/;

function newAjv<T extends Ajv>(Kind: new (options: object) => T): T {
  // ajv's own coercion stays off: the preflight coerces, so what ajv sees is what the tool gets.
  const ajv = new Kind({
    allErrors: true,
    // verbose: errors carry their parentSchema, which the preflight describes to the model as `expected`.
    verbose: true,
    strict: false,
    logger: false,
    coerceTypes: false,
    useDefaults: false,
    // ajv's optimizer passes over the generated code cost more than half of each compile (1,000 schemas: ~2.2 s
    // against ~1.0 s) and buy no measurable validation speed.
    code: { optimize: false },
  });
  (addFormats as unknown as (ajv: T) => void)(ajv);
  return ajv;
}

/** ajv's error list as one line. */
export function describeAjvErrors(errors: readonly ErrorObject[] | null | undefined): string {
  if (!errors || errors.length === 0) return "unknown error";
  return errors.map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword}`).join("; ");
}

/**
 * Owns the ajv instances of one manifest: checks schemas against the meta-schema and compiles them on demand,
 * each at most once.
 *
 * @example
 * ```ts
 * import { SchemaCompiler } from "./schema.ts";
 * const compiler = new SchemaCompiler();
 * compiler.check({ type: "object" }); // undefined (no problem)
 * const compiled = compiler.compile({ type: "object" });
 * compiled.ok && compiled.validate({}); // true
 * ```
 */
export class SchemaCompiler {
  #draft7?: Ajv;
  #draft2019?: Ajv;
  #draft2020?: Ajv;
  readonly #cache = new WeakMap<object, Compiled>();

  #ajvFor(schema: Record<string, unknown>): Ajv {
    if (typeof schema.$schema === "string" && DRAFT_2020.test(schema.$schema)) {
      return this.#draft2020 ??= newAjv(Ajv2020 as unknown as new (options: object) => Ajv);
    }
    // Each draft's meta-schema lives only in its own ajv class: Ajv2020 does not know 2019-09.
    if (typeof schema.$schema === "string" && DRAFT_2019.test(schema.$schema)) {
      return this.#draft2019 ??= newAjv(Ajv2019 as unknown as new (options: object) => Ajv);
    }
    return this.#draft7 ??= newAjv(Ajv);
  }

  /** Checks a schema against its meta-schema; returns the reason it is invalid, or `undefined`. */
  check(schema: Record<string, unknown>): string | undefined {
    const ajv = this.#ajvFor(schema);
    try {
      if (ajv.validateSchema(schema)) return undefined;
      return describeAjvErrors(ajv.errors);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  /** Compiles a schema once; later calls with the same object return the same validator. */
  compile(schema: Record<string, unknown>): Compiled {
    const cached = this.#cache.get(schema);
    if (cached) return cached;
    let compiled: Compiled;
    try {
      compiled = { ok: true, validate: this.#ajvFor(schema).compile(schema) };
    } catch (error) {
      compiled = { ok: false, reason: error instanceof Error ? error.message : String(error) };
    }
    this.#cache.set(schema, compiled);
    return compiled;
  }
}
