/**
 * Loads and validates a `tools.json` manifest (the agentcli format plus toolgate's optional fields) into
 * immutable tool specs, reporting every error with the tool's index and name.
 *
 * One piece: the manifest's types, the check of one tool and the loading of the file share the spec types and
 * one list of errors (each with the tool's index and name). What splits it, after the branches that edit it
 * have landed: types, one tool's check, loading (STYLE.md §3).
 *
 * @module
 */
import { dirname, isAbsolute, isWindowsAbsolute, join, normalize, resolve } from "../base/paths.ts";
import { BinListing } from "./bin_listing.ts";
import { ENV_NAME_PATTERN } from "../base/env_name.ts";
import { isRecord } from "../contract.ts";
import { parseJsonc, parsePlainJson } from "./jsonc.ts";
import { declaredProfile, type PermissionProfile, type ProfileResult, resolveProfile } from "./profiles.ts";
import {
  loadSchemaEngine,
  markSchemaChecked,
  patternProblems,
  SchemaCompiler,
  schemaEngineLoaded,
} from "./schema.ts";
import { readCache, writeCache } from "../state/state_cache.ts";
import { fnv1a64 } from "../state/state.ts";
import { beltToolOf } from "./tool_belt.ts";
import type { PinnedProgram } from "./trust.ts";
import { type Asked, TOOL_ASKS, TOOL_PROTOCOLS, type ToolProtocol } from "./tool_protocol.ts";
import { checkCredentials, type CredentialBinding } from "./credentials.ts";
import { checkServers, type ServerSpec } from "./server_spec.ts";

/**
 * One validated tool: what the runner needs to start it and what the exports need to describe it.
 *
 * @example
 * ```ts
 * import { loadManifest, type ToolSpec } from "./manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * const tool: ToolSpec | undefined = loaded.ok ? loaded.manifest.byName.get("get_time") : undefined;
 * tool?.program; // "/abs/path/to/tools/bin/get_time"
 * ```
 */
export interface ToolSpec {
  /** Position in the manifest's `tools` array. */
  readonly index: number;
  /** The tool's name, unique in the manifest (`^[A-Za-z0-9_-]{1,64}$`). */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description?: string;
  /** The JSON Schema of the arguments, as written. */
  readonly schema?: Readonly<Record<string, unknown>>;
  /**
   * The JSON Schema of the tool's success `result`, as written: always an object schema (`type: "object"`), as
   * MCP requires of an `outputSchema`.
   */
  readonly outputSchema?: Readonly<Record<string, unknown>>;
  /** The argv as written in the manifest. */
  readonly command: readonly string[];
  /** `command[0]` resolved to an absolute path (against the manifest's folder when relative). */
  readonly program: string;
  /** The fixed arguments after the program. */
  readonly args: readonly string[];
  /**
   * Per-call wall-clock timeout in seconds; the caller's default applies when absent; 0 (only beside
   * `idleTimeoutSec`) means no wall-clock limit.
   */
  readonly timeoutSec?: number;
  /** Stop the call when it printed nothing on stdout or stderr for this many seconds; absent: no idle limit. */
  readonly idleTimeoutSec?: number;
  /** Upper-cased, de-duplicated names of the variables passed from the parent. */
  readonly envPassthrough: readonly string[];
  /**
   * Upper-cased, de-duplicated names of the secrets the tool receives as variables: from toolgate's secret store
   * first, then from toolgate's environment. A call whose secret is in neither answers `unavailable` with
   * `credential` before the tool starts.
   */
  readonly secrets: readonly string[];
  /** Secrets bound to hosts: the tool gets a placeholder, the egress proxy puts the value in (`credentials.ts`). */
  readonly credentials: readonly CredentialBinding[];
  /** The tool has no side effects: it needs no approval. */
  readonly readOnly: boolean;
  /** The tool may run in parallel with other calls. */
  readonly concurrent: boolean;
  /** The tool is always sent in full, even when the tools are disclosed to the model on demand. */
  readonly alwaysLoad: boolean;
  /**
   * The protocol the tool speaks on stdout (`"toolgate/1"`: JSON messages, one a line, see `tool_protocol.ts`);
   * absent: one JSON answer, as always.
   */
  readonly protocol?: ToolProtocol;
  /**
   * Whom a `toolgate/1` tool may ask while it runs (`"user"`: elicitation, `"model"`: sampling); empty: nobody.
   * A tool that asks keeps its stdin open after the arguments line and reads the answers there.
   */
  readonly asks: readonly Asked[];
  /** What the tool may touch once confined (the `default` profile when the entry names none). */
  readonly profile: PermissionProfile;
  /**
   * The built-in tool this is (its program is one of toolgate's own launchers): it runs with toolgate's own
   * runtime, wherever `deno` is or is not on PATH.
   */
  readonly builtin?: string;
  /** Did the program exist when the manifest was loaded? One that appears later is not run. */
  readonly present: boolean;
  /** A tool of an MCP server of `mcpServers` (listed as `mcp__SERVER__TOOL`): the gateway runs it. */
  readonly upstream?: { readonly server: string; readonly tool: string };
}

