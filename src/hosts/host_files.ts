/**
 * Where each host keeps its servers: a project's files (under the project folder) and the user's (under HOME, as
 * each host documents them for Linux and macOS), and which host a file named on the command line is, by its name,
 * its folder or, for a plain `mcp.json`, its shape.
 *
 * Not here: reading a file (each host's module).
 *
 * @module
 */
import { basename, dirname, join } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import type { HostFormat, HostId } from "./host_format.ts";
import { claudeDesktop } from "./claude_desktop.ts";
import { claudeCode } from "./claude_code.ts";
import { cursor } from "./cursor.ts";
import { vscode } from "./vscode.ts";
import { codex } from "./codex.ts";
import { windsurf } from "./windsurf.ts";
import { gemini } from "./gemini.ts";

/** Every host's format, by its id. */
export const HOST_FORMATS: Readonly<Record<HostId, HostFormat>> = {
  "claude-desktop": claudeDesktop,
  "claude-code": claudeCode,
  cursor,
  vscode,
  codex,
  windsurf,
  gemini,
};

/** A place a host keeps servers. */
export interface HostFile {
  readonly host: HostId;
  readonly file: string;
  /** A project's file, or the user's. */
  readonly scope: "project" | "user";
}

/**
 * The files a host may keep servers in, for a project and a home folder, in the order hosts are reported.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { hostFiles } from "./host_files.ts";
 * const files = hostFiles("/srv/p", "/home/me").filter((place) => place.host === "cursor").map((place) => place.file);
 * assertEquals(files, ["/srv/p/.cursor/mcp.json", "/home/me/.cursor/mcp.json"]);
 * ```
 */
export function hostFiles(project: string, home: string | undefined): HostFile[] {
  const files: HostFile[] = [];
  const add = (host: HostId, scope: "project" | "user", file: string) => files.push({ host, file, scope });
  const user = (host: HostId, ...parts: string[]) => {
    if (home !== undefined && home !== "") add(host, "user", join(home, ...parts));
  };
  user("claude-desktop", ".config", "Claude", "claude_desktop_config.json");
  user("claude-desktop", "Library", "Application Support", "Claude", "claude_desktop_config.json");
  add("claude-code", "project", join(project, ".mcp.json"));
  user("claude-code", ".claude.json");
  add("cursor", "project", join(project, ".cursor", "mcp.json"));
  user("cursor", ".cursor", "mcp.json");
  add("vscode", "project", join(project, ".vscode", "mcp.json"));
  user("vscode", ".config", "Code", "User", "mcp.json");
  user("vscode", "Library", "Application Support", "Code", "User", "mcp.json");
  add("codex", "project", join(project, ".codex", "config.toml"));
  user("codex", ".codex", "config.toml");
  user("windsurf", ".codeium", "windsurf", "mcp_config.json");
  add("gemini", "project", join(project, ".gemini", "settings.json"));
  user("gemini", ".gemini", "settings.json");
  return files;
}

/**
 * The host a file named on the command line belongs to: by its name (`claude_desktop_config.json`, `.mcp.json`,
 * `.claude.json`, `config.toml`, `mcp_config.json`, `settings.json`), by its folder for an `mcp.json` (`.cursor`,
 * `.vscode`, VS Code's `User`), else by its shape (`servers`: VS Code's; `mcpServers`: Claude Desktop's, the shape
 * the others share); `undefined` when neither tells.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { guessHost } from "./host_files.ts";
 * assertEquals(guessHost("/p/.vscode/mcp.json", undefined), "vscode");
 * assertEquals(guessHost("/tmp/servers.json", { mcpServers: {} }), "claude-desktop");
 * assertEquals(guessHost("/tmp/servers.json", { tools: [] }), undefined);
 * ```
 */
export function guessHost(file: string, value: unknown): HostId | undefined {
  const name = basename(file);
  const folder = basename(dirname(file));
  if (name === "claude_desktop_config.json") return "claude-desktop";
  if (name === ".mcp.json" || name === ".claude.json") return "claude-code";
  if (name.endsWith(".toml")) return "codex";
  if (name === "mcp_config.json") return "windsurf";
  if (name === "settings.json" && folder === ".gemini") return "gemini";
  if (name === "mcp.json" && folder === ".cursor") return "cursor";
  if (name === "mcp.json" && (folder === ".vscode" || folder === "User")) return "vscode";
  if (!isRecord(value)) return undefined;
  if (isRecord(value.servers) && value.mcpServers === undefined) return "vscode";
  if (value.mcpServers !== undefined) return name === "settings.json" ? "gemini" : "claude-desktop";
  return undefined;
}
