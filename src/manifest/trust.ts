/**
 * Workspace trust, like direnv's `allow`: what a manifest found in the workspace (or above it) would run, read
 * once and pinned by digest: the manifest's bytes, the effective profile of each tool, the bytes of each program
 * it names, of the code its tools' and MCP servers' command lines name (`python3 ./srv.py`, `node dir`,
 * `python -m pkg.mod`) and of the manifest's own files. The user's record of it is `trust_record.ts`; how a change
 * reads, `trust_changes.ts`.
 *
 * One piece: the summary's types, the walk over the manifest's tools and servers and the pins of its own files
 * are one reading of one manifest; each part is small, and split apart they would pass the same half-read state
 * between them.
 *
 * Not here: reading and pinning files (`file_pins.ts`), which arguments name code (`code_paths.ts`).
 *
 * @module
 */
import { dirname, isAbsolute, join, normalize, resolve } from "../base/paths.ts";
import { isWithin } from "../contract/relative_path.ts";
import { isRecord } from "../contract.ts";
import { namedPaths } from "./code_paths.ts";
import {
  type KnownDigests,
  type PinBook,
  pinFile,
  type PinnedProgram,
  pinPaths,
  sha256,
} from "./file_pins.ts";
import { readJsonc } from "./jsonc.ts";
import { declaredProfile, type ProfileResult, reachOf, resolveProfile } from "./profiles.ts";

/** Bumped when what a digest covers changes: older records then no longer match, and the user is asked again. */
export const TRUST_VERSION = 2;

/** At most this many files, and bytes, of a manifest's own files are pinned (the check runs before every command). */
export const MAX_OWN_FILES = 5000;
const MAX_OWN_BYTES = 256 * 1024 * 1024;
/** The files beside a manifest that belong to it, besides its `tools/` folder (as the control plane lists them). */
const OWN_FILES = ["deno.json", "deno.jsonc", "deno.lock"];

/**
 * At most this many files, and bytes, of the code the tools' and servers' command lines name are pinned (a folder
 * named is walked before every command: its files are stat'ed, and read again only when one changed).
 */
export const MAX_CODE_FILES = 1000;
/** See {@linkcode MAX_CODE_FILES}. */
export const MAX_CODE_BYTES: number = 64 * 1024 * 1024;

/**
 * What the digest cannot cover, as the trust prompt and `toolgate trust` say it: code a program loads from
 * elsewhere when it runs.
 */
export const NOT_COVERED =
  "not covered: code loaded from elsewhere at run time (the interpreter or runtime, packages from site-packages or " +
  "a node_modules, anything fetched or downloaded when it runs, e.g. by npx or uvx)";

/** One tool as trusted: what it runs and under which profile, pinned. */
export interface TrustedTool {
  /** The tool's name (`tool[i]` when it has none, `NAME#i` for a repeated one). */
  readonly name: string;
  /** `command` as written, or `null` when it is not an array of strings. */
  readonly command: readonly string[] | null;
  /** `command[0]` resolved against the manifest's folder. */
  readonly program?: string;
  /** `sha256:HEX` of the program's bytes, or why there is none (`missing`, `not a regular file`, ...). */
  readonly programDigest?: string;
  /** The profile's name (`inline` for one written in the manifest), as the entry names it. */
  readonly profile: string;
  /** `sha256:HEX` of the effective profile (the JSON toolgate confines the tool with), or `error: ...`. */
  readonly profileDigest: string;
  /** What the profile lets it write and reach, for people. */
  readonly reach: string;
  /** The files and folders its arguments name that exist, as {@linkcode TrustSummary.code} keys them. */
  readonly code?: readonly CodeRoot[];
}

/** A file or folder a command line names, as trusted. */
export interface CodeRoot {
  /** Relative to the manifest's folder when inside it, else absolute; a folder ends in `/`. */
  readonly path: string;
  /** How many of its files are pinned (1 for a file). */
  readonly files: number;
  /** A folder holding the manifest's folder or the workspace (`.`): named, never walked, none of it pinned. */
  readonly wide?: true;
  /** A path its own tool's or server's profile may write (a folder it serves, its data): named, not pinned. */
  readonly data?: true;
}

/** One stdio MCP server of `mcpServers` as trusted: its command line and the code it names. */
export interface TrustedServer {
  readonly name: string;
  /** `command` as written, or `null` when it is not a string. */
  readonly command: string | null;
  /** `args` as written (the strings among them). */
  readonly args: readonly string[];
  /** The files and folders its command and arguments name that exist. */
  readonly code: readonly CodeRoot[];
  /** Its profile's name (`inline` for one written in the manifest); absent in a record made before servers' were. */
  readonly profile?: string;
  /** `sha256:HEX` of its effective profile (a named profile's file included), or `error: ...`. */
  readonly profileDigest?: string;
  /** What the profile lets it write and reach, for people. */
  readonly reach?: string;
}

