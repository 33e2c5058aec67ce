/**
 * The profile a server's own entry calls for: the paths it is given in its arguments or its environment become
 * exactly those reads and writes (the filesystem server's roots and the git server's `--repository` are written
 * by it; the memory server's `MEMORY_FILE_PATH` is its data file; a `node FILE` entry reads its package's folder,
 * dependencies included, so that "Cannot find module" cannot happen; any other existing path it names is read).
 * Never a network grant: a URL it is given is said, and left for the user to name in `permissions.net`.
 *
 * Not here: checking a profile (`manifest/profiles.ts`), installing a package (`src/packages/`).
 *
 * @module
 */
import { basename, dirname, isAbsolute, join, resolve } from "../base/paths.ts";

/** An inline profile, as the manifest's `permissions` holds it. */
export interface ProposedProfile {
  readonly read: readonly string[];
  readonly write: readonly string[];
  readonly net: false;
}

/** The project's folder for a memory server's data file, where the host set no `MEMORY_FILE_PATH`. */
export const MEMORY_DATA_FOLDER = ".mcp-memory";

/** What a server is proposed: its `permissions` (`"none"` when it names no path), and why, one line each. */
export interface ProfileProposal {
  readonly permissions: "none" | ProposedProfile;
  readonly lines: readonly string[];
  /** Variables the entry is given besides its own (the memory server's data file where the host set none). */
  readonly env?: Readonly<Record<string, string>>;
  /** Folders to make for it (where that data file goes). */
  readonly folders?: readonly string[];
}

/** What is at a path: a file, a folder, or nothing (a test passes its own). */
export type PathKind = (path: string) => "file" | "dir" | undefined;

/** The real filesystem's {@linkcode PathKind}. */
export const diskKind: PathKind = (path) => {
  try {
    const info = Deno.statSync(path);
    return info.isDirectory ? "dir" : "file";
  } catch {
    return undefined;
  }
};

/** The package an `npx` or `uvx` entry runs, without its version, and the arguments the server gets. */
function packageOf(command: string, args: readonly string[]): { name: string; rest: string[] } | undefined {
  const program = basename(command);
  if (program !== "npx" && program !== "uvx" && program !== "bunx") return undefined;
  let from: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--from" || arg === "-p" || arg === "--package") {
      from = args[++i];
      continue;
    }
    if (arg.startsWith("-")) continue;
    const spec = from ?? arg;
    // `@scope/name@1.2.3` or `name@1.2.3`, `name==1.2.3`.
    const name = spec.replace(/(?<=.)@[^/]*$/, "").replace(/[=<>~!].*$/, "");
    return { name, rest: args.slice(i + 1) };
  }
  return undefined;
}

/** The package a `node FILE` entry runs when FILE is inside a `node_modules` (`@scope/name` or `name`). */
function installedPackage(file: string, rest: string[]): { name: string; rest: string[] } | undefined {
  const at = file.lastIndexOf("/node_modules/");
  if (at === -1) return undefined;
  const parts = file.slice(at + "/node_modules/".length).split("/");
  const name = parts[0].startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  return { name, rest };
}

/** A path the server is given: absolute, `~/...`, or `./...` (against `base`). */
function pathOf(text: string, base: string, home: string | undefined): string | undefined {
  if (text.includes("\0") || /^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return undefined;
  if (isAbsolute(text)) return resolve(text);
  if ((text === "~" || text.startsWith("~/")) && home) return join(home, text.slice(2));
  if (text === "." || text.startsWith("./") || text.startsWith("../")) return resolve(base, text);
  return undefined;
}

/**
 * The folder a `node FILE` entry must read: the package that holds FILE (the nearest folder with a
 * `package.json`), or, for a package inside a `node_modules`, that whole `node_modules` (its dependencies sit
 * beside it).
 */
function packageFolder(file: string, kind: PathKind): string {
  if (file.includes("/node_modules/")) {
    return file.slice(0, file.indexOf("/node_modules/") + "/node_modules".length);
  }
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    if (kind(join(dir, "package.json")) === "file") return dir;
  }
  return dirname(file);
}

/**
 * Proposes the profile of a stdio server's entry (`command`, `args`, `env`), relative paths against `base`.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { proposeProfile } from "./server_profile.ts";
 * const proposal = proposeProfile(
 *   { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"] },
 *   "/srv/p",
 *   "/home/me",
 *   () => "dir",
 * );
 * assertEquals(proposal.permissions, { read: [], write: ["/home/me/notes"], net: false });
 * ```
 */
