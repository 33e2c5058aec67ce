/**
 * Workspace trust, like direnv's `allow`: what a manifest found in the workspace (or above it) would run, read
 * once and pinned by digest: the manifest's bytes, the effective profile of each tool, the bytes of each program
 * it names and of the manifest's own files. The user's record of it is `trust_record.ts`; how a change reads,
 * `trust_changes.ts`.
 *
 * @module
 */
import { dirname, isAbsolute, join, normalize, resolve } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import { readJsonc } from "./jsonc.ts";
import { declaredProfile, type ProfileResult, reachOf, resolveProfile } from "./profiles.ts";

/** Bumped when what a digest covers changes: older records then no longer match, and the user is asked again. */
export const TRUST_VERSION = 1;

/** The largest program toolgate reads to pin it; a larger one cannot be trusted (name its manifest with --tools). */
export const MAX_PROGRAM_BYTES: number = 256 * 1024 * 1024;

/** At most this many files, and bytes, of a manifest's own files are pinned (the check runs before every command). */
export const MAX_OWN_FILES = 5000;
const MAX_OWN_BYTES = 256 * 1024 * 1024;
/** The files beside a manifest that belong to it, besides its `tools/` folder (as the control plane lists them). */
const OWN_FILES = ["deno.json", "deno.jsonc", "deno.lock"];

/** A file changed this recently (ms) when it was read may change again unseen within its timestamps' tick. */
const RACY_MS = 2000;

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
}

/** What a record remembers of a manifest's content, for showing a later change. */
export interface TrustSummary {
  /** `sha256:HEX` of the manifest's bytes. */
  readonly manifest: string;
  readonly tools: readonly TrustedTool[];
  /**
   * The manifest's own files beside it (everything under `tools/`, Deno's config and lock), by path relative to
   * its folder: `sha256:HEX`, `link -> TARGET`, or what else is there. A program's launcher often runs code beside
   * it (`../src/tool.ts`), which is then pinned too.
   */
  readonly files: Readonly<Record<string, string>>;
  /** `false` when there were more files (or bytes) than toolgate pins: the rest is not covered. */
  readonly filesComplete: boolean;
}

/** What pins one program between the trust check and each start: its digest and its file's identity then. */
export interface PinnedProgram {
  /** The SHA-256 of its bytes, hex. */
  readonly digest: string;
  /** `dev:ino:size:mtime:ctime` when it was read. */
  readonly stamp: string;
  /** It changed within a timestamp's tick of being read: its stamp alone does not prove it unchanged. */
  readonly racy: boolean;
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
  /** `sha256:HEX` over the manifest, each effective profile and each program. */
  readonly digest: string;
  /** The programs as they were read, by resolved path. */
  readonly programs: ReadonlyMap<string, PinnedProgram>;
  /**
   * Every file pinned (programs and own files) that had settled when read, by path: `STAMP DIGEST`, what
   * {@linkcode readManifestContent} may take as known the next time (`trust_digests.ts` keeps it).
   */
  readonly digests: ReadonlyMap<string, string>;
}

/**
 * Digests known from an earlier read, by path: `STAMP DIGEST` (see {@linkcode ManifestContent.digests}). A file whose
 * identity and times are still the stamp, settled, holds the same bytes (its ctime moves on any change and cannot be
 * set back), so it is not read again.
 */
export type KnownDigests = ReadonlyMap<string, string>;

/** Where pins are looked up and recorded during one read of a manifest. */
interface PinBook {
  readonly known: KnownDigests;
  readonly made: Map<string, string>;
}

const encoder = new TextEncoder();

async function sha256(bytes: Uint8Array | string): Promise<string> {
  const data = typeof bytes === "string" ? encoder.encode(bytes) : bytes;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>));
  return "sha256:" + Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