/**
 * A validated manifest.
 *
 * @example
 * ```ts
 * import { loadManifest } from "./manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (loaded.ok) console.log(loaded.manifest.tools.map((tool) => tool.name));
 * ```
 */
export interface Manifest {
  /** Absolute path of the manifest file. */
  readonly path: string;
  /** The folder relative commands resolve against. */
  readonly dir: string;
  /** `<dir>/tools/bin`, the only place relative commands may point into. */
  readonly binDir: string;
  /** The tools, in manifest order. */
  readonly tools: readonly ToolSpec[];
  /** The tools by name. */
  readonly byName: ReadonlyMap<string, ToolSpec>;
  /** Non-fatal findings (unknown fields). */
  readonly warnings: readonly string[];
  /** The MCP servers of `mcpServers` (a disabled one left out), whose tools the gateway adds. */
  readonly servers: readonly ServerSpec[];
  /**
   * A trusted manifest's programs as they were trusted, by resolved path (see `trust.ts`): a program that is not
   * among them, or no longer what it was, is not run. Absent: a manifest the user named, or toolgate's own.
   */
  readonly pinned?: ReadonlyMap<string, PinnedProgram>;
}

/**
 * The outcome of loading: a manifest, or every error found (warnings either way).
 *
 * @example
 * ```ts
 * import { loadManifest } from "./manifest.ts";
 * const result = await loadManifest("tools.json");
 * if (!result.ok) for (const error of result.errors) console.error(error); // tool[3] "fetch": duplicate name
 * for (const warning of result.warnings) console.error(`warning: ${warning}`);
 * ```
 */
export type ManifestResult =
  | { ok: true; manifest: Manifest; warnings: readonly string[] }
  | { ok: false; errors: readonly string[]; warnings: readonly string[] };

/**
 * Options of {@linkcode loadManifest}.
 *
 * @example
 * ```ts
 * import { loadManifest } from "./manifest.ts";
 * await loadManifest("tests/fixtures/manifest.json", { allowAbsoluteCommands: true, compileSchemas: true });
 * ```
 */
export interface ManifestOptions {
  /** Accept absolute `command[0]` paths (meant for tests). */
  allowAbsoluteCommands?: boolean;
  /** Compile every schema now, so that a schema ajv cannot compile is a manifest error (the `validate` command). */
  compileSchemas?: boolean;
  /**
   * Check that every tool's program is there, a regular executable file, so that one that is not is a manifest
   * error naming the tool (the `validate` command). Other loads leave it to the call, which answers `unavailable`:
   * one missing program must not take every other tool down with it.
   */
  checkPrograms?: boolean;
  /**
   * Where {@linkcode loadManifest} remembers manifests whose schemas passed (toolgate's state folder): an unchanged
   * manifest is then loaded without the schema engine. Absent: no cache.
   */
  cacheDir?: string;
  /**
   * The schemas were checked already (a cache says so): skip the meta-schema check, the compile and the pattern
   * warnings. Set by {@linkcode loadManifest}; a caller of {@linkcode validateManifest} leaves it out.
   */
  schemasChecked?: boolean;
  /**
   * Digests of single schemas that passed every check and compiled before (with `compileSchemas`): they are not
   * checked again, so that a changed manifest compiles only its new schemas. Set by {@linkcode loadManifest}.
   */
  knownSchemas?: ReadonlySet<string>;
  /** Receives the digest of each schema that passes every check and compiles, with no warning (see above). */
  passedSchemas?: string[];
  /** The manifest's text, read already (the trust gate digested these bytes): the file is not read again. */
  text?: string;
  /** Profiles resolved already (by the trust gate), by name: a profile file is not read again. */
  profiles?: Map<string, ProfileResult>;
}

