/**
 * Codex's `~/.codex/config.toml` (and a trusted project's `.codex/config.toml`): a `[mcp_servers.NAME]` table per
 * server, with `command`, `args`, `env`, `env_vars`, `cwd` (stdio) or `url`, `bearer_token_env_var`,
 * `http_headers`, `env_http_headers` (Streamable HTTP), and the host's own switches (`enabled`,
 * `startup_timeout_sec`, `tool_timeout_sec`, `enabled_tools`, `disabled_tools`). Read and written with smol-toml;
 * a rewired server's table is replaced in the text, so the rest of the file (other settings, comments) stays.
 *
 * Not here: where the file is (`host_files.ts`), the entry a rewired server gets (`host_format.ts`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import type { HostContext, HostFormat, HostLaunch, HostRead, HostServer } from "./host_format.ts";
import { rewiredEntry } from "./host_format.ts";

const quote = (text: string): string => JSON.stringify(text);

/** A table header line: `[a.b."c d"]` (an array of tables, `[[...]]`, is not one). */
const HEADER = /^\s*\[(?!\[)[^\]]*\]\s*(#.*)?$/;

type Toml = typeof import("npm:smol-toml@1.9.1");

async function toml(): Promise<Toml> {
  return await import("npm:smol-toml@1.9.1");
}

/** The key path of a table header line (`[mcp_servers."my fs".env]` -> `["mcp_servers", "my fs", "env"]`). */
function headerPath(lib: Toml, line: string): string[] | undefined {
  if (!HEADER.test(line)) return undefined;
  try {
    const path: string[] = [];
    let node: unknown = lib.parse(line.trim() + "\n");
    while (isRecord(node) && Object.keys(node).length === 1) {
      const key = Object.keys(node)[0];
      path.push(key);
      node = node[key];
    }
    return path;
  } catch {
    return undefined;
  }
}

/** The 1-based line of the server's table header, for errors (1 when it is written otherwise). */
function serverLine(lib: Toml, lines: readonly string[], name: string): number {
  const index = lines.findIndex((line) => {
    const path = headerPath(lib, line);
    return path !== undefined && path[0] === "mcp_servers" && path[1] === name;
  });
  return index + 1 || 1;
}

function stringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function stringMap(value: unknown): value is Record<string, string> {
  return isRecord(value) && Object.values(value).every((item) => typeof item === "string");
}

/** One `[mcp_servers.NAME]` table into a server, or the problem with it (without its position). */
function server(name: string, raw: Record<string, unknown>): HostServer | string {
  const entry: Record<string, unknown> = {};
  const notes: string[] = [];
  if (raw.command !== undefined) {
    if (typeof raw.command !== "string" || raw.command.trim() === "") {
      return "command must be a non-empty string";
    }
    entry.command = raw.command;
    if (raw.args !== undefined) {
      if (!stringList(raw.args)) return "args must be an array of strings";
      entry.args = raw.args;
    }
    if (raw.env !== undefined) {
      if (!stringMap(raw.env)) return "env must map names to strings";
      entry.env = raw.env;
    }
    if (stringList(raw.env_vars) && raw.env_vars.length > 0) {
      notes.push(
        `server ${quote(name)}: env_vars (${raw.env_vars.join(", ")}) are not passed on: name each in ` +
          "permissions.env, or as a secret",
      );
    }
  } else if (raw.url !== undefined) {
    if (typeof raw.url !== "string") return "url must be a string";
    entry.url = raw.url;
    const headers: Record<string, string> = {};
    if (raw.http_headers !== undefined) {
      if (!stringMap(raw.http_headers)) return "http_headers must map names to strings";
      Object.assign(headers, raw.http_headers);
    }
    if (raw.env_http_headers !== undefined) {
      if (!stringMap(raw.env_http_headers)) return "env_http_headers must map names to variable names";
      for (const [header, variable] of Object.entries(raw.env_http_headers)) {
        headers[header] = `\${${variable}}`;
      }
    }
    if (raw.bearer_token_env_var !== undefined) {
      if (typeof raw.bearer_token_env_var !== "string") {
        return "bearer_token_env_var must be a variable's name";
      }
      headers.Authorization = `Bearer \${${raw.bearer_token_env_var}}`;
    }
    if (Object.keys(headers).length > 0) entry.headers = headers;
  } else {
    return 'has neither "command" (stdio) nor "url" (Streamable HTTP)';
  }
  return {
    name,
    entry,
    enabled: raw.enabled !== false,
    ...(typeof raw.cwd === "string" ? { cwd: raw.cwd } : {}),
    // A header taken from a variable is a credential whatever its name.
    credentialEnv: isRecord(raw.env_http_headers) ? Object.keys(raw.env_http_headers) : [],
    ...(stringList(raw.enabled_tools) ? { allow: raw.enabled_tools } : {}),
    ...(stringList(raw.disabled_tools) && raw.disabled_tools.length > 0 ? { deny: raw.disabled_tools } : {}),
    notes,
  };
}

/**
 * Codex's format.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { codex } from "./codex.ts";
 * const text = '# mine\n[mcp_servers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\nenabled = false\n';
 * const read = await codex.read(text, { file: "config.toml", project: "/p" });
 * assertEquals(read.ok && [read.servers[0].entry, read.servers[0].enabled], [{ command: "uvx", args: ["mcp-server-time"] }, false]);
 * const out = await codex.rewire(text, { file: "config.toml", project: "/p" }, new Map([["time", { command: "/bin/toolgate", args: ["serve"] }]]));
 * assertEquals(out.text, '# mine\n[mcp_servers.time]\ncommand = "/bin/toolgate"\nargs = [ "serve" ]\nenabled = false\n');
 * ```
 */
export const codex: HostFormat = {
  id: "codex",
  label: "Codex",
  async read(text: string, context: HostContext): Promise<HostRead> {
    const lib = await toml();
    let value: Record<string, unknown>;
    try {
      value = lib.parse(text);
    } catch (error) {
      const { line, column } = error as { line?: number; column?: number };
      const message = (error as Error).message.split("\n")[0].replace(/^Invalid TOML document: /, "");
      return { ok: false, reason: `${context.file}:${line ?? 1}:${column ?? 1}: ${message}` };
    }
    const lines = text.split("\n");
    const tables = value.mcp_servers;
    if (tables === undefined) {
      return context.named
        ? {
          ok: false,
          reason:
            `${context.file}:1:1: it has no [mcp_servers.NAME] table (the shape of Codex's config.toml)`,
        }
        : { ok: true, servers: [] };
    }
    if (!isRecord(tables)) return { ok: false, reason: `${context.file}:1:1: mcp_servers must be a table` };
    const servers: HostServer[] = [];
    for (const [name, raw] of Object.entries(tables)) {
      const read = isRecord(raw) ? server(name, raw) : "must be a table";
      if (typeof read === "string") {
        return {
          ok: false,
          reason: `${context.file}:${serverLine(lib, lines, name)}:1: server ${quote(name)}: ${read}`,
        };
      }
      servers.push(read);
    }
    return { ok: true, servers };
  },
  async rewire(text: string, _context: HostContext, launches: ReadonlyMap<string, HostLaunch>) {
    const lib = await toml();
    const value = lib.parse(text);
    const tables = isRecord(value.mcp_servers) ? value.mcp_servers : {};
    const notes: string[] = [];
    const lines = text.split("\n");
    const paths = lines.map((line) => headerPath(lib, line));
    const out = [...lines];
    let inPlace = true;
    // From the last server up, so that the line numbers of those above stay right.
    for (const [name, launch] of [...launches].reverse()) {
      const raw = tables[name];
      if (!isRecord(raw)) continue;
      const headers = paths.flatMap((path, i) => path === undefined ? [] : [i]);
      const start = headers.find((i) =>
        paths[i]!.length === 2 && paths[i]![0] === "mcp_servers" && paths[i]![1] === name
      );
      if (start === undefined) {
        inPlace = false;
        break;
      }
      const endOf = (i: number) => headers.find((h) => h > i) ?? lines.length;
      // Its own sub-tables that say how it starts ([mcp_servers.NAME.env], ...), wherever they stand.
      const dropped = headers.filter((i) => {
        const path = paths[i]!;
        return path.length > 2 && path[0] === "mcp_servers" && path[1] === name && LAUNCH_TABLES.has(path[2]);
      });
      const mainEnd = endOf(start);
      const body = lib.parse(lines.slice(start, mainEnd).join("\n") + "\n") as Record<
        string,
        Record<string, Record<string, unknown>>
      >;
      const rewired = rewiredEntry(body.mcp_servers[name], launch);
      const replacement = lib.stringify({ mcp_servers: { [name]: rewired } }).trimEnd().split("\n");
      // Blank lines before the next table stay.
      let keep = mainEnd;
      while (keep > start + 1 && lines[keep - 1].trim() === "") keep--;
      const cut = [[start, keep, replacement] as const, ...dropped.map((i) => [i, endOf(i), []] as const)]
        .sort((x, y) => y[0] - x[0]);
      for (const [from, to, put] of cut) out.splice(from, to - from, ...put);
    }
    let result = out.join("\n");
    let ok = inPlace;
    if (ok) {
      try {
        const check = lib.parse(result);
        ok = [...launches].every(([name, launch]) => {
          const entry = isRecord(check.mcp_servers) ? check.mcp_servers[name] : undefined;
          return !isRecord(tables[name]) || (isRecord(entry) && entry.command === launch.command);
        });
      } catch {
        ok = false;
      }
    }
    if (!ok) {
      // Written some other way than one table per server: the whole file is written again, comments lost.
      const servers: Record<string, unknown> = { ...tables };
      for (const [name, launch] of launches) {
        if (isRecord(tables[name])) servers[name] = rewiredEntry(tables[name], launch);
      }
      result = lib.stringify({ ...value, mcp_servers: servers });
      notes.push(
        "config.toml was written again whole (its servers are not one [mcp_servers.NAME] table each): its comments are gone",
      );
    }
    return { text: result, notes };
  },
};

/** Sub-tables of a server that say how it starts: a rewired server has none. */
const LAUNCH_TABLES = new Set(["env", "http_headers", "env_http_headers"]);