/** What a record remembers of a manifest's content, for showing a later change. */
export interface TrustSummary {
  /** `sha256:HEX` of the manifest's bytes. */
  readonly manifest: string;
  readonly tools: readonly TrustedTool[];
  /** The stdio MCP servers (absent in a record made before servers' code was covered). */
  readonly servers?: readonly TrustedServer[];
  /**
   * The manifest's own files beside it (everything under `tools/`, Deno's config and lock), by path relative to
   * its folder: `sha256:HEX`, `link -> TARGET`, or what else is there. A program's launcher often runs code beside
   * it (`../src/tool.ts`), which is then pinned too.
   */
  readonly files: Readonly<Record<string, string>>;
  /** `false` when there were more files (or bytes) than toolgate pins: the rest is not covered. */
  readonly filesComplete: boolean;
  /**
   * Each file of the code the tools' and servers' command lines name (a file, a folder's files), keyed as
   * {@linkcode CodeRoot.path}: `sha256:HEX`, `link -> TARGET` or what else is there.
   */
  readonly code?: Readonly<Record<string, string>>;
  /** Set when there was more such code than toolgate pins (`more than 1000 files`): the rest is not covered. */
  readonly codeCapped?: string;
}

/** A manifest's content, read once: the bytes every later step uses, and their digest. */
export interface ManifestContent {
  /** The manifest file as located. */
  readonly path: string;
  /** Its real path: what a record is keyed by. */
  readonly realPath: string;
  /** The manifest's text (these very bytes are then validated and run). */
  readonly text: string;
  /** The profiles its tools name, resolved once (validation reuses them, so no file is read twice). */
  readonly profiles: Map<string, ProfileResult>;
  readonly summary: TrustSummary;
  /** `sha256:HEX` over the manifest, each effective profile, each program and the code named. */
  readonly digest: string;
  /** The programs as they were read, by resolved path. */
  readonly programs: ReadonlyMap<string, PinnedProgram>;
  /** The files of the code the command lines name, as they were read, by absolute path. */
  readonly code: ReadonlyMap<string, PinnedProgram>;
  /**
   * Every path where code a command line names may lie, there or not (absolute): what toolgate must be able to
   * look at to tell whether it changed or appeared (the launcher grants reading those outside the folders).
   */
  readonly codePaths: readonly string[];
  /**
   * Every file pinned (programs, code and own files) that had settled when read, by path: `STAMP DIGEST`, what
   * {@linkcode readManifestContent} may take as known the next time (`trust_digests.ts` keeps it).
   */
  readonly digests: ReadonlyMap<string, string>;
}

/** Why a file cannot be read, from the error reading it. */
function unreadable(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "missing";
  return `unreadable (${error instanceof Error ? error.message : String(error)})`;
}

/**
 * The manifest's own files (`tools/`, walked without following links, and Deno's config and lock beside it),
 * each pinned by digest; a link by where it points; a FIFO, socket or device by what it is (never opened).
 */
async function ownFiles(
  dir: string,
  book: PinBook,
): Promise<{ files: Record<string, string>; complete: boolean }> {
  const files: Record<string, string> = {};
  let count = 0;
  let bytes = 0;
  const visit = async (relative: string): Promise<boolean> => {
    const path = join(dir, relative);
    let info: Deno.FileInfo;
    try {
      info = Deno.lstatSync(path);
    } catch {
      return true;
    }
    if (++count > MAX_OWN_FILES) return false;
    if (info.isSymlink) {
      files[relative] = `link -> ${Deno.readLinkSync(path)}`;
    } else if (info.isDirectory) {
      const names = [...Deno.readDirSync(path)].map((entry) => entry.name).sort();
      for (const name of names) if (!(await visit(`${relative}/${name}`))) return false;
    } else if (info.isFile) {
      bytes += info.size;
      if (bytes > MAX_OWN_BYTES) return false;
      const pinned = await pinFile(path, book);
      files[relative] = typeof pinned === "string" ? pinned : pinned.digest;
    } else {
      files[relative] = "not a regular file";
    }
    return true;
  };
  let complete = true;
  for (const name of ["tools", ...OWN_FILES]) {
    try {
      if (!(await visit(name))) {
        complete = false;
        break;
      }
    } catch (error) {
      files[name] = unreadable(error);
    }
  }
  return { files, complete };
}

/** The program a `command[0]` names, resolved as the manifest's loader resolves it. */
function programPath(first: string, dir: string): string {
  return isAbsolute(first) ? resolve(first) : join(dir, normalize(first.replaceAll("\\", "/")));
}

