/**
 * JSON Schema checking: the meta-schema check a manifest runs at load, and the compiled validators the preflight
 * uses, compiled once per schema on first use. The engine behind it (ajv, and RE2 for every regular expression a
 * model's arguments meet: see `schema_engine.ts`) is loaded on demand with {@linkcode loadSchemaEngine}.
 *
 * @module
 */
import type { Ajv, ErrorObject } from "npm:ajv@8.17.1";
import { dialectProblem } from "./schema_dialect.ts";
import { type SmallValidator, smallValidator } from "./small_schema.ts";

/**
 * A compiled validator (ajv's, or the small one with ajv's answers: `small_schema.ts`), or why the schema does
 * not compile.
 */
export type Compiled = { ok: true; validate: SmallValidator } | { ok: false; reason: string };

const DRAFT_2020 = /json-schema\.org\/draft\/2020-12\/schema/;
const DRAFT_2019 = /json-schema\.org\/draft\/2019-09\/schema/;
const DRAFT_2020_URL = "https://json-schema.org/draft/2020-12/schema";

/**
 * Is `schema` one that names no draft but uses 2020-12's keywords, and reads whole as 2020-12? MCP reads a schema
 * without `$schema` as 2020-12, and so does toolgate, for a manifest's schema (an agentcli manifest's runs as it
 * is) and an MCP server's alike: read as draft-07, its 2020-12 keywords would check nothing. One that no draft
 * reads whole (draft-07's `additionalItems` beside 2020-12's `prefixItems`) is refused with its reason.
 */
function readsAs2020(schema: Record<string, unknown>): boolean {
  return schema.$schema === undefined && dialectProblem(schema) !== undefined &&
    dialectProblem({ ...schema, $schema: DRAFT_2020_URL }) === undefined;
}

type Engine = typeof import("./schema_engine.ts");
let engine: Engine | undefined;

/**
 * Loads the schema engine (ajv, RE2) once: every check and compile needs it first. `loadManifest` and the
 * executor load it when they must; a library user of {@linkcode SchemaCompiler} calls it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadSchemaEngine, SchemaCompiler } from "./schema.ts";
 * await loadSchemaEngine();
 * assert.equal(new SchemaCompiler().check({ type: "object" }), undefined);
 * ```
 */
export async function loadSchemaEngine(): Promise<void> {
  engine ??= await import("./schema_engine.ts");
}

/** Whether {@linkcode loadSchemaEngine} has run. */
export function schemaEngineLoaded(): boolean {
  return engine !== undefined;
}

function loaded(): Engine {
  if (engine === undefined) {
    throw new Error("the schema engine is not loaded: await loadSchemaEngine() first");
  }
  return engine;
}

/**
 * ajv's error list as one line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeAjvErrors } from "./schema.ts";
 * assert.equal(describeAjvErrors(null), "unknown error");
 * ```
 */
export function describeAjvErrors(errors: readonly ErrorObject[] | null | undefined): string {
  if (!errors || errors.length === 0) return "unknown error";
  return errors.map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword}`).join("; ");
}

/** Why each pattern of a schema cannot be matched in linear time (the engine must be loaded); see the engine. */
export function patternProblems(schema: Record<string, unknown>): string[] {
  return loaded().patternProblems(schema);
}

/**
 * The schema objects that passed the meta-schema check (here, or in an earlier run by a cache in toolgate's state
 * that the manifest loader trusts): compiling one of them skips ajv's own meta-schema check, whose first use
 * compiles the whole draft's meta-schema (some 16 ms of a built-in tool's first call). A schema object is frozen
 * once checked (`manifest.ts`), so the fact stays true.
 */
const checkedSchemas = new WeakSet<object>();

/**
 * Records that `schema` passed the meta-schema check: the manifest loader says so of a schema a cache vouches for.
 *
 * @example
 * ```ts
 * import { markSchemaChecked } from "./schema.ts";
 * markSchemaChecked({ type: "object" });
 * ```
 */
export function markSchemaChecked(schema: Record<string, unknown>): void {
  checkedSchemas.add(schema);
}

/**
 * Owns the ajv instances of one manifest: checks schemas against the meta-schema and compiles them on demand,
 * each at most once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadSchemaEngine, SchemaCompiler } from "./schema.ts";
 * await loadSchemaEngine();
 * const compiler = new SchemaCompiler();
 * assert.equal(compiler.check({ type: "object" }), undefined); // no problem
 * const compiled = compiler.compile({ type: "object" });
 * assert.ok(compiled.ok && compiled.validate({}));
 * ```
 */
