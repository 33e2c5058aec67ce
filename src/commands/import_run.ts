/**
 * The work of the `import` command: reads the MCP servers users keep in their hosts (Claude Desktop, Claude Code, Cursor, VS
 * Code, Codex, Windsurf, Gemini CLI), or in one file named on the command line, and writes them into the
 * project's `tools.json` (`mcpServers`, merged: a name there already is said, never overwritten), each with the
 * profile its entry calls for and its credentials as secret names. `--apply HOST` then rewires that host's files
 * so that each server starts through toolgate (`toolgate serve --cwd PROJECT --server NAME`), keeping a backup
 * that `--undo HOST` puts back byte for byte. `init --from-mcp FILE` is `import FILE`.
 *
 * Not here: the command's options (`import.ts`), each host's format (`hosts/`), the profile proposal
 * (`hosts/server_profile.ts`).
 *
 * @module
 */
import { EXIT, type Io } from "./cli.ts";
import { join, resolve } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import { readJsonc } from "../manifest/jsonc.ts";
import { HOST_IDS, type HostId, type HostLaunch } from "../hosts/host_format.ts";
import { guessHost, HOST_FORMATS, type HostFile, hostFiles } from "../hosts/host_files.ts";
import { type HostImport, type HostSource, importHostServers } from "../hosts/host_import.ts";

const quote = (text: string): string => JSON.stringify(text);

/** A file to read: a host's, found in its place or named. */
interface Source extends HostFile {
  readonly named: boolean;
}

/** A file that cannot be read (a folder, no permission): one line, nothing written, exit 1. */
class Unreadable extends Error {}

/** The text of `path`, or `undefined` when nothing is there. */
function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) return undefined;
    throw new Unreadable(`cannot read ${path}: ${(error as Error).message}`);
  }
}

/** What one import is asked to do. */
export interface ImportRequest {
  /** One file to read (else the hosts' places). */
  readonly file?: string;
  /** The host to read (the named file's, or the only one looked at). */
  readonly host?: HostId;
  /** Rewire this host's files after the import. */
  readonly apply?: HostId;
  /** The project whose tools.json is written, absolute. */
  readonly project: string;
}

/** The sources of a request, found or named. */
function sourcesOf(request: ImportRequest, io: Io): Source[] | string {
  if (request.file === undefined) {
    return hostFiles(request.project, io.env.HOME)
      .filter((place) => request.host === undefined || place.host === request.host)
      .map((place) => ({ ...place, named: false }));
  }
  const path = resolve(io.cwd, request.file);
  const text = readText(path);
  if (text === undefined) return `${path}: no such file`;
  let host = request.host;
  if (host === undefined) {
    // JSONC, as the hosts write it; a file that does not parse is told by its name, or said by its reader.
    host = guessHost(path, readJsonc(text));
  }
  if (host === undefined) {
    return `${path}:1:1: it is no MCP host's configuration (no "mcpServers" or "servers" object; name its host ` +
      "with --host)";
  }
  return [{ host, file: path, scope: "project", named: true }];
}

/**
 * Imports the servers of `request` into the project's tools.json (and rewires the host with `apply`).
 *
 * @example
 * ```ts ignore
 * // Not run here: it needs a command's Io and host files (tests/hosts/import_corpus_test.ts runs it).
 * await importServers({ file: "claude_desktop_config.json", project: "/srv/p" }, io); // wrote tools.json ...
 * ```
 */
export async function importServers(request: ImportRequest, io: Io): Promise<number> {
  try {
    return await importFrom(request, io);
  } catch (error) {
    if (!(error instanceof Unreadable)) throw error;
    await io.stderr(`toolgate: ${error.message}\n`);
    return EXIT.failure;
  }
}

