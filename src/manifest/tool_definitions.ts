/**
 * The manifest's tools in the shapes model APIs and hosts expect: OpenAI functions, Anthropic tools, MCP tools.
 *
 * @module
 */
import { FAILURE_ENVELOPE_SCHEMA } from "../contract.ts";
import type { Manifest, TaskSupport, ToolSpec } from "./manifest_types.ts";
import { allowsNetwork } from "./profiles.ts";

/**
 * An OpenAI chat-completions tool.
 *
 * @example
 * ```ts
 * import type { OpenAITool } from "./tool_definitions.ts";
 * const tool: OpenAITool = { type: "function", function: { name: "get_time", parameters: { type: "object" } } };
 * ```
 */
export interface OpenAITool {
  /** Always `function`. */
  type: "function";
  /** The function's name, description and JSON Schema of its parameters. */
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/**
 * An Anthropic Messages API tool.
 *
 * @example
 * ```ts
 * import type { AnthropicTool } from "./tool_definitions.ts";
 * const tool: AnthropicTool = { name: "get_time", input_schema: { type: "object", properties: {} } };
 * ```
 */
export interface AnthropicTool {
  /** The tool's name. */
  name: string;
  /** What the tool does. */
  description?: string;
  /** The JSON Schema of the input (an empty object schema when the manifest has none). */
  input_schema: Record<string, unknown>;
}

/**
 * An MCP `tools/list` entry.
 *
 * @example
 * ```ts
 * import type { McpTool } from "./tool_definitions.ts";
 * const tool: McpTool = {
 *   name: "get_time",
 *   inputSchema: { type: "object", properties: {} },
 *   annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
 *   execution: { taskSupport: "optional" },
 * };
 * ```
 */
export interface McpTool {
  /** The tool's name. */
  name: string;
  /** What the tool does. */
  description?: string;
  /** The JSON Schema of the arguments, always of `type: "object"`. */
  inputSchema: Record<string, unknown>;
  /**
   * What `structuredContent` holds, when the manifest declares an `outputSchema`: the tool's result as declared,
   * or (`isError`) a failure envelope; see {@linkcode mcpOutputSchema}.
   */
  outputSchema?: Record<string, unknown>;
  /** Behaviour hints for the host; MCP reads a missing `destructiveHint` as true. */
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; openWorldHint: boolean };
  /** Whether a client may run the tool as a task: the manifest's `execution`, else `"optional"` (`toMcp`). */
  execution?: { taskSupport: TaskSupport };
}

/**
 * The export formats {@linkcode exportTools} knows.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EXPORT_FORMATS } from "./tool_definitions.ts";
 * assert.equal(EXPORT_FORMATS.join(", "), "openai, anthropic, mcp, names");
 * ```
 */
export const EXPORT_FORMATS = ["openai", "anthropic", "mcp", "names"] as const;
/**
 * One of {@linkcode EXPORT_FORMATS}.
 *
 * @example
 * ```ts
 * import type { ExportFormat } from "./tool_definitions.ts";
 * const format: ExportFormat = "anthropic";
 * ```
 */
export type ExportFormat = typeof EXPORT_FORMATS[number];

const EMPTY_OBJECT_SCHEMA = { type: "object", properties: {} };

/** toolgate's own schema annotations (`x-toolgate-risk`): for the approval prompt, not for models or hosts. */
const OWN_ANNOTATION = /^x-toolgate-/;

function hasOwnAnnotation(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasOwnAnnotation);
  if (typeof value !== "object" || value === null) return false;
  return Object.entries(value).some(([key, item]) => OWN_ANNOTATION.test(key) || hasOwnAnnotation(item));
}

function withoutOwnAnnotations(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutOwnAnnotations);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).filter(([key]) => !OWN_ANNOTATION.test(key)).map((
      [key, item],
    ) => [key, withoutOwnAnnotations(item)]),
  );
}

/** The tool's schema as a model or host gets it: a copy, without toolgate's own annotations (some APIs refuse them). */
function exported(schema: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return hasOwnAnnotation(schema) ? withoutOwnAnnotations(schema) as Record<string, unknown> : { ...schema };
}

function schemaOf(tool: ToolSpec): Record<string, unknown> {
  return tool.schema ? exported(tool.schema) : { ...EMPTY_OBJECT_SCHEMA };
}

/**
 * One tool as an OpenAI function; description and parameters are left out when absent, as agentcli does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toOpenAI } from "./tool_definitions.ts";
 * import { loadManifest } from "./manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const definition = toOpenAI(loaded.manifest.byName.get("get_time")!);
 * assert.equal(definition.type, "function");
 * assert.equal(definition.function.name, "get_time");
 * assert.deepEqual(definition.function.parameters?.required, ["timezone"]);
 * ```
 */
export function toOpenAI(tool: ToolSpec): OpenAITool {
  const fn: OpenAITool["function"] = { name: tool.name };
  if (tool.description !== undefined) fn.description = tool.description;
  if (tool.schema !== undefined) fn.parameters = exported(tool.schema);
  return { type: "function", function: fn };
}