/**
 * The OpenAI function-name rule.
 *
 * @example
 * ```ts
 * import { TOOL_NAME_PATTERN } from "./manifest.ts";
 * TOOL_NAME_PATTERN.test("get_time"); // true
 * TOOL_NAME_PATTERN.test("get time"); // false
 * ```
 */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * The name of the in-process tool toolgate offers beside a manifest's (src/run/store_secret.ts): reserved, no
 * manifest tool may take it.
 *
 * @example
 * ```ts
 * import { STORE_SECRET } from "./manifest.ts";
 * STORE_SECRET; // "store_secret"
 * ```
 */
export const STORE_SECRET = "store_secret";

/** The longest timer a runtime keeps (2^31-1 ms); a longer one fires at once, so the tool would time out at once. */
const MAX_TIMEOUT_SEC = Math.floor((2 ** 31 - 1) / 1000);
const BIN_PREFIX = "tools/bin/";
const KNOWN_FIELDS = new Set([
  "name",
  "description",
  "schema",
  "command",
  "timeoutSec",
  "idleTimeoutSec",
  "envPassthrough",
  "secrets",
  "credentials",
  "readOnly",
  "concurrent",
  "protocol",
  "asks",
  "permissions",
  "alwaysLoad",
  "outputSchema",
]);
const KNOWN_ROOT_FIELDS = new Set(["tools", "$schema", "mcpServers"]);

/** Go's %q for the strings we quote: JSON's quoting agrees on everything printable. */
const quote = (value: string): string => JSON.stringify(value);

function isAbsoluteAnywhere(path: string): boolean {
  return isAbsolute(path) || isWindowsAbsolute(path);
}

/** Normalizes a relative command path with `\` as a separator too, without a leading `./`. */
function normalizeRelative(raw: string): string {
  return normalize(raw.replaceAll("\\", "/"));
}

interface Checked<T> {
  value?: T;
  error?: string;
}

function checkCommand(
  raw: unknown,
  dir: string,
  bin: BinListing,
  options: ManifestOptions,
): Checked<{ program: string; command: string[] }> {
  // agentcli reads a missing or null command as an empty one: same message, so its users see what they know.
  if (raw === undefined || raw === null) return { error: "command must have at least program name" };
  if (!Array.isArray(raw) || raw.some((part) => typeof part !== "string")) {
    return { error: "command must be an array of strings" };
  }
  if (raw.length === 0) return { error: "command must have at least program name" };
  const command = raw as string[];
  const first = command[0];
  let program: string;
  if (first !== "" && isAbsoluteAnywhere(first)) {
    if (!options.allowAbsoluteCommands) {
      return {
        error: `absolute command[0] ${
          quote(first)
        } is refused; pass --allow-absolute-commands to allow it (meant for tests)`,
      };
    }
    program = resolve(first);
  } else {
    const normalized = normalizeRelative(first);
    const slashed = first.replaceAll("\\", "/").replace(/^(\.\/)+/, "");
    if (slashed.startsWith(BIN_PREFIX)) {
      // `./tools/bin/.` names the folder itself: it does not escape, it names no program.
      if (normalized === BIN_PREFIX || normalized === BIN_PREFIX.slice(0, -1)) {
        return { error: `command[0] must name a program inside ./tools/bin/ (got ${quote(first)})` };
      }
      if (!normalized.startsWith(BIN_PREFIX)) {
        return {
          error: `command[0] escapes ./tools/bin after normalization (got ${quote(first)} -> ${
            quote("./" + normalized)
          })`,
        };
      }
    } else if (normalized === ".." || normalized.startsWith("../")) {
      return {
        error: `command[0] escapes ./tools/bin after normalization (got ${quote(first)} -> ${
          quote(normalized)
        })`,
      };
    } else {
      return { error: "relative command[0] must start with ./tools/bin/" };
    }
    program = join(dir, normalized);
    const outside = bin.escapes(program);
    if (outside !== undefined) {
      return {
        error: `command[0] ${quote(first)} resolves outside ./tools/bin through a symlink (-> ${
          quote(outside)
        })`,
      };
    }
  }
  return { value: { program, command } };
}