async function importFrom(request: ImportRequest, io: Io): Promise<number> {
  const sources = sourcesOf(request, io);
  if (typeof sources === "string") {
    await io.stderr(`toolgate: ${sources}\n`);
    return EXIT.usage;
  }
  const read: (HostSource & { text: string })[] = [];
  for (const source of sources) {
    const text = readText(source.file);
    if (text === undefined) continue;
    const result = await HOST_FORMATS[source.host].read(text, {
      file: source.file,
      project: request.project,
      named: source.named,
    });
    if (!result.ok) {
      // One line naming the file and the position; nothing is written.
      await io.stderr(`toolgate: ${result.reason}\n`);
      return EXIT.usage;
    }
    read.push({ host: source.host, file: source.file, servers: result.servers, text });
  }
  const lines: string[] = [];
  if (request.file === undefined) {
    lines.push("found:");
    for (const host of HOST_IDS) {
      if (request.host !== undefined && host !== request.host) continue;
      const label = HOST_FORMATS[host].label;
      const files = read.filter((source) => source.host === host);
      if (files.length === 0) lines.push(`  ${label}: none`);
      for (const source of files) {
        const names = source.servers.map((server) => server.name);
        lines.push(`  ${label} (${source.file}): ${names.length === 0 ? "none" : names.join(", ")}`);
      }
    }
  }
  const imported = importHostServers(read, request.project, io.env.HOME);
  const manifestPath = join(request.project, "tools.json");
  const merged = await mergeManifest(manifestPath, imported);
  if (typeof merged === "string") {
    await io.stderr(`toolgate: ${merged}\n`);
    return EXIT.usage;
  }
  const added = imported.servers.filter((server) => merged.added.includes(server.name));
  if (added.length > 0) {
    const { replaceFile } = await import("../hosts/replace_file.ts");
    replaceFile(manifestPath, new TextEncoder().encode(merged.text));
    for (const folder of added.flatMap((server) => server.folders ?? [])) {
      Deno.mkdirSync(folder, { recursive: true, mode: 0o700 });
    }
    const count = added.length;
    const what = `${count} MCP server${count === 1 ? "" : "s"}`;
    const names = added.map((server) => server.name).join(", ");
    lines.push(
      merged.created
        ? `wrote tools.json in ${request.project} with ${what}: ${names}`
        : `added ${what} to tools.json in ${request.project}: ${names}`,
    );
  } else lines.push(`tools.json in ${request.project}: nothing new to add`);
  lines.push(...imported.notes.map((note) => `  ${note}`), ...merged.notes.map((note) => `  ${note}`));
  if (added.length > 0) {
    lines.push("proposed profiles (change them in tools.json, under each server's permissions):");
    for (const server of added) {
      const proposal = server.entry.permissions === "none" && typeof server.entry.command === "string"
        ? ["none: reads the system folders and the workspace only, writes nothing, no network"]
        : [];
      for (const line of [...proposal, ...server.proposal]) lines.push(`  ${server.name}: ${line}`);
    }
    lines.push(
      "each server runs in its own sandbox under its profile; its tools run once `toolgate trust` pinned them.",
    );
  }
  if (imported.secrets.length > 0) {
    lines.push(
      "store each credential once:",
      ...imported.secrets.map((name) => `  toolgate secrets set ${name}`),
    );
  }
  await io.stdout(lines.join("\n") + "\n");
  if (request.apply === undefined) return EXIT.ok;
  return await applyHost(request.apply, read, imported, merged.present, request.project, io);
}

/** The manifest with the new servers added, or one line saying why it cannot be. */
async function mergeManifest(
  path: string,
  imported: HostImport,
): Promise<
  { text: string; created: boolean; added: string[]; present: Set<string>; notes: string[] } | string
> {
  const text = readText(path);
  const notes: string[] = [];
  const added: string[] = [];
  // The servers whose manifest entry is this very import's (added now, or there already, started the same way).
  const present = new Set<string>();
  if (text === undefined) {
    const mcpServers: Record<string, unknown> = {};
    for (const server of imported.servers) {
      mcpServers[server.name] = server.entry;
      added.push(server.name);
      present.add(server.name);
    }
    return {
      text: JSON.stringify({ tools: [], mcpServers }, null, 2) + "\n",
      created: true,
      added,
      present,
      notes,
    };
  }
  const { readJsonConfig, editJson } = await import("../hosts/json_config.ts");
  const read = await readJsonConfig(text, path);
  if (!read.ok) return read.reason;
  const value = read.config.value;
  if (!isRecord(value)) return read.config.at([], "a manifest must be a JSON object");
  if (value.mcpServers !== undefined && !isRecord(value.mcpServers)) {
    return read.config.at(["mcpServers"], '"mcpServers" must be an object');
  }
  const existing = (value.mcpServers ?? {}) as Record<string, unknown>;
  const edits: [string[], unknown][] = [];
  for (const server of imported.servers) {
    if (Object.hasOwn(existing, server.name)) {
      // The same server if it starts the same way: its profile, secrets and switches are the user's to edit.
      if (sameLaunch(existing[server.name], server.entry)) present.add(server.name);
      else {
        notes.push(
          `server ${
            quote(server.name)
          }: tools.json has a server of that name already; it is not overwritten ` +
            "(rename one of them)",
        );
      }
      continue;
    }
    edits.push([["mcpServers", server.name], server.entry]);
    added.push(server.name);
    present.add(server.name);
  }
  return { text: await editJson(text, edits), created: false, added, present, notes };
}