export class SchemaCompiler {
  #draft7?: Ajv;
  #draft2019?: Ajv;
  #draft2020?: Ajv;
  readonly #cache = new WeakMap<object, Compiled>();

  #ajvFor(schema: Record<string, unknown>, as2020 = false): Ajv {
    if (as2020 || typeof schema.$schema === "string" && DRAFT_2020.test(schema.$schema)) {
      return this.#draft2020 ??= loaded().newAjv(
        loaded().DRAFTS.draft2020 as unknown as new (options: object) => Ajv,
      );
    }
    // Each draft's meta-schema lives only in its own ajv class: Ajv2020 does not know 2019-09.
    if (typeof schema.$schema === "string" && DRAFT_2019.test(schema.$schema)) {
      return this.#draft2019 ??= loaded().newAjv(
        loaded().DRAFTS.draft2019 as unknown as new (options: object) => Ajv,
      );
    }
    return this.#draft7 ??= loaded().newAjv(loaded().DRAFTS.draft7);
  }

  /**
   * Checks a schema against its meta-schema, and that it uses no keyword its draft would ignore (`schema_dialect.ts`;
   * one that names no draft and reads whole as 2020-12 is checked as 2020-12: {@linkcode readsAs2020}); returns
   * the reason it is invalid, or `undefined`.
   */
  check(schema: Record<string, unknown>): string | undefined {
    const as2020 = readsAs2020(schema);
    const ajv = this.#ajvFor(schema, as2020);
    try {
      if (ajv.validateSchema(schema)) {
        const dialect = as2020 ? undefined : dialectProblem(schema);
        if (dialect !== undefined) return dialect;
        checkedSchemas.add(schema);
        return undefined;
      }
      return describeAjvErrors(ajv.errors);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  /**
   * Makes ready what compiling `schema` needs: nothing when the small validator takes it (a schema that passed
   * the meta-schema check and keeps to its subset), else the schema engine.
   */
  async ready(schema: Record<string, unknown>): Promise<void> {
    if (this.#small(schema) === undefined) await loadSchemaEngine();
  }

  /** The small validator of a checked schema within its subset (made once), or `undefined`. */
  #small(schema: Record<string, unknown>): Compiled | undefined {
    const cached = this.#cache.get(schema);
    if (cached) return cached;
    // Only a checked schema: the small validator does not check a schema against the meta-schema.
    const validate = checkedSchemas.has(schema) ? smallValidator(schema) : undefined;
    if (validate === undefined) return undefined;
    const compiled: Compiled = { ok: true, validate };
    this.#cache.set(schema, compiled);
    return compiled;
  }

  /**
   * Compiles a schema once; later calls with the same object return the same validator. A schema with a keyword
   * its draft would ignore does not compile, but for one that names no draft and reads whole as 2020-12: it is
   * compiled as 2020-12 ({@linkcode readsAs2020}).
   */
  compile(schema: Record<string, unknown>): Compiled {
    const cached = this.#cache.get(schema);
    if (cached) return cached;
    let compiled: Compiled;
    const as2020 = readsAs2020(schema);
    const dialect = as2020 ? undefined : dialectProblem(schema);
    if (dialect !== undefined) {
      compiled = { ok: false, reason: dialect };
      this.#cache.set(schema, compiled);
      return compiled;
    }
    const small = as2020 ? undefined : this.#small(schema);
    if (small) return small;
    const ajv = this.#ajvFor(schema, as2020);
    // ajv reads this option at each compile: a schema checked already is not checked again.
    const options = ajv.opts as { validateSchema?: boolean | "log" };
    const validateSchema = options.validateSchema;
    if (checkedSchemas.has(schema)) options.validateSchema = false;
    try {
      compiled = { ok: true, validate: ajv.compile(schema) };
    } catch (error) {
      compiled = { ok: false, reason: error instanceof Error ? error.message : String(error) };
    } finally {
      options.validateSchema = validateSchema;
    }
    this.#cache.set(schema, compiled);
    return compiled;
  }
}
