/**
 * Claude Desktop's `claude_desktop_config.json`: `mcpServers`, each a stdio `command`/`args`/`env` entry (the
 * remote servers it reaches are set in its window, not in this file; a `url` entry is read as Claude Code's is).
 *
 * Not here: the shared reading and rewiring (`servers_object.ts`), where the file is (`host_files.ts`).
 *
 * @module
 */
import type { HostFormat } from "./host_format.ts";
import { serversFileFormat } from "./servers_object.ts";

/**
 * Claude Desktop's format.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { claudeDesktop } from "./claude_desktop.ts";
 * const read = await claudeDesktop.read('{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}', { file: "c.json", project: "/p" });
 * assertEquals(read.ok && read.servers[0].entry, { command: "uvx", args: ["mcp-server-time"] });
 * ```
 */
export const claudeDesktop: HostFormat = serversFileFormat(
  "claude-desktop",
  "Claude Desktop",
  "mcpServers",
  { httpKeys: ["url"] },
  "claude_desktop_config.json",
);
