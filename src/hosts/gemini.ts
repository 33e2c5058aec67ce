/**
 * Gemini CLI's `.gemini/settings.json` (a project's) and `~/.gemini/settings.json` (the user's): `mcpServers`,
 * each a stdio `command`/`args`/`env`/`cwd` entry, a Streamable HTTP `httpUrl` or an SSE `url`, with `headers`;
 * `includeTools` and `excludeTools` choose its tools, `timeout` and `trust` are the host's own switches (kept).
 *
 * Not here: the shared reading and rewiring (`servers_object.ts`), where the files are (`host_files.ts`).
 *
 * @module
 */
import type { HostFormat } from "./host_format.ts";
import { serversFileFormat } from "./servers_object.ts";

/**
 * Gemini CLI's format.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { gemini } from "./gemini.ts";
 * const read = await gemini.read('{"mcpServers": {"api": {"httpUrl": "https://mcp.example.com/mcp"}}}', { file: "s.json", project: "/p" });
 * assertEquals(read.ok && read.servers[0].entry, { url: "https://mcp.example.com/mcp" });
 * ```
 */
export const gemini: HostFormat = serversFileFormat(
  "gemini",
  "Gemini CLI",
  "mcpServers",
  { httpKeys: ["httpUrl"], sseKeys: ["url"], allowKey: "includeTools", denyKeys: ["excludeTools"] },
  "settings.json",
);
