/**
 * Writes each built-in tool's argument schema (`tools/schemas/`) into `tools.json`, leaving every other key and
 * tool as it is: `deno task tools-json`. A test regenerates it in memory and fails when the committed file
 * differs.
 *
 * @module
 */
import { TOOL_ARGS } from "./schemas/mod.ts";

/**
 * `tools.json`'s text with every built-in tool's `schema` replaced by its declaration; throws when a declared
 * tool has no entry.
 *
 * @example
 * ```ts
 * import { withDeclaredSchemas } from "./tools_json.ts";
 * const text = await Deno.readTextFile(new URL("../tools.json", import.meta.url));
 * withDeclaredSchemas(text) === text; // true while tools.json is up to date
 * ```
 */
export function withDeclaredSchemas(manifestText: string): string {
  const manifest = JSON.parse(manifestText) as { tools: Array<{ name: string; schema?: unknown }> };
  for (const [name, schema] of Object.entries(TOOL_ARGS)) {
    const entry = manifest.tools.find((tool) => tool.name === name);
    if (entry === undefined) {
      throw new Error(`tools.json has no tool ${JSON.stringify(name)} (tools/schemas/)`);
    }
    entry.schema = schema;
  }
  return JSON.stringify(manifest, null, 2) + "\n";
}

if (import.meta.main) {
  const path = new URL("../tools.json", import.meta.url);
  const before = await Deno.readTextFile(path);
  const after = withDeclaredSchemas(before);
  if (after !== before) await Deno.writeTextFile(path, after);
  console.log(after === before ? "tools.json is up to date" : "tools.json rewritten from tools/schemas/");
}
