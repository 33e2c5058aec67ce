/**
 * The servers read from hosts' files turned into a manifest's `mcpServers` entries: credentials moved to secret
 * names (`manifest/mcp_import.ts`), each stdio server given the profile its own entry calls for
 * (`server_profile.ts`), the host's tool lists kept as `allow` and `deny`. What cannot run behind toolgate is left
 * out and said: a `docker` entry (toolgate confines the server itself), an entry that starts toolgate already, a
 * second server of a name taken.
 *
 * Not here: reading the files (each host's module), writing the manifest or the host's file (`commands/import.ts`).
 *
 * @module
 */
import { basename, dirname, resolve } from "../base/paths.ts";
import { type ImportedServer, importMcpServers } from "../manifest/mcp_import.ts";
import type { HostId, HostServer } from "./host_format.ts";
import { startsToolgate } from "./host_format.ts";
import { diskKind, type PathKind, proposeProfile } from "./server_profile.ts";

/** The servers of one host file. */
export interface HostSource {
  readonly host: HostId;
  readonly file: string;
  readonly servers: readonly HostServer[];
}

/** One imported server: its manifest name and entry, where it came from, and its proposed profile's lines. */
export interface ImportedHostServer {
  /** Its name in the manifest (the host's, made a valid `mcp__SERVER__TOOL` part). */
  readonly name: string;
  readonly entry: ImportedServer;
  readonly host: HostId;
  readonly file: string;
  /** Its name in the host's file. */
  readonly hostName: string;
  /** The proposal, one line each (what is read and written, what is not granted). */
  readonly proposal: readonly string[];
  /** Folders to make for it when the manifest is written (where its proposed data file goes). */
  readonly folders?: readonly string[];
}

/** What an import made of the sources. */
export interface HostImport {
  readonly servers: readonly ImportedHostServer[];
  /** Secret names to store (`toolgate secrets set NAME`). */
  readonly secrets: readonly string[];
  /** What was changed or left out, one line each; never a value. */
  readonly notes: readonly string[];
}

/** The plain words for a docker entry. */
export const DOCKER_NOTE =
  "docker entries are not supported: toolgate confines the server itself; install the " +
  "server's package and use npx, uvx or node instead";

const quote = (text: string): string => JSON.stringify(text);

/**
 * Converts the servers of `sources` (in order: a name taken by an earlier one is left out and said).
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { importHostServers } from "./host_import.ts";
 * const imported = importHostServers([{
 *   host: "claude-desktop",
 *   file: "/home/me/.config/Claude/claude_desktop_config.json",
 *   servers: [
 *     { name: "git", entry: { command: "uvx", args: ["mcp-server-git", "--repository", "/srv/repo"] }, enabled: true, credentialEnv: [], notes: [] },
 *     { name: "pg", entry: { command: "docker", args: ["run", "-i", "mcp/postgres"] }, enabled: true, credentialEnv: [], notes: [] },
 *   ],
 * }], "/srv/p", "/home/me", () => "dir");
 * assertEquals(imported.servers[0].entry.permissions, { read: [], write: ["/srv/repo"], net: false });
 * assertEquals(imported.notes.some((note) => note.includes("docker entries are not supported")), true);
 * ```
 */
export function importHostServers(
  sources: readonly HostSource[],
  project: string,
  home: string | undefined,
  kind: PathKind = diskKind,
): HostImport {
  const servers: ImportedHostServer[] = [];
  const secrets: string[] = [];
  const notes: string[] = [];
  for (const source of sources) {
    for (const server of source.servers) {
      const where = `server ${quote(server.name)} of ${source.file}`;
      notes.push(...server.notes);
      const command = typeof server.entry.command === "string" ? basename(server.entry.command) : undefined;
      if (command === "docker" || command === "podman") {
        notes.push(`${where}: left out: ${DOCKER_NOTE}`);
        continue;
      }
      if (startsToolgate(server.entry)) {
        notes.push(`${where}: starts toolgate already (left as it is)`);
        continue;
      }
      let converted;
      try {
        converted = importMcpServers(
          { mcpServers: { [server.name]: server.entry } },
          { [server.name]: server.credentialEnv },
        );
      } catch (error) {
        notes.push(`${where}: left out: ${(error as Error).message}`);
        continue;
      }
      const [[convertedName, entry]] = Object.entries(converted.mcpServers);
      // A manifest's server name is at most 32 characters (tools are mcp__SERVER__TOOL, at most 64).
      const name = convertedName.length <= 32
        ? convertedName
        : convertedName.slice(0, 32).replace(/[-_]+$/, "");
      if (name !== convertedName) {
        notes.push(`${where}: named ${quote(name)} (a server's name has 32 characters at most)`);
      }
      const taken = servers.find((other) => other.name === name);
      if (taken !== undefined) {
        notes.push(`${where}: left out: ${taken.file} has a server named ${quote(name)} already`);
        continue;
      }
      notes.push(...converted.notes.filter((note) => !/it was disabled/.test(note)));
      for (const secret of converted.secrets) if (!secrets.includes(secret)) secrets.push(secret);
      let proposal: readonly string[] = [];
      let folders: readonly string[] | undefined;
      if (typeof entry.command === "string") {
        const base = server.cwd === undefined ? project : resolve(dirname(source.file), server.cwd);
        const proposed = proposeProfile(server.entry, base, home, kind);
        entry.permissions = proposed.permissions;
        proposal = proposed.lines;
        if (proposed.env !== undefined) {
          const own = typeof entry.env === "object" && entry.env !== null ? entry.env : {};
          entry.env = { ...own, ...proposed.env };
        }
        folders = proposed.folders;
        if (Array.isArray(entry.secrets) && !proposal.some((line) => line.includes("permissions.net"))) {
          proposal = [
            ...proposal,
            "it takes a credential, so it likely reaches a service: no network is granted; name the service's " +
            "hosts in permissions.net",
          ];
        }
      } else {
        proposal = [
          `reaches ${new URL(String(entry.url)).host} (its own endpoint) through toolgate's client`,
        ];
      }
      if (server.allow !== undefined) entry.allow = [...server.allow];
      if (server.deny !== undefined) entry.deny = [...server.deny];
      if (!server.enabled) {
        notes.push(`${where}: the host has it switched off; it stays off there, and is imported`);
      }
      servers.push({
        name,
        entry,
        host: source.host,
        file: source.file,
        hostName: server.name,
        proposal,
        ...(folders === undefined ? {} : { folders }),
      });
    }
  }
  return { servers, secrets, notes };
}