/**
 * Normalizes a list of variable names (`envPassthrough`, `secrets`); every bad entry is an error of its own
 * (agentcli stops at the first).
 */
function checkEnvNames(raw: unknown, errors: string[], key = "envPassthrough"): string[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) {
    errors.push(`${key} must be an array of strings`);
    return [];
  }
  const names: string[] = [];
  for (const [j, entry] of raw.entries()) {
    if (typeof entry !== "string") {
      errors.push(`${key}[${j}]: must be a string`);
      continue;
    }
    const trimmed = entry.trim();
    if (trimmed === "") {
      errors.push(`${key}[${j}]: empty name`);
      continue;
    }
    const upper = trimmed.toUpperCase();
    if (!ENV_NAME_PATTERN.test(upper)) {
      errors.push(`${key}[${j}]: invalid name ${quote(entry)} (must match [A-Z_][A-Z0-9_]*)`);
      continue;
    }
    if (!names.includes(upper)) names.push(upper);
  }
  return names;
}

/**
 * `asks`: whom the tool may ask, each of {@linkcode TOOL_ASKS} at most once, and only for a tool that speaks
 * `toolgate/1` (a question is one of its messages, and the answers come on its stdin).
 */
function checkAsks(raw: unknown, protocol: unknown, errors: string[]): Asked[] {
  if (raw === undefined) return [];
  const allowed = TOOL_ASKS.map((a) => quote(a)).join(", ");
  if (!Array.isArray(raw) || raw.some((item) => !TOOL_ASKS.includes(item as Asked))) {
    errors.push(`asks must be an array of ${allowed} (got ${JSON.stringify(raw)})`);
    return [];
  }
  if (protocol === undefined) errors.push('asks requires "protocol": "toolgate/1"');
  return [...new Set(raw as Asked[])];
}

function checkOptionalBoolean(entry: Record<string, unknown>, key: string, errors: string[]): boolean {
  const value = entry[key];
  if (value === undefined) return false;
  if (typeof value !== "boolean") {
    errors.push(`${key} must be a boolean`);
    return false;
  }
  return value;
}

/** A JSON Schema field (`schema`, `outputSchema`): an object the meta-schema accepts (and ajv compiles, when asked). */
function checkSchema(
  entry: Record<string, unknown>,
  key: "schema" | "outputSchema",
  context: { options: ManifestOptions; schemas: SchemaCompiler },
  errors: string[],
  warn: (message: string) => void,
): Record<string, unknown> | undefined {
  const value = entry[key];
  if (value === undefined) return undefined;
  if (!isRecord(value)) {
    errors.push(`${key} must be a JSON object`);
    return undefined;
  }
  const risk = key === "schema" ? riskAnnotationProblem(value) : undefined;
  const { knownSchemas, passedSchemas } = context.options;
  const digest = knownSchemas || passedSchemas ? fnv1a64(JSON.stringify(value)) : undefined;
  // Schemas a cache says were checked (the same bytes, the same toolgate) skip the engine altogether.
  if (context.options.schemasChecked || (digest !== undefined && knownSchemas?.has(digest))) {
    if (risk !== undefined) errors.push(`${key} is invalid: ${risk}`);
    else markSchemaChecked(value);
    return risk === undefined ? value : undefined;
  }
  if (!schemaEngineLoaded()) {
    throw new Error("validateManifest checks schemas: await loadSchemaEngine() first (loadManifest does)");
  }
  const problem = context.schemas.check(value) ?? risk ??
    (context.options.compileSchemas ? compileProblem(context.schemas, value) : undefined);
  if (problem !== undefined) {
    errors.push(`${key} is invalid: ${problem}`);
    return undefined;
  }
  // Schemas compile at a tool's first call: say now what will make its calls fail then.
  const patterns = patternProblems(value);
  for (const pattern of patterns) warn(`${key}: ${pattern}; calls of this tool will be answered unavailable`);
  if (digest !== undefined && patterns.length === 0 && context.options.compileSchemas) {
    passedSchemas?.push(digest);
  }
  return value;
}