export function proposeProfile(
  entry: { readonly command?: unknown; readonly args?: unknown; readonly env?: unknown },
  base: string,
  home: string | undefined,
  kind: PathKind = diskKind,
): ProfileProposal {
  if (typeof entry.command !== "string") return { permissions: "none", lines: [] };
  const args = Array.isArray(entry.args) ? entry.args.filter((a): a is string => typeof a === "string") : [];
  const env = typeof entry.env === "object" && entry.env !== null
    ? Object.entries(entry.env as Record<string, unknown>).filter((e): e is [string, string] =>
      typeof e[1] === "string"
    )
    : [];
  const read: string[] = [];
  const write: string[] = [];
  const lines: string[] = [];
  const claimed = new Set<string>();
  const setEnv: Record<string, string> = {};
  const folders: string[] = [];
  const grant = (list: string[], path: string, why: string) => {
    claimed.add(path);
    if (read.includes(path) || write.includes(path)) return;
    list.push(path);
    lines.push(`${list === write ? "write" : "read"} ${path} (${why})`);
  };
  const program = basename(entry.command);
  const script = ["node", "nodejs", "bun"].includes(program)
    ? args.find((arg) => !arg.startsWith("-"))
    : undefined;
  const scriptPath = script === undefined ? undefined : pathOf(script, base, home) ?? resolve(base, script);
  const pkg = packageOf(entry.command, args) ??
    (scriptPath === undefined
      ? undefined
      : installedPackage(scriptPath, args.slice(args.indexOf(script!) + 1)));
  if (pkg?.name === "@modelcontextprotocol/server-filesystem") {
    for (const arg of pkg.rest) {
      const path = arg.startsWith("-") ? undefined : pathOf(arg, base, home) ?? resolve(base, arg);
      if (path !== undefined) grant(write, path, "a folder it serves");
    }
  }
  if (pkg?.name === "mcp-server-git") {
    const at = pkg.rest.findIndex((arg) => arg === "--repository" || arg === "-r");
    const given = at === -1
      ? pkg.rest.find((arg) => arg.startsWith("--repository="))?.slice("--repository=".length)
      : pkg.rest[at + 1];
    if (given !== undefined) {
      grant(write, pathOf(given, base, home) ?? resolve(base, given), "its --repository");
    } else {lines.push(
        "no --repository: it serves the folder it is started in (the workspace; add it to write)",
      );}
  }
  const memory = env.find(([name]) => name === "MEMORY_FILE_PATH");
  if (memory !== undefined) {
    const path = pathOf(memory[1], base, home) ?? resolve(base, memory[1]);
    // The server writes its data anew beside the file and renames it over (and makes the file where it is not
    // there yet): the file alone is too little, its folder it must write.
    grant(
      write,
      dirname(path),
      `the folder of its MEMORY_FILE_PATH: it writes ${basename(path)} anew beside it, and renames it over`,
    );
  } else if (pkg?.name === "@modelcontextprotocol/server-memory") {
    // Without it the server keeps its data inside its own install, which is read-only once pinned: its data goes
    // to a folder of the project instead, made for it.
    const file = join(base, MEMORY_DATA_FOLDER, "memory.jsonl");
    setEnv.MEMORY_FILE_PATH = file;
    folders.push(dirname(file));
    grant(write, dirname(file), `its data: MEMORY_FILE_PATH set to ${file} (the host set none)`);
  }
  if (scriptPath !== undefined) {
    grant(
      read,
      packageFolder(scriptPath, kind),
      `the package of ${basename(scriptPath)}, its dependencies beside it`,
    );
  }
  for (const value of [...args, ...env.map(([, value]) => value)]) {
    const url = /^(https?|wss?):\/\/([^/\s:]+)/i.exec(value);
    if (url !== null) {
      lines.push(
        `it is given ${url[0]}: no network is granted; add "${
          url[2]
        }" to permissions.net if it must reach it`,
      );
      continue;
    }
    const path = pathOf(value.replace(/^--?[a-z-]+=/i, ""), base, home);
    if (
      path === undefined || claimed.has(path) || [...read, ...write].some((p) => path.startsWith(p + "/"))
    ) {
      continue;
    }
    if (kind(path) !== undefined) grant(read, path, "named in its entry; add it to write if it changes it");
  }
  const made = folders.length === 0 ? {} : { env: setEnv, folders };
  if (read.length === 0 && write.length === 0) return { permissions: "none", lines, ...made };
  return { permissions: { read, write, net: false }, lines, ...made };
}