function stampOf(info: Deno.FileInfo): string {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtime?.getTime() ?? "-"}:${
    info.ctime?.getTime() ?? "-"
  }`;
}

function isRacy(info: Deno.FileInfo, readAt: number): boolean {
  const changed = Math.max(info.mtime?.getTime() ?? readAt, info.ctime?.getTime() ?? readAt);
  return readAt - changed < RACY_MS;
}

/** Why a file cannot be pinned, from the error reading it. */
function unreadable(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "missing";
  return `unreadable (${error instanceof Error ? error.message : String(error)})`;
}

/**
 * Reads one program and pins it: its digest and its file's identity, checked unchanged across the read. A FIFO,
 * a device or a folder is never opened (a FIFO would hold the read forever).
 */
async function pinProgram(path: string, book?: PinBook): Promise<PinnedProgram | string> {
  let before: Deno.FileInfo;
  try {
    before = Deno.statSync(path);
  } catch (error) {
    return unreadable(error);
  }
  if (!before.isFile) return "not a regular file";
  if (book !== undefined) {
    // The same file pinned earlier in this read (a program is also one of the manifest's own files), or in an
    // earlier run, and untouched since: its bytes are not read again.
    const stamp = stampOf(before);
    const entry = book.made.get(path) ?? book.known.get(path);
    if (entry !== undefined && entry.startsWith(`${stamp} `) && !isRacy(before, Date.now())) {
      book.made.set(path, entry);
      return { digest: entry.slice(stamp.length + 1), stamp, racy: false };
    }
  }
  if (before.size > MAX_PROGRAM_BYTES) return `too large to check (${before.size} bytes)`;
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    return unreadable(error);
  }
  try {
    const opened = await file.stat();
    if (!opened.isFile || stampOf(opened) !== stampOf(before)) return "changed while it was read";
    const bytes = new Uint8Array(opened.size);
    for (let got = 0; got < bytes.length;) {
      const n = await file.read(bytes.subarray(got));
      if (n === null) return "changed while it was read";
      got += n;
    }
    const after = await file.stat();
    if (stampOf(after) !== stampOf(opened)) return "changed while it was read";
    const pinned = { digest: await sha256(bytes), stamp: stampOf(after), racy: isRacy(after, Date.now()) };
    if (book !== undefined && !pinned.racy) book.made.set(path, `${pinned.stamp} ${pinned.digest}`);
    return pinned;
  } finally {
    file.close();
  }
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
      const pinned = await pinProgram(path, book);
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

/**
 * Reads a manifest once and pins what it would run: its bytes, each tool's effective profile and each program's
 * bytes. `undefined` when the manifest cannot be read (loading it then says why). `known` gives, for the manifest's
 * real path, the digests an earlier read made ({@linkcode ManifestContent.digests}): files still as they were then
 * are not read again.
 *
 * @example
 * ```ts
 * import { readManifestContent } from "./trust.ts";
 * const content = await readManifestContent("tools.json");
 * content?.digest; // "sha256:..."
 * ```
 */
export async function readManifestContent(
  path: string,
  known?: (realPath: string) => KnownDigests | undefined,
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
  const value = readJsonc(text);
  const entries = isRecord(value) && Array.isArray(value.tools) ? value.tools : [];
  const names = toolNames(entries);
  const profiles = new Map<string, ProfileResult>();
  const programs = new Map<string, PinnedProgram>();
  const tools: TrustedTool[] = [];
  for (const [index, entry] of entries.entries()) {
    const raw = isRecord(entry) ? entry : {};
    const command = Array.isArray(raw.command) && raw.command.every((part) => typeof part === "string")
      ? raw.command as string[]
      : null;
    let program: string | undefined;
    let programDigest: string | undefined;
    if (command !== null && command.length > 0 && command[0] !== "") {
      program = programPath(command[0], dir);
      const pinned = programs.get(program) ?? await pinProgram(program, book);
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
    });
  }
  const own = await ownFiles(dir, book);
  const summary: TrustSummary = {
    manifest: await sha256(bytes),
    tools,
    files: own.files,
    filesComplete: own.complete,
  };
  const digest = await sha256(JSON.stringify({ version: TRUST_VERSION, ...summary }));
  return { path, realPath, text, profiles, summary, digest, programs, digests: book.made };
}

/**
 * Whether a pinned program is still what was trusted: the same file untouched (its identity and times), or, when
 * the file was touched or its times cannot tell, the same bytes.
 *
 * @example
 * ```ts
 * import { stillPinned } from "./trust.ts";
 * // if (!(await stillPinned(tool.program, pinned))) refuse the call
 * ```
 */
export async function stillPinned(path: string, pinned: PinnedProgram): Promise<boolean> {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch {
    return false;
  }
  if (!pinned.racy && stampOf(info) === pinned.stamp) return true;
  const again = await pinProgram(path);
  return typeof again !== "string" && again.digest === pinned.digest;
}