/** Each entry's name, made unique (a repeated or missing name is the loader's error to report, not a key here). */
function toolNames(tools: readonly unknown[]): string[] {
  const seen = new Set<string>();
  return tools.map((entry, index) => {
    const raw = isRecord(entry) && typeof entry.name === "string" ? entry.name : `tool[${index}]`;
    const name = seen.has(raw) ? `${raw}#${index}` : raw;
    seen.add(name);
    return name;
  });
}

/** Where a path lies for people: relative to the manifest's folder when inside it, else absolute. */
function keyOf(path: string, dir: string): string {
  if (path === dir) return ".";
  // Both are absolute and normal: a prefix test (this runs for every file of a named folder, on every command).
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}

/** The paths among `candidates` that are there now (links followed), each once. */
function present(candidates: readonly string[]): string[] {
  return [...new Set(candidates)].filter((path) => {
    try {
      Deno.statSync(path);
      return true;
    } catch {
      return false;
    }
  });
}

/** The real path of the workspace, or the path as given when it cannot be resolved. */
function realOr(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return resolve(path);
  }
}

/** How {@linkcode readManifestContent} reads a manifest. */
export interface ReadOptions {
  /**
   * The folder its tools and servers run in (`--cwd`, else the folder the command was typed in): a relative path
   * a command line names is looked for there too, as the program will look for it.
   */
  readonly workspace?: string;
}

/**
 * Reads a manifest once and pins what it would run: its bytes, each tool's effective profile, each program's
 * bytes, and the code each tool's and server's command line names. `undefined` when the manifest cannot be read
 * (loading it then says why). `known` gives, for the manifest's real path, the digests an earlier read made
 * ({@linkcode ManifestContent.digests}): files still as they were then are not read again.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readManifestContent } from "./trust.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/srv.py`, "print(1)\n");
 * await Deno.writeTextFile(`${dir}/tools.json`, JSON.stringify({ tools: [], mcpServers: { s: { command: "python3", args: ["./srv.py"] } } }));
 * const content = await readManifestContent(`${dir}/tools.json`);
 * assert.deepEqual(content?.summary.servers?.[0].code, [{ path: "srv.py", files: 1 }]);
 * ```
 */
