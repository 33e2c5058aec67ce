/**
 * Loads and validates a `tools.json` manifest (the agentcli format plus toolgate's optional fields) into
 * immutable tool specs, reporting every error with the tool's index and name. The types live in
 * `manifest_types.ts` and the check of one tool in `tool_check.ts`; both are exported from here too.
 *
 * @module
 */
import { dirname, join, resolve } from "../base/paths.ts";
import { sha256Hex } from "../base/sha256_hex.ts";
import { BinListing } from "./bin_listing.ts";
import { isRecord } from "../contract.ts";
import { parseJsonc, parsePlainJson } from "./jsonc.ts";
import { loadSchemaEngine, SchemaCompiler } from "./schema.ts";
import { readCache, writeCache } from "../state/state_cache.ts";
import { fnv1a64 } from "../state/state.ts";
import { checkServers, type ServerSpec } from "./server_spec.ts";
import { checkTool } from "./tool_check.ts";
import type { Manifest, ManifestOptions, ManifestResult, ToolSpec } from "./manifest_types.ts";

const KNOWN_ROOT_FIELDS = new Set(["tools", "$schema", "mcpServers"]);

/** Go's %q for the strings we quote: JSON's quoting agrees on everything printable. */
const quote = (value: string): string => JSON.stringify(value);

/**
 * Validates an already-parsed manifest value; `path` is the manifest's absolute path (commands resolve against
 * its folder).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { validateManifest } from "./manifest.ts";
 * const result = validateManifest({ tools: [{ name: "t", command: ["./tools/bin/t"] }] }, "/srv/tools.json");
 * assert.equal(result.ok && result.manifest.tools[0].program, "/srv/tools/bin/t");
 * ```
 */
export function validateManifest(
  value: unknown,
  path: string,
  options: ManifestOptions = {},
): ManifestResult {
  const errors: string[] = [];
  const warnings: string[] = [];
  const dir = dirname(path);
  const binDir = join(dir, "tools", "bin");
  const schemas = new SchemaCompiler();
  if (!isRecord(value)) {
    return { ok: false, errors: [`${path}: the manifest must be a JSON object`], warnings };
  }
  for (const key of Object.keys(value)) {
    if (!KNOWN_ROOT_FIELDS.has(key)) warnings.push(`${path}: unknown field ${quote(key)} (ignored)`);
  }
  let servers: ServerSpec[] = [];
  if (value.mcpServers !== undefined) {
    if (!isRecord(value.mcpServers)) {
      return { ok: false, errors: [`${path}: "mcpServers" must be an object`], warnings };
    }
    servers = checkServers(value.mcpServers, dir, options.profiles ?? new Map(), errors, warnings);
  }
  const rawTools = value.tools ?? [];
  if (!Array.isArray(rawTools)) return { ok: false, errors: [`${path}: "tools" must be an array`], warnings };
  // One listing of tools/bin for every command of the manifest.
  const bin = new BinListing(binDir);
  const context = {
    dir,
    bin,
    options,
    seen: new Set<string>(),
    schemas,
    profiles: options.profiles ?? new Map(),
  };
  const tools: ToolSpec[] = [];
  rawTools.forEach((entry, index) => {
    const tool = checkTool(entry, index, context, errors, warnings);
    if (tool) tools.push(tool);
  });
  if (errors.length > 0) return { ok: false, errors, warnings };
  const manifest: Manifest = Object.freeze({
    path,
    dir,
    binDir,
    tools: Object.freeze(tools),
    byName: new Map(tools.map((tool) => [tool.name, tool])),
    warnings: Object.freeze(warnings),
    servers: Object.freeze(servers),
  });
  return { ok: true, manifest, warnings };
}

/**
 * Reads, parses (JSONC) and validates a manifest file.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadManifest } from "./manifest.ts";
 * const result = await loadManifest("tools.json");
 * assert.ok(result.ok, result.ok ? "" : result.errors.join("\n"));
 * assert.ok(result.manifest.byName.has("get_time"));
 * ```
 */
export async function loadManifest(path: string, options: ManifestOptions = {}): Promise<ManifestResult> {
  const absolute = resolve(path);
  let text: string;
  try {
    text = options.text ?? await Deno.readTextFile(absolute);
  } catch (error) {
    const reason = error instanceof Deno.errors.NotFound ? "no such file" : (error as Error).message;
    return { ok: false, errors: [`${path}: cannot read the manifest: ${reason}`], warnings: [] };
  }
  const key = options.cacheDir === undefined ? undefined : await schemaCacheKey(text, options);
  const checked = key === undefined
    ? undefined
    : readCache<string[]>(options.cacheDir!, schemaCacheName(absolute), key);
  // These very bytes were a valid manifest before (so no key repeats): plain JSON needs no scan for repeated keys.
  const plain = checked === undefined ? undefined : parsePlainJson(text);
  const parsed = plain ? { ok: true as const, value: plain.value } : await parseJsonc(text, path);
  if (!parsed.ok) return { ok: false, errors: parsed.errors, warnings: [] };
  if (checked !== undefined) {
    const result = validateManifest(parsed.value, absolute, { ...options, schemasChecked: true });
    return result.ok ? withWarnings(result, checked) : result;
  }
  await loadSchemaEngine();
  // Compiling every schema (validate), a changed manifest compiles only the schemas no earlier run compiled.
  const compiledCache = options.compileSchemas && options.cacheDir !== undefined
    ? readCache<string[]>(options.cacheDir, "compiled-schemas", String(SCHEMA_RULES_VERSION)) ?? []
    : undefined;
  const passedSchemas: string[] = [];
  const result = validateManifest(parsed.value, absolute, {
    ...options,
    knownSchemas: compiledCache && new Set(compiledCache),
    passedSchemas: compiledCache && passedSchemas,
  });
  if (result.ok && key !== undefined) {
    // Only what the schemas said (the pattern warnings) is remembered; everything else is checked at every load.
    writeCache(options.cacheDir!, schemaCacheName(absolute), key, result.warnings.filter(isSchemaWarning));
  }
  if (compiledCache && passedSchemas.length > 0) {
    const latest = [...new Set([...passedSchemas, ...compiledCache])].slice(0, MAX_COMPILED_SCHEMAS);
    writeCache(options.cacheDir!, "compiled-schemas", String(SCHEMA_RULES_VERSION), latest);
  }
  return result;
}

/**
 * The schema cache's entry of the manifest at `path`: one per manifest file, so that a project's manifest and the
 * belt's (or a second project's) do not evict each other.
 */
function schemaCacheName(path: string): string {
  return `manifest-schemas-${fnv1a64(path)}`;
}

/** What the schema cache is keyed by: the manifest's bytes, how it is checked, and toolgate's schema rules. */
async function schemaCacheKey(text: string, options: ManifestOptions): Promise<string> {
  return `${SCHEMA_RULES_VERSION}|${options.compileSchemas ? "compiled" : "checked"}|${await sha256Hex(
    text,
  )}`;
}

/** The most schema digests remembered as compiled (the newest kept): about 17 bytes each. */
const MAX_COMPILED_SCHEMAS = 20_000;

/** Bumped when what the schema checks find changes: older cached verdicts are then ignored. */
const SCHEMA_RULES_VERSION = 2;

function isSchemaWarning(warning: string): boolean {
  return /: (schema|outputSchema): /.test(warning);
}

function withWarnings(result: ManifestResult & { ok: true }, more: readonly string[]): ManifestResult {
  const warnings = [...result.warnings, ...more.filter((w) => !result.warnings.includes(w))];
  return { ok: true, manifest: Object.freeze({ ...result.manifest, warnings }), warnings };
}