/** Rewires `host`'s files read by this import: each server the manifest now holds starts through toolgate. */
async function applyHost(
  host: HostId,
  read: readonly (HostSource & { text: string })[],
  imported: HostImport,
  present: ReadonlySet<string>,
  project: string,
  io: Io,
): Promise<number> {
  const { keepBackup } = await import("../hosts/host_backup.ts");
  const { replaceFile } = await import("../hosts/replace_file.ts");
  const { serverLaunch, toolgateProgram } = await import("../hosts/toolgate_command.ts");
  const program = toolgateProgram(io.env);
  const files = read.filter((source) => source.host === host);
  const label = HOST_FORMATS[host].label;
  if (files.length === 0) {
    await io.stderr(`toolgate: ${label}: no configuration found to rewire\n`);
    return EXIT.failure;
  }
  const lines: string[] = [];
  for (const source of files) {
    const launches = new Map<string, HostLaunch>();
    for (const server of imported.servers) {
      if (server.file !== source.file) continue;
      if (present.has(server.name)) {
        launches.set(server.hostName, serverLaunch(program, project, server.name));
      } else {lines.push(
          `  server ${quote(server.hostName)}: left as it is (tools.json has another of its name)`,
        );}
    }
    if (launches.size === 0) {
      lines.push(`${source.file}: nothing to rewire`);
      continue;
    }
    const rewired = await HOST_FORMATS[host].rewire(source.text, { file: source.file, project }, launches);
    const bytes = Deno.readFileSync(source.file);
    const written = new TextEncoder().encode(rewired.text);
    if (!keepBackup(io.env, host, source.file, bytes, written)) {
      await io.stderr(
        `toolgate: ${source.file} was rewired already (its backup is kept): \`toolgate import --undo ${host}\` ` +
          "first\n",
      );
      return EXIT.failure;
    }
    replaceFile(source.file, written);
    lines.push(
      `rewired ${source.file}: ${[...launches.keys()].join(", ")} ${
        launches.size === 1 ? "starts" : "start"
      } ` +
        `through ${program[0]}`,
      ...rewired.notes.map((note) => `  ${note}`),
    );
  }
  lines.push(
    `each server starts once ${project}/tools.json is trusted (\`toolgate trust\` there); restart ${label} to ` +
      "use them",
    `to put it back as it was: toolgate import --undo ${host}`,
  );
  await io.stdout(lines.join("\n") + "\n");
  return EXIT.ok;
}

/**
 * Puts back `host`'s files from their backups (`toolgate import --undo HOST`).
 *
 * @example
 * ```ts ignore
 * // Not run here: it needs a command's Io and a backup (tests/hosts/import_corpus_test.ts runs it).
 * await undoHost("cursor", io); // restored /srv/p/.cursor/mcp.json
 * ```
 */
export async function undoHost(host: HostId, io: Io): Promise<number> {
  const { backupsOf, dropBackup } = await import("../hosts/host_backup.ts");
  const { replaceFile, undoneName } = await import("../hosts/replace_file.ts");
  const backups = backupsOf(io.env, host);
  if (backups.length === 0) {
    await io.stderr(`toolgate: no backup of ${HOST_FORMATS[host].label}'s configuration: nothing to undo\n`);
    return EXIT.failure;
  }
  for (const backup of backups) {
    let now: Uint8Array | undefined;
    try {
      now = Deno.readFileSync(backup.file);
    } catch {
      now = undefined;
    }
    // Changed since --apply (by the host, or by hand): those bytes are kept aside, never lost.
    if (now !== undefined && backup.applied !== undefined && !sameBytes(now, backup.applied)) {
      const aside = undoneName(backup.file);
      replaceFile(aside, now);
      await io.stdout(`${backup.file} changed since --apply: what it held is kept in ${aside}\n`);
    }
    replaceFile(backup.file, backup.bytes);
    dropBackup(backup);
    await io.stdout(`restored ${backup.file}\n`);
  }
  return EXIT.ok;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** Do two `mcpServers` entries start the same server (the same command and arguments, or the same URL)? */
function sameLaunch(a: unknown, b: unknown): boolean {
  const launch = (entry: unknown) => {
    const { command, args, url } = isRecord(entry) ? entry : {};
    return JSON.stringify([command, args ?? [], url]);
  };
  return launch(a) === launch(b);
}