/**
 * One tool in Anthropic's shape (an input schema is required there: an empty object schema when absent).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toAnthropic } from "./tool_definitions.ts";
 * import { validateManifest } from "./manifest.ts";
 * const loaded = validateManifest({ tools: [{ name: "t", command: ["./tools/bin/t"] }] }, "/srv/tools.json");
 * assert.ok(loaded.ok);
 * assert.deepEqual(toAnthropic(loaded.manifest.tools[0]), { name: "t", input_schema: { type: "object", properties: {} } });
 * ```
 */
export function toAnthropic(tool: ToolSpec): AnthropicTool {
  const out: AnthropicTool = { name: tool.name, input_schema: schemaOf(tool) };
  if (tool.description !== undefined) out.description = tool.description;
  return out;
}

/**
 * One tool in MCP's shape, with behaviour hints for the host: `readOnlyHint` from `readOnly`, `destructiveHint:
 * false` for a read-only tool, and `openWorldHint` from whether the tool's permission profile lets it reach the
 * network (MCP reads a missing hint as true, so it is always written). MCP requires an object schema: a schema
 * that names no `type` gets `type: "object"`. A declared `outputSchema` goes out as {@linkcode mcpOutputSchema}
 * makes it. `toolgate list --format mcp` and the server's `tools/list` both come from here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toMcp } from "./tool_definitions.ts";
 * import { validateManifest } from "./manifest.ts";
 * const loaded = validateManifest(
 *   { tools: [{ name: "get_time", command: ["./tools/bin/get_time"], readOnly: true, permissions: "none" }] },
 *   "/srv/tools.json",
 * );
 * assert.ok(loaded.ok);
 * assert.deepEqual(toMcp(loaded.manifest.tools[0]).annotations, { readOnlyHint: true, destructiveHint: false, openWorldHint: false });
 * ```
 */
export function toMcp(tool: ToolSpec): McpTool {
  const annotations: McpTool["annotations"] = {
    readOnlyHint: tool.readOnly,
    ...(tool.readOnly ? { destructiveHint: false } : {}),
    openWorldHint: allowsNetwork(tool.profile),
  };
  const inputSchema = schemaOf(tool);
  if (inputSchema.type === undefined) inputSchema.type = "object";
  // Any call of serve's may run as a task (docs/mcp.md#tasks): a tool says so unless its manifest says otherwise.
  const out: McpTool = {
    name: tool.name,
    inputSchema,
    annotations,
    execution: { taskSupport: tool.taskSupport ?? "optional" },
  };
  if (tool.description !== undefined) out.description = tool.description;
  if (tool.outputSchema !== undefined) out.outputSchema = mcpOutputSchema(tool.outputSchema);
  return out;
}

/** The keys that name a schema's dialect, identity and shared definitions: they stay at the root of the union. */
const ROOT_KEYS = ["$schema", "$id", "definitions", "$defs"];

/**
 * A tool's `outputSchema` as MCP hosts get it: `{"type": "object", "anyOf": [DECLARED, FAILURE_ENVELOPE]}`. A
 * failure's `structuredContent` is the failure envelope, and a client that checks every `structuredContent`
 * against the schema, `isError` or not (the official TypeScript SDK's `callTool` does, up to 1.32.2 at least),
 * would otherwise turn a tool's failure into a protocol error. A success is checked by the server against the
 * declared schema alone, so a tool cannot pass a forged failure envelope off as its result. The declared schema's
 * `$schema`, `$id` and definitions stay at the root, so that its `#/definitions/...` references still resolve.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mcpOutputSchema } from "./tool_definitions.ts";
 * const schema = mcpOutputSchema({ type: "object", properties: { n: { type: "integer" } }, required: ["n"] });
 * assert.equal(schema.type, "object");
 * assert.equal((schema.anyOf as unknown[]).length, 2); // the declared schema, and a failure envelope
 * ```
 */
export function mcpOutputSchema(declared: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const own = exported(declared);
  const root: Record<string, unknown> = { type: "object" };
  const branch: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(own)) {
    if (ROOT_KEYS.includes(key)) root[key] = structuredClone(value);
    else branch[key] = structuredClone(value);
  }
  root.anyOf = [branch, structuredClone(FAILURE_ENVELOPE_SCHEMA)];
  return root;
}

/**
 * Every tool of a manifest in one format, in manifest order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exportTools } from "./tool_definitions.ts";
 * import { loadManifest } from "./manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * assert.ok(loaded.ok);
 * assert.deepEqual(exportTools(loaded.manifest, "names"), loaded.manifest.tools.map((tool) => tool.name));
 * ```
 */
export function exportTools(manifest: Manifest, format: ExportFormat): unknown[] {
  switch (format) {
    case "openai":
      return manifest.tools.map(toOpenAI);
    case "anthropic":
      return manifest.tools.map(toAnthropic);
    case "mcp":
      return manifest.tools.map(toMcp);
    case "names":
      return manifest.tools.map((tool) => tool.name);
  }
}
