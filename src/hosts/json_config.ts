/**
 * A host's JSON (or JSONC) configuration: read with every problem placed (`FILE:LINE:COL: message`: a syntax error
 * by `manifest/jsonc.ts`, a wrong shape by the position of the value that has it), and rewritten in place, one
 * value at a time, so that the rest of the file (its comments, its order, its other settings) stays as it was.
 *
 * Not here: what the keys mean (each host's module).
 *
 * @module
 */
import { lineColumn, parseJsonc } from "../manifest/jsonc.ts";

/** A JSON path: object keys and array indexes. */
export type JsonPath = readonly (string | number)[];

/** A parsed host file: its value, and where each value sits (for errors). */
export interface JsonConfig {
  readonly value: unknown;
  /** `FILE:LINE:COL: message` for the value at `path` (or the nearest one that exists). */
  at(path: JsonPath, message: string): string;
}

/**
 * Reads a host's JSONC text: the value and a way to place errors, or the first syntax error's line.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { readJsonConfig } from "./json_config.ts";
 * const bad = await readJsonConfig('{\n  "mcpServers": {"a" 1}\n}', "mcp.json");
 * assertEquals(bad, { ok: false, reason: "mcp.json:2:22: colon expected" });
 * const good = await readJsonConfig('{\n  "mcpServers": {"a": 1}\n}', "mcp.json");
 * assertEquals(good.ok && good.config.at(["mcpServers", "a"], "not an object"), "mcp.json:2:23: not an object");
 * ```
 */
export async function readJsonConfig(
  text: string,
  file: string,
): Promise<{ ok: true; config: JsonConfig } | { ok: false; reason: string }> {
  const parsed = await parseJsonc(text, file);
  if (!parsed.ok) return { ok: false, reason: parsed.errors[0] };
  const { parseTree, findNodeAtLocation } = await import("npm:jsonc-parser@3.3.1");
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const tree = parseTree(body, [], { allowTrailingComma: true });
  return {
    ok: true,
    config: {
      value: parsed.value,
      at(path, message) {
        let offset = 0;
        for (let n = path.length; n >= 0 && tree; n--) {
          const node = findNodeAtLocation(tree, [...path.slice(0, n)]);
          if (node) {
            offset = node.offset;
            break;
          }
        }
        return `${file}:${lineColumn(body, offset)}: ${message}`;
      },
    },
  };
}

/**
 * `text` with the value at each path replaced (or, `undefined`, removed), keeping everything else byte for byte;
 * the new values are indented as the file is (its first indented line says how).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { editJson } from "./json_config.ts";
 * const text = '{\n  // mine\n  "mcpServers": {"a": {"command": "npx"}}\n}\n';
 * const out = await editJson(text, [[["mcpServers", "a"], { command: "/bin/toolgate" }]]);
 * assertEquals(out.includes("// mine"), true);
 * assertEquals(out.includes('"command": "/bin/toolgate"'), true);
 * ```
 */
export async function editJson(
  text: string,
  edits: readonly (readonly [JsonPath, unknown])[],
): Promise<string> {
  const { modify, applyEdits } = await import("npm:jsonc-parser@3.3.1");
  const indent = /\n([ \t]+)\S/.exec(text)?.[1] ?? "  ";
  const formattingOptions = {
    insertSpaces: !indent.startsWith("\t"),
    tabSize: indent.startsWith("\t") ? 1 : indent.length,
    eol: text.includes("\r\n") ? "\r\n" : "\n",
  };
  let out = text;
  for (const [path, value] of edits) {
    out = applyEdits(out, modify(out, [...path], value, { formattingOptions }));
  }
  return out;
}