export async function readManifestContent(
  path: string,
  known?: (realPath: string) => KnownDigests | undefined,
  options: ReadOptions = {},
): Promise<ManifestContent | undefined> {
  let realPath: string;
  let bytes: Uint8Array;
  try {
    realPath = Deno.realPathSync(path);
    bytes = await Deno.readFile(realPath);
  } catch {
    return undefined;
  }
  const text = new TextDecoder().decode(bytes);
  const book: PinBook = { known: known?.(realPath) ?? new Map(), made: new Map() };
  // Against the manifest's real folder, as a found manifest is loaded: a link cannot move its commands elsewhere.
  const dir = dirname(realPath);
  // A relative path on a command line is looked for where the program runs too (the workspace).
  const bases = [dir];
  if (options.workspace !== undefined) {
    const workspace = realOr(options.workspace);
    if (workspace !== dir) bases.push(workspace);
  }
  const value = readJsonc(text);
  const entries = isRecord(value) && Array.isArray(value.tools) ? value.tools : [];
  const names = toolNames(entries);
  const profiles = new Map<string, ProfileResult>();
  const programs = new Map<string, PinnedProgram>();
  const codePaths: string[] = [];
  const rootsOf = (parts: readonly string[]): string[] => {
    const candidates = namedPaths(parts, bases).flatMap((named) => named.candidates);
    codePaths.push(...candidates);
    return present(candidates);
  };
  // What a profile may write, as absolute paths: a path named both there and on the command line is the entry's
  // data, which it changes by design, not code a digest could hold.
  const writesOf = (result: ProfileResult): string[] =>
    result.ok
      ? result.profile.write.flatMap((path) =>
        isAbsolute(path) ? [resolve(path)] : bases.map((base) => resolve(base, path))
      )
      : [];
  const tools: (Omit<TrustedTool, "code"> & { roots: string[]; writes: string[] })[] = [];
  for (const [index, entry] of entries.entries()) {
    const raw = isRecord(entry) ? entry : {};
    const command = Array.isArray(raw.command) && raw.command.every((part) => typeof part === "string")
      ? raw.command as string[]
      : null;
    let program: string | undefined;
    let programDigest: string | undefined;
    if (command !== null && command.length > 0 && command[0] !== "") {
      program = programPath(command[0], dir);
      const pinned = programs.get(program) ?? await pinFile(program, book);
      if (typeof pinned === "string") programDigest = pinned;
      else {
        programs.set(program, pinned);
        programDigest = pinned.digest;
      }
    }
    const declared = declaredProfile(raw);
    const profile = resolveProfile(declared, dir, profiles);
    tools.push({
      name: names[index],
      command,
      ...(program === undefined ? {} : { program, programDigest }),
      profile: typeof declared === "string" ? declared : "inline",
      profileDigest: profile.ok
        ? await sha256(JSON.stringify(profile.profile))
        : `error: ${profile.errors[0]}`,
      reach: profile.ok ? reachOf(profile.profile) : "unknown (the profile has errors)",
      roots: command === null ? [] : rootsOf(command.slice(1)),
      writes: writesOf(profile),
    });
  }
  const servers: (Omit<TrustedServer, "code"> & { roots: string[]; writes: string[] })[] = [];
  const declaredServers = isRecord(value) && isRecord(value.mcpServers) ? value.mcpServers : {};
  for (const [name, entry] of Object.entries(declaredServers)) {
    if (!isRecord(entry) || entry.command === undefined) continue;
    const command = typeof entry.command === "string" ? entry.command : null;
    const args = Array.isArray(entry.args)
      ? entry.args.filter((arg): arg is string => typeof arg === "string")
      : [];
    // A command with a slash is a path (the gateway resolves it in the workspace); a bare name is looked up on PATH.
    const parts = command !== null && command.includes("/") ? [command, ...args] : args;
    const declared = entry.permissions ?? "none";
    const profile = resolveProfile(declared, dir, profiles);
    servers.push({
      name,
      command,
      args,
      // Its profile is part of what is trusted, as a tool's is: a named profile's file widened since is a change.
      profile: typeof declared === "string" ? declared : "inline",
      profileDigest: profile.ok
        ? await sha256(JSON.stringify(profile.profile))
        : `error: ${profile.errors[0]}`,
      reach: profile.ok ? reachOf(profile.profile) : "unknown (the profile has errors)",
      roots: rootsOf(parts),
      writes: writesOf(profile),
    });
  }
  // A folder that holds the manifest's folder or the workspace (`.`, `..`, `/`) is where the work is, not a
  // program's own code: walking it would pin every file the user edits. It is named, not pinned.
  const wide = (root: string) => bases.some((base) => base === root || isWithin(base, root));
  // Only a path named on the command line that is itself one its profile writes (a folder a server serves, its
  // data file): a script inside a folder the profile writes stays pinned, so that a rewritten script is caught.
  const data = (root: string, writes: readonly string[]) => writes.includes(root);
  const dataRoots = new Set(
    [...tools, ...servers].flatMap((entry) => entry.roots.filter((root) => data(root, entry.writes))),
  );
  const roots = [...new Set([...tools, ...servers].flatMap((entry) => entry.roots))].filter((root) =>
    !wide(root) && !dataRoots.has(root)
  );
  const pinned = await pinPaths(roots, { maxFiles: MAX_CODE_FILES, maxBytes: MAX_CODE_BYTES }, book);
  const code: Record<string, string> = {};
  for (const [file, digest] of pinned.files) code[keyOf(file, dir)] = digest;
  const codeRoots = (paths: readonly string[]): CodeRoot[] =>
    paths.map((root) => {
      let folder = false;
      try {
        folder = Deno.statSync(root).isDirectory;
      } catch {
        // Gone since: counted as a file of none.
      }
      const files = [...pinned.files.keys()].filter((file) => file === root || file.startsWith(`${root}/`));
      const key = keyOf(root, dir);
      const path = folder ? `${key === "." ? "." : key}/` : key;
      if (folder && wide(root)) return { path, files: 0, wide: true };
      return dataRoots.has(root) ? { path, files: 0, data: true } : { path, files: files.length };
    });
  const own = await ownFiles(dir, book);
  const summary: TrustSummary = {
    manifest: await sha256(bytes),
    tools: tools.map(({ roots, writes: _, ...tool }) =>
      roots.length === 0 ? tool : { ...tool, code: codeRoots(roots) }
    ),
    servers: servers.map(({ roots, writes: _, ...server }) => ({ ...server, code: codeRoots(roots) })),
    files: own.files,
    filesComplete: own.complete,
    code,
    ...(pinned.capped === undefined ? {} : { codeCapped: pinned.capped }),
  };
  const digest = await sha256(JSON.stringify({ version: TRUST_VERSION, ...summary }));
  return {
    path,
    realPath,
    text,
    profiles,
    summary,
    digest,
    programs,
    code: pinned.pinned,
    codePaths: [...new Set(codePaths)],
    digests: book.made,
  };
}