function checkTool(
  entry: unknown,
  index: number,
  context: {
    dir: string;
    bin: BinListing;
    options: ManifestOptions;
    seen: Set<string>;
    schemas: SchemaCompiler;
    profiles: Map<string, ProfileResult>;
  },
  errors: string[],
  warnings: string[],
): ToolSpec | undefined {
  if (!isRecord(entry)) {
    errors.push(`tool[${index}]: must be an object`);
    return undefined;
  }
  const rawName = entry.name;
  if (rawName === undefined || rawName === "" || rawName === null) {
    errors.push(`tool[${index}]: name is required`);
    return undefined;
  }
  if (typeof rawName !== "string") {
    errors.push(`tool[${index}]: name must be a string`);
    return undefined;
  }
  const prefix = `tool[${index}] ${quote(rawName)}: `;
  const own: string[] = [];
  if (!TOOL_NAME_PATTERN.test(rawName)) own.push("name must match ^[A-Za-z0-9_-]{1,64}$");
  if (context.seen.has(rawName)) own.push("duplicate name");
  if (rawName === STORE_SECRET) {
    own.push("the name is toolgate's own (the secret tool every caller offers); rename the tool");
  }
  context.seen.add(rawName);

  if (entry.description !== undefined && typeof entry.description !== "string") {
    own.push("description must be a string");
  }
  const warn = (message: string) => warnings.push(`${prefix}${message}`);
  const schema = checkSchema(entry, "schema", context, own, warn);
  const outputSchema = checkSchema(entry, "outputSchema", context, own, warn);
  // MCP's structuredContent is a JSON object, so an outputSchema that describes anything else cannot be served.
  if (outputSchema !== undefined && outputSchema.type !== "object") {
    const got = outputSchema.type === undefined ? "no type" : JSON.stringify(outputSchema.type);
    own.push(`outputSchema must have "type": "object", as MCP requires (got ${got})`);
  }
  const command = checkCommand(entry.command, context.dir, context.bin, context.options);
  if (command.error) own.push(command.error);
  // A built-in tool runs with toolgate's own runtime: a bundle or a binary carries it without its launcher file.
  if (context.options.checkPrograms && command.value && beltToolOf(command.value.program) === undefined) {
    const problem = programProblem(command.value.program);
    if (problem !== undefined) own.push(problem);
  }
  const timeout = entry.timeoutSec;
  const idle = entry.idleTimeoutSec;
  const idleProblem = secondsProblem("idleTimeoutSec", idle);
  if (idleProblem !== undefined) own.push(idleProblem);
  if (timeout === 0 && idle !== undefined) {
    // No wall-clock limit: the idle timeout is the call's only one (a build that prints as it goes).
  } else {
    const problem = secondsProblem("timeoutSec", timeout);
    if (problem !== undefined) own.push(problem);
  }
  const env = checkEnvNames(entry.envPassthrough, own);
  const secrets = checkEnvNames(entry.secrets, own, "secrets");
  const readOnly = checkOptionalBoolean(entry, "readOnly", own);
  const concurrent = checkOptionalBoolean(entry, "concurrent", own);
  if (concurrent && !readOnly) own.push("concurrent requires readOnly: true");
  const alwaysLoad = checkOptionalBoolean(entry, "alwaysLoad", own);
  // An unknown protocol is an error, not a warning: its messages on stdout would be misread as the tool's answer.
  const protocol = entry.protocol;
  if (protocol !== undefined && !TOOL_PROTOCOLS.includes(protocol as string)) {
    own.push(
      `protocol must be one of ${TOOL_PROTOCOLS.map((p) => JSON.stringify(p)).join(", ")} (got ${
        JSON.stringify(protocol)
      })`,
    );
  }
  const asks = checkAsks(entry.asks, protocol, own);
  const profile = resolveProfile(declaredProfile(entry), context.dir, context.profiles);
  if (!profile.ok) own.push(...profile.errors);
  else if (profile.warning !== undefined && !warnings.includes(profile.warning)) {
    warnings.push(profile.warning);
  }
  const credentials = profile.ok ? checkCredentials(entry.credentials, profile.profile.net, own) : [];
  for (const key of Object.keys(entry)) {
    if (!KNOWN_FIELDS.has(key)) warnings.push(`${prefix}unknown field ${quote(key)} (ignored)`);
  }
  errors.push(...own.map((message) => prefix + message));
  if (own.length > 0 || !command.value || !profile.ok) return undefined;
  // A profile's variables are passed like envPassthrough's, after them.
  const passed = [...env, ...profile.profile.env.filter((name) => !env.includes(name))];
  return Object.freeze({
    index,
    name: rawName,
    description: entry.description as string | undefined,
    schema: schema === undefined ? undefined : Object.freeze(schema),
    outputSchema: outputSchema === undefined ? undefined : Object.freeze(outputSchema),
    command: Object.freeze([...command.value.command]),
    program: command.value.program,
    args: Object.freeze(command.value.command.slice(1)),
    timeoutSec: timeout as number | undefined,
    idleTimeoutSec: idle as number | undefined,
    envPassthrough: Object.freeze(passed),
    secrets: Object.freeze(secrets),
    credentials: Object.freeze(credentials),
    readOnly,
    concurrent,
    alwaysLoad,
    protocol: protocol as ToolProtocol | undefined,
    asks: Object.freeze(asks),
    profile: profile.profile,
    builtin: beltToolOf(command.value.program),
    present: context.bin.exists(command.value.program),
  });
}

