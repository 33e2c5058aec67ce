/**
 * The check of one tool entry of a manifest: its name, command, limits, variables, flags, protocol, profile,
 * credentials and schemas, each problem one message under the tool's `tool[i] "NAME": ` prefix, and the frozen
 * {@linkcode ToolSpec} when there is none. `manifest.ts` runs it over every entry.
 *
 * @module
 */
import type { BinListing } from "./bin_listing.ts";
import { ENV_NAME_PATTERN } from "../base/env_name.ts";
import { isRecord } from "../contract.ts";
import { declaredProfile, type ProfileResult, resolveProfile } from "./profiles.ts";
import { markSchemaChecked, patternProblems, type SchemaCompiler, schemaEngineLoaded } from "./schema.ts";
import { paramHeadersProblem } from "./param_headers.ts";
import { fnv1a64 } from "../state/state.ts";
import { beltToolOf } from "./tool_belt.ts";
import { type Asked, TOOL_ASKS, TOOL_PROTOCOLS, type ToolProtocol } from "./tool_messages.ts";
import { checkCredentials } from "./credentials.ts";
import { checkCommand } from "./command_check.ts";
import {
  type ManifestOptions,
  STORE_SECRET,
  TASK_SUPPORT,
  type TaskSupport,
  TOOL_NAME_PATTERN,
  type ToolSpec,
} from "./manifest_types.ts";

/** The longest timer a runtime keeps (2^31-1 ms); a longer one fires at once, so the tool would time out at once. */
const MAX_TIMEOUT_SEC = Math.floor((2 ** 31 - 1) / 1000);
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
  "execution",
]);

/** Go's %q for the strings we quote: JSON's quoting agrees on everything printable. */
const quote = (value: string): string => JSON.stringify(value);

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

/**
 * `execution`: how an MCP client may run the tool, in MCP's own shape (`{"taskSupport": "optional"}`); a key it
 * does not know is a warning, as an unknown field is.
 */
function checkExecution(
  raw: unknown,
  errors: string[],
  warn: (message: string) => void,
): TaskSupport | undefined {
  if (raw === undefined) return undefined;
  const allowed = TASK_SUPPORT.map((value) => quote(value)).join(", ");
  if (!isRecord(raw)) {
    errors.push(
      `execution must be an object such as {"taskSupport": "optional"} (got ${JSON.stringify(raw)})`,
    );
    return undefined;
  }
  for (const key of Object.keys(raw)) {
    if (key !== "taskSupport") warn(`unknown field ${quote(`execution.${key}`)} (ignored)`);
  }
  const support = raw.taskSupport;
  if (support === undefined) return undefined;
  if (!TASK_SUPPORT.includes(support as TaskSupport)) {
    errors.push(`execution.taskSupport must be one of ${allowed} (got ${JSON.stringify(support)})`);
    return undefined;
  }
  return support as TaskSupport;
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
  const risk = key === "schema" ? riskAnnotationProblem(value) ?? paramHeadersProblem(value) : undefined;
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

/**
 * What the check of one tool reads of the whole manifest: its folder, the listing of `tools/bin`, the load's
 * options, the names seen so far (a repeated one is an error), the schema compiler and the profiles resolved.
 *
 * @example
 * ```ts
 * import type { ToolCheckContext } from "./tool_check.ts";
 * const seen: ToolCheckContext["seen"] = new Set(["get_time"]);
 * ```
 */
export interface ToolCheckContext {
  readonly dir: string;
  readonly bin: BinListing;
  readonly options: ManifestOptions;
  readonly seen: Set<string>;
  readonly schemas: SchemaCompiler;
  readonly profiles: Map<string, ProfileResult>;
}

/**
 * Checks one entry of a manifest's `tools`: every problem goes to `errors` (prefixed `tool[i] "NAME": `), every
 * unknown field and schema pattern to `warnings`; the frozen tool when there was no problem.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkTool } from "./tool_check.ts";
 * import { BinListing } from "./bin_listing.ts";
 * import { SchemaCompiler } from "./schema.ts";
 * const context = {
 *   dir: "/srv",
 *   bin: new BinListing("/srv/tools/bin"),
 *   options: {},
 *   seen: new Set<string>(),
 *   schemas: new SchemaCompiler(),
 *   profiles: new Map(),
 * };
 * const errors: string[] = [];
 * checkTool({ name: "t", command: ["/bin/t"] }, 0, context, errors, []);
 * assert.equal(errors.length, 1);
 * assert.match(errors[0], /^tool\[0\] "t": absolute command\[0\] "\/bin\/t" is refused; /);
 * ```
 */
export function checkTool(
  entry: unknown,
  index: number,
  context: ToolCheckContext,
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
  const taskSupport = checkExecution(entry.execution, own, warn);
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
    ...(taskSupport === undefined ? {} : { taskSupport }),
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
