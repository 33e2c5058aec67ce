/**
 * Turns an MCP host's configuration (Claude Desktop's `claude_desktop_config.json`, Claude Code's `.mcp.json`)
 * into the `mcpServers` block of a toolgate manifest: the same shape (`command`, `args`, `env` for a stdio
 * server, `url`, `headers` for an HTTP one) plus toolgate's own keys, with every credential moved out of the file
 * into secret names (`toolgate secrets set NAME`), because a manifest is meant to be committed.
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import { ENV_NAME_PATTERN } from "../base/env_name.ts";

/** One server of the block, as the manifest holds it. */
export type ImportedServer = Record<string, unknown>;

/** What an import made: the block, the secret names to store, and one line per change or thing left out. */
export interface McpImport {
  readonly mcpServers: Record<string, ImportedServer>;
  /** Secret names the servers now take from the store (their values were not copied). */
  readonly secrets: readonly string[];
  /** What was changed or left out, one line each; never a value. */
  readonly notes: readonly string[];
}

/** A server name usable in `mcp__SERVER__TOOL`: the tool-name characters, without a double underscore. */
const SERVER_NAME = /^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$/;

/** Variable names that carry a credential: their values become secrets. */
const SECRET_ENV =
  /TOKEN|SECRET|PASSW|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH|(^|_)KEY$|(^|_)PAT$/i;

/** Header names that carry a credential. */
const SECRET_HEADER = /^(authorization|proxy-authorization|cookie)$|token|secret|api-?key|auth/i;

const STDIO_KEYS = new Set(["command", "args", "env", "type"]);
const HTTP_KEYS = new Set(["url", "headers", "type"]);

function quote(value: string): string {
  return JSON.stringify(value);
}

/** A name for the secret that holds a header's value: `SERVER_HEADER`, upper case, as variables are named. */
function headerSecret(server: string, header: string): string {
  return `${server}_${header}`.toUpperCase().replace(/[^A-Z0-9_]/g, "_").replace(/^([0-9])/, "_$1");
}

function stringRecord(value: unknown): Record<string, string> | undefined {
  if (!isRecord(value)) return undefined;
  return Object.values(value).every((v) => typeof v === "string")
    ? value as Record<string, string>
    : undefined;
}

/**
 * Converts an MCP host's configuration into an `mcpServers` block; throws an `Error` naming what is wrong when
 * the configuration has no `mcpServers` object or a server is neither a stdio nor an HTTP one. `credentials`
 * names, per server (by its name in `config`), the variables and headers whose values are credentials whatever
 * their names (a VS Code `${input:ID}`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { importMcpServers } from "./mcp_import.ts";
 * const imported = importMcpServers({
 *   mcpServers: {
 *     github: {
 *       command: "npx",
 *       args: ["-y", "@modelcontextprotocol/server-github"],
 *       env: { GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_example" },
 *     },
 *   },
 * });
 * assert.deepEqual(imported.mcpServers.github.secrets, ["GITHUB_PERSONAL_ACCESS_TOKEN"]);
 * assert.deepEqual(imported.secrets, ["GITHUB_PERSONAL_ACCESS_TOKEN"]);
 * ```
 */
