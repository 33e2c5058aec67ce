/**
 * Windsurf's `~/.codeium/windsurf/mcp_config.json`: `mcpServers`, each a stdio `command`/`args`/`env` entry or a
 * remote `serverUrl` (its documented key; `url` is read too) with `headers`; `disabled` switches one off and
 * `disabledTools` hides tools.
 *
 * Not here: the shared reading and rewiring (`servers_object.ts`), where the file is (`host_files.ts`).
 *
 * @module
 */
import type { HostFormat } from "./host_format.ts";
import { serversFileFormat } from "./servers_object.ts";

/**
 * Windsurf's format.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { windsurf } from "./windsurf.ts";
 * const read = await windsurf.read('{"mcpServers": {"api": {"serverUrl": "https://mcp.example.com/mcp", "disabledTools": ["x"]}}}', { file: "c.json", project: "/p" });
 * assertEquals(read.ok && [read.servers[0].entry, read.servers[0].deny], [{ url: "https://mcp.example.com/mcp" }, ["x"]]);
 * ```
 */
export const windsurf: HostFormat = serversFileFormat(
  "windsurf",
  "Windsurf",
  "mcpServers",
  { httpKeys: ["serverUrl", "url"], denyKeys: ["disabledTools"] },
  "mcp_config.json",
);
