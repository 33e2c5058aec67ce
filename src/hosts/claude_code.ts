/**
 * Claude Code's two files: a project's `.mcp.json` (`mcpServers`, each `type` stdio with `command`/`args`/`env`,
 * or `http`/`sse` with `url`/`headers`), and the user's `~/.claude.json`, whose top-level `mcpServers` are the
 * user's servers and whose `projects[PATH].mcpServers` are one project's (the project's win on a shared name).
 *
 * Not here: the shared reading and rewiring (`servers_object.ts`), where the files are (`host_files.ts`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import { basename } from "../base/paths.ts";
import type { HostContext, HostFormat, HostLaunch, HostRead, HostServer } from "./host_format.ts";
import { readJsonConfig } from "./json_config.ts";
import { readServers, rewireServers, serversFileFormat, type ServersShape } from "./servers_object.ts";

const SHAPE: ServersShape = { httpKeys: ["url"] };

/** `.mcp.json`'s format. */
const projectFile = serversFileFormat("claude-code", "Claude Code", "mcpServers", SHAPE, ".mcp.json");

/** Is this the user's `~/.claude.json` (by its name)? */
function isUserFile(file: string): boolean {
  return basename(file) === ".claude.json";
}

/** Where the project's own servers sit in `~/.claude.json`. */
function projectPath(value: unknown, project: string): string[] | undefined {
  if (!isRecord(value) || !isRecord(value.projects)) return undefined;
  const entry = value.projects[project];
  return isRecord(entry) && entry.mcpServers !== undefined ? ["projects", project, "mcpServers"] : undefined;
}

/**
 * Claude Code's format: `.mcp.json`, or `~/.claude.json` read for one project (its user servers and that
 * project's).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { claudeCode } from "./claude_code.ts";
 * const text = JSON.stringify({
 *   mcpServers: { time: { type: "stdio", command: "uvx", args: ["mcp-server-time"] } },
 *   projects: { "/p": { mcpServers: { git: { command: "uvx", args: ["mcp-server-git"] } } }, "/q": { mcpServers: { x: { command: "x" } } } },
 * });
 * const read = await claudeCode.read(text, { file: "/home/me/.claude.json", project: "/p" });
 * assertEquals(read.ok && read.servers.map((server) => server.name), ["time", "git"]);
 * ```
 */
export const claudeCode: HostFormat = {
  id: "claude-code",
  label: "Claude Code",
  async read(text: string, context: HostContext): Promise<HostRead> {
    if (!isUserFile(context.file)) return projectFile.read(text, context);
    const read = await readJsonConfig(text, context.file);
    if (!read.ok) return read;
    if (!isRecord(read.config.value)) {
      return { ok: false, reason: read.config.at([], "it is not a JSON object") };
    }
    const user = readServers(read.config, ["mcpServers"], SHAPE);
    if (!user.ok) return user;
    const path = projectPath(read.config.value, context.project);
    const local = path === undefined
      ? { ok: true as const, servers: [] }
      : readServers(read.config, path, SHAPE);
    if (!local.ok) return local;
    const names = new Set(local.servers.map((server) => server.name));
    const servers: HostServer[] = [
      ...user.servers.filter((server) => !names.has(server.name)),
      ...local.servers,
    ];
    return { ok: true, servers };
  },
  async rewire(text: string, context: HostContext, launches: ReadonlyMap<string, HostLaunch>) {
    if (!isUserFile(context.file)) return projectFile.rewire(text, context, launches);
    const { parse } = await import("npm:jsonc-parser@3.3.1");
    const value = parse(text, [], { allowTrailingComma: true });
    const path = projectPath(value, context.project);
    const local = new Set(
      path === undefined ? [] : Object.keys((value.projects[context.project].mcpServers ?? {}) as object),
    );
    // A project's server is the one Claude Code starts under its name: the user's of that name stays as it is.
    const users = new Map([...launches].filter(([name]) => !local.has(name)));
    const first = await rewireServers(text, ["mcpServers"], SHAPE, users);
    if (path === undefined) return first;
    const locals = new Map([...launches].filter(([name]) => local.has(name)));
    const second = await rewireServers(first.text, path, SHAPE, locals);
    return { text: second.text, notes: [...first.notes, ...second.notes] };
  },
};