export function importMcpServers(
  config: unknown,
  credentials: Readonly<Record<string, readonly string[]>> = {},
): McpImport {
  if (!isRecord(config) || !isRecord(config.mcpServers)) {
    throw new Error('it has no "mcpServers" object (the shape of claude_desktop_config.json)');
  }
  const mcpServers: Record<string, ImportedServer> = {};
  const secrets: string[] = [];
  const notes: string[] = [];
  const addSecret = (name: string) => {
    if (!secrets.includes(name)) secrets.push(name);
  };
  for (const [rawName, raw] of Object.entries(config.mcpServers)) {
    if (!isRecord(raw)) throw new Error(`server ${quote(rawName)} is not an object`);
    let name = rawName;
    if (!SERVER_NAME.test(name)) {
      name = rawName.replace(/[^A-Za-z0-9-]+/g, "_").replace(/^_+|_+$/g, "") || "server";
      while (Object.hasOwn(mcpServers, name)) name += "_";
      notes.push(`server ${quote(rawName)} is named ${quote(name)} (tools are named mcp__SERVER__TOOL)`);
    }
    if (raw.disabled === true) notes.push(`server ${quote(name)}: it was disabled; it is imported enabled`);
    const server: ImportedServer = {};
    const forced = new Set(credentials[rawName] ?? []);
    if (typeof raw.command === "string") {
      server.command = raw.command;
      if (raw.args !== undefined) {
        if (!Array.isArray(raw.args) || raw.args.some((a) => typeof a !== "string")) {
          throw new Error(`server ${quote(rawName)}: "args" must be an array of strings`);
        }
        server.args = raw.args;
      }
      if (raw.env !== undefined) {
        const env = stringRecord(raw.env);
        if (env === undefined) throw new Error(`server ${quote(rawName)}: "env" must map names to strings`);
        const kept: Record<string, string> = {};
        const moved: string[] = [];
        for (const [variable, value] of Object.entries(env)) {
          if (
            (SECRET_ENV.test(variable) || forced.has(variable)) &&
            ENV_NAME_PATTERN.test(variable.toUpperCase())
          ) {
            moved.push(variable.toUpperCase());
            addSecret(variable.toUpperCase());
          } else kept[variable] = value;
        }
        if (Object.keys(kept).length > 0) server.env = kept;
        if (moved.length > 0) {
          server.secrets = moved;
          notes.push(
            `server ${quote(name)}: ${moved.join(", ")} moved from "env" to "secrets" (value not copied)`,
          );
        }
      }
      for (const key of Object.keys(raw)) {
        if (!STDIO_KEYS.has(key) && key !== "disabled") {
          notes.push(`server ${quote(name)}: ${quote(key)} left out (not a key toolgate knows)`);
        }
      }
    } else if (typeof raw.url === "string") {
      if (!URL.canParse(raw.url)) throw new Error(`server ${quote(rawName)}: "url" is not a URL`);
      server.url = raw.url;
      if (raw.type === "sse") {
        notes.push(
          `server ${quote(name)}: an SSE server; toolgate's gateway will speak Streamable HTTP only`,
        );
      }
      if (raw.headers !== undefined) {
        const headers = stringRecord(raw.headers);
        if (headers === undefined) {
          throw new Error(`server ${quote(rawName)}: "headers" must map names to strings`);
        }
        const out: Record<string, string> = {};
        const moved: string[] = [];
        for (const [header, value] of Object.entries(headers)) {
          if (!SECRET_HEADER.test(header) && !forced.has(header)) {
            out[header] = value;
            continue;
          }
          const secret = headerSecret(name, header);
          // Claude Code's `${NAME}` placeholder; the scheme word of an Authorization value stays readable.
          const scheme = /^(Bearer|Basic|Token)\s+/i.exec(value)?.[0] ?? "";
          out[header] = `${scheme}\${${secret}}`;
          moved.push(secret);
          addSecret(secret);
        }
        server.headers = out;
        if (moved.length > 0) {
          server.secrets = moved;
          notes.push(
            `server ${quote(name)}: header values moved to the secrets ${moved.join(", ")} (not copied)`,
          );
        }
      }
      for (const key of Object.keys(raw)) {
        if (!HTTP_KEYS.has(key) && key !== "disabled") {
          notes.push(`server ${quote(name)}: ${quote(key)} left out (not a key toolgate knows)`);
        }
      }
    } else {
      throw new Error(`server ${quote(rawName)} has neither "command" (stdio) nor "url" (HTTP)`);
    }
    // Closed by default, like a tool: the user loosens it by name.
    server.permissions = "none";
    mcpServers[name] = server;
  }
  return { mcpServers, secrets, notes };
}
