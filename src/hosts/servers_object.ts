/**
 * The object of servers most hosts keep (`mcpServers` in Claude Desktop, Claude Code, Cursor, Windsurf and Gemini
 * CLI; `servers` in VS Code): each entry read into a {@linkcode HostServer}, every wrong shape placed at its line
 * and column, and each entry rewired in place. A host module says which keys mean what ({@linkcode ServersShape}).
 *
 * Not here: where the object sits in a file (the host's module), JSON syntax and positions (`json_config.ts`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import type { HostContext, HostFormat, HostId, HostLaunch, HostRead, HostServer } from "./host_format.ts";
import { rewiredEntry } from "./host_format.ts";
import { editJson, type JsonConfig, type JsonPath, readJsonConfig } from "./json_config.ts";

/** What a host's keys mean. */
export interface ServersShape {
  /** Keys naming a Streamable HTTP endpoint, in the order they are looked at. */
  readonly httpKeys: readonly string[];
  /** Keys naming an SSE endpoint (Gemini's `url`). */
  readonly sseKeys?: readonly string[];
  /** The key holding the only tools shown (Gemini's `includeTools`). */
  readonly allowKey?: string;
  /** The keys holding the tools hidden (Gemini's `excludeTools`, Windsurf's `disabledTools`). */
  readonly denyKeys?: readonly string[];
  /** A server's credentials whatever their names, by its entry (VS Code's `${input:ID}` values). */
  readonly credentialEnv?: (entry: Readonly<Record<string, unknown>>) => string[];
}

const quote = (text: string): string => JSON.stringify(text);

function stringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function stringMap(value: unknown): value is Record<string, string> {
  return isRecord(value) && Object.values(value).every((item) => typeof item === "string");
}

/**
 * The servers of the object at `path` of `config` (no object there: none), or one line placing what is wrong.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { readJsonConfig } from "./json_config.ts";
 * import { readServers } from "./servers_object.ts";
 * const read = await readJsonConfig('{"mcpServers": {"fs": {"command": "npx", "args": "x"}}}', "c.json");
 * const servers = read.ok && readServers(read.config, ["mcpServers"], { httpKeys: ["url"] });
 * assertEquals(servers, { ok: false, reason: 'c.json:1:50: server "fs": "args" must be an array of strings' });
 * ```
 */
export function readServers(
  config: JsonConfig,
  path: JsonPath,
  shape: ServersShape,
): { ok: true; servers: HostServer[] } | { ok: false; reason: string } {
  let object: unknown = config.value;
  for (const key of path) object = isRecord(object) ? object[key as string] : undefined;
  if (object === undefined) return { ok: true, servers: [] };
  if (!isRecord(object)) return { ok: false, reason: config.at(path, `"${path.at(-1)}" must be an object`) };
  const servers: HostServer[] = [];
  for (const [name, raw] of Object.entries(object)) {
    const at = (key: string | undefined, message: string) =>
      config.at(
        key === undefined ? [...path, name] : [...path, name, key],
        `server ${quote(name)}: ${message}`,
      );
    if (!isRecord(raw)) return { ok: false, reason: at(undefined, "must be an object") };
    const entry: Record<string, unknown> = {};
    const notes: string[] = [];
    const httpKey = shape.httpKeys.find((key) => raw[key] !== undefined);
    const sseKey = shape.sseKeys?.find((key) => raw[key] !== undefined);
    if (raw.command !== undefined) {
      if (typeof raw.command !== "string" || raw.command.trim() === "") {
        return { ok: false, reason: at("command", '"command" must be a non-empty string') };
      }
      entry.command = raw.command;
      if (raw.args !== undefined) {
        if (!stringList(raw.args)) {
          return { ok: false, reason: at("args", '"args" must be an array of strings') };
        }
        entry.args = raw.args;
      }
      if (raw.env !== undefined) {
        if (!stringMap(raw.env)) return { ok: false, reason: at("env", '"env" must map names to strings') };
        entry.env = raw.env;
      }
    } else if (httpKey !== undefined || sseKey !== undefined) {
      const key = (httpKey ?? sseKey)!;
      if (typeof raw[key] !== "string") return { ok: false, reason: at(key, `${quote(key)} must be a URL`) };
      entry.url = raw[key];
      if (httpKey === undefined || raw.type === "sse") entry.type = "sse";
      if (raw.headers !== undefined) {
        if (!stringMap(raw.headers)) {
          return { ok: false, reason: at("headers", '"headers" must map names to strings') };
        }
        entry.headers = raw.headers;
      }
    } else {
      const urls = [...shape.httpKeys, ...shape.sseKeys ?? []].map(quote).join(" or ");
      return { ok: false, reason: at(undefined, `has neither "command" (stdio) nor ${urls} (HTTP)`) };
    }
    if (raw.envFile !== undefined) {
      notes.push(`server ${quote(name)}: "envFile" is not read (name its variables in env, or as secrets)`);
    }
    const cwd = typeof raw.cwd === "string" ? raw.cwd : undefined;
    const allow = shape.allowKey !== undefined && stringList(raw[shape.allowKey])
      ? raw[shape.allowKey] as string[]
      : undefined;
    const deny = (shape.denyKeys ?? []).flatMap((key) => stringList(raw[key]) ? raw[key] as string[] : []);
    servers.push({
      name,
      entry,
      enabled: raw.disabled !== true && raw.enabled !== false,
      ...(cwd === undefined ? {} : { cwd }),
      credentialEnv: shape.credentialEnv?.(raw) ?? [],
      ...(allow === undefined ? {} : { allow }),
      ...(deny.length === 0 ? {} : { deny }),
      notes,
    });
  }
  return { ok: true, servers };
}

