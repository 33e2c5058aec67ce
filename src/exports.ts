/**
 * The manifest's tools in the shapes model APIs and hosts expect: OpenAI functions, Anthropic tools, MCP tools.
 *
 * @module
 */
import type { Manifest, ToolSpec } from "./manifest.ts";

/** An OpenAI chat-completions tool. */
export interface OpenAITool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** An Anthropic Messages API tool. */
export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

/** An MCP `tools/list` entry. */
export interface McpTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; openWorldHint?: boolean };
}

/** The export formats {@linkcode exportTools} knows. */
export const EXPORT_FORMATS = ["openai", "anthropic", "mcp", "names"] as const;
/** One of {@linkcode EXPORT_FORMATS}. */
export type ExportFormat = typeof EXPORT_FORMATS[number];

const EMPTY_OBJECT_SCHEMA = { type: "object", properties: {} };

function schemaOf(tool: ToolSpec): Record<string, unknown> {
  return tool.schema ? { ...tool.schema } : { ...EMPTY_OBJECT_SCHEMA };
}

/**
 * One tool as an OpenAI function; description and parameters are left out when absent, as agentcli does.
 *
 * @example
 * ```ts
 * import { toOpenAI } from "./exports.ts";
 * // toOpenAI(tool) -> { type: "function", function: { name: "get_time", parameters: {...} } }
 * ```
 */
export function toOpenAI(tool: ToolSpec): OpenAITool {
  const fn: OpenAITool["function"] = { name: tool.name };
  if (tool.description !== undefined) fn.description = tool.description;
  if (tool.schema !== undefined) fn.parameters = { ...tool.schema };
  return { type: "function", function: fn };
}

/** One tool in Anthropic's shape (an input schema is required there: an empty object schema when absent). */
export function toAnthropic(tool: ToolSpec): AnthropicTool {
  const out: AnthropicTool = { name: tool.name, input_schema: schemaOf(tool) };
  if (tool.description !== undefined) out.description = tool.description;
  return out;
}

/** One tool in MCP's shape, with behaviour hints for the host. */
export function toMcp(tool: ToolSpec): McpTool {
  const annotations: McpTool["annotations"] = { readOnlyHint: tool.readOnly };
  if (tool.readOnly) annotations.destructiveHint = false;
  const out: McpTool = { name: tool.name, inputSchema: schemaOf(tool), annotations };
  if (tool.description !== undefined) out.description = tool.description;
  return out;
}

/**
 * Every tool of a manifest in one format, in manifest order.
 *
 * @example
 * ```ts
 * import { exportTools } from "./exports.ts";
 * import { loadManifest } from "./manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (loaded.ok) console.log(exportTools(loaded.manifest, "anthropic"));
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
