/**
 * Cursor's `.cursor/mcp.json` (a project's) and `~/.cursor/mcp.json` (the user's): `mcpServers`, each a stdio
 * `command`/`args`/`env` entry or a remote `url` with `headers`.
 *
 * Not here: the shared reading and rewiring (`servers_object.ts`), where the files are (`host_files.ts`).
 *
 * @module
 */
import type { HostFormat } from "./host_format.ts";
import { serversFileFormat } from "./servers_object.ts";

/**
 * Cursor's format.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { cursor } from "./cursor.ts";
 * const read = await cursor.read('{"mcpServers": {"api": {"url": "https://mcp.example.com/mcp"}}}', { file: "c.json", project: "/p" });
 * assertEquals(read.ok && read.servers[0].entry, { url: "https://mcp.example.com/mcp" });
 * ```
 */
export const cursor: HostFormat = serversFileFormat("cursor", "Cursor", "mcpServers", { httpKeys: ["url"] });