/**
 * What keeps `program` from being run, in the words a call's start failure uses, or `undefined`. A path this
 * process may not read (scoped grants) passes: the call itself will tell.
 */
function programProblem(program: string): string | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(program);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return `the program ${program} does not exist`;
    if (error instanceof Deno.errors.NotCapable) return undefined;
    return `the program ${program} cannot be read: ${(error as Error).message}`;
  }
  if (info.isDirectory) return `the program ${program} is a directory, not a program`;
  if (!info.isFile) return `the program ${program} is not a regular file`;
  if (info.mode !== null && (info.mode & 0o111) === 0) {
    return `the program ${program} is not executable (chmod +x it)`;
  }
  return undefined;
}

/** What is wrong with a limit in seconds (a positive integer a timer can hold), or `undefined`. */
function secondsProblem(key: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    return `${key} must be a positive integer (got ${JSON.stringify(value)})`;
  }
  if (value > MAX_TIMEOUT_SEC) return `${key} must be at most ${MAX_TIMEOUT_SEC} (got ${value})`;
  return undefined;
}

/** A risk mark (`"x-toolgate-risk"` on a property, read by the approval prompt) that is not a boolean. */
function riskAnnotationProblem(schema: Record<string, unknown>): string | undefined {
  if (!isRecord(schema.properties)) return undefined;
  for (const [name, property] of Object.entries(schema.properties)) {
    const mark = isRecord(property) ? property["x-toolgate-risk"] : undefined;
    if (mark !== undefined && typeof mark !== "boolean") {
      return `/properties/${name}/x-toolgate-risk must be true or false`;
    }
  }
  return undefined;
}

function compileProblem(schemas: SchemaCompiler, schema: Record<string, unknown>): string | undefined {
  const compiled = schemas.compile(schema);
  return compiled.ok ? undefined : compiled.reason;
}

/**
 * Validates an already-parsed manifest value; `path` is the manifest's absolute path (commands resolve against
 * its folder).
 *
 * @example
 * ```ts
 * import { validateManifest } from "./manifest.ts";
 * const result = validateManifest({ tools: [{ name: "t", command: ["./tools/bin/t"] }] }, "/srv/tools.json");
 * result.ok && result.manifest.tools[0].program; // "/srv/tools/bin/t"
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
 * import { loadManifest } from "./manifest.ts";
 * const result = await loadManifest("tools.json");
 * if (!result.ok) console.error(result.errors.join("\n"));
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
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${SCHEMA_RULES_VERSION}|${options.compileSchemas ? "compiled" : "checked"}|${hex}`;
}

/** The most schema digests remembered as compiled (the newest kept): about 17 bytes each. */
const MAX_COMPILED_SCHEMAS = 20_000;

/** Bumped when what the schema checks find changes: older cached verdicts are then ignored. */
const SCHEMA_RULES_VERSION = 1;

function isSchemaWarning(warning: string): boolean {
  return /: (schema|outputSchema): /.test(warning);
}

function withWarnings(result: ManifestResult & { ok: true }, more: readonly string[]): ManifestResult {
  const warnings = [...result.warnings, ...more.filter((w) => !result.warnings.includes(w))];
  return { ok: true, manifest: Object.freeze({ ...result.manifest, warnings }), warnings };
}