/**
 * `text` with each server of `launches` in the object at `path` started by its launch; everything else of the
 * entry stays, its tool lists too (`serve --server NAME` shows the server's tools by their own names).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { rewireServers } from "./servers_object.ts";
 * const text = '{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"], "disabled": true}}}';
 * const out = await rewireServers(text, ["mcpServers"], { httpKeys: ["url"] }, new Map([["fs", { command: "/bin/toolgate", args: ["serve"] }]]));
 * assertEquals(JSON.parse(out.text).mcpServers.fs, { command: "/bin/toolgate", args: ["serve"], disabled: true });
 * ```
 */
export async function rewireServers(
  text: string,
  path: JsonPath,
  _shape: ServersShape,
  launches: ReadonlyMap<string, HostLaunch>,
  value?: unknown,
): Promise<{ text: string; notes: string[] }> {
  const { parse } = await import("npm:jsonc-parser@3.3.1");
  let object: unknown = value ?? parse(text, [], { allowTrailingComma: true });
  for (const key of path) object = isRecord(object) ? object[key as string] : undefined;
  const notes: string[] = [];
  const edits: [JsonPath, unknown][] = [];
  for (const [name, launch] of launches) {
    const raw = isRecord(object) ? object[name] : undefined;
    if (!isRecord(raw)) continue;
    edits.push([[...path, name], rewiredEntry(raw, launch)]);
  }
  return { text: await editJson(text, edits), notes };
}

/**
 * The format of a host whose file is one JSON object holding its servers under `key` (Claude Desktop's, Cursor's,
 * Windsurf's, Gemini CLI's): read, with a named file that lacks the key an error at 1:1; rewired in place.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { serversFileFormat } from "./servers_object.ts";
 * const format = serversFileFormat("cursor", "Cursor", "mcpServers", { httpKeys: ["url"] });
 * const read = await format.read('{"servers": {}}', { file: "x.json", project: "/p", named: true });
 * assertEquals(read, { ok: false, reason: 'x.json:1:1: it has no "mcpServers" object (the shape of Cursor\'s mcp.json)' });
 * ```
 */
export function serversFileFormat(
  id: HostId,
  label: string,
  key: string,
  shape: ServersShape,
  fileName = "mcp.json",
): HostFormat {
  return {
    id,
    label,
    async read(text: string, context: HostContext): Promise<HostRead> {
      const read = await readJsonConfig(text, context.file);
      if (!read.ok) return read;
      const value = read.config.value;
      if (!isRecord(value)) return { ok: false, reason: read.config.at([], "it is not a JSON object") };
      if (context.named && value[key] === undefined) {
        return {
          ok: false,
          reason: read.config.at([], `it has no ${quote(key)} object (the shape of ${label}'s ${fileName})`),
        };
      }
      return readServers(read.config, [key], shape);
    },
    rewire(text, _context, launches) {
      return rewireServers(text, [key], shape, launches);
    },
  };
}
