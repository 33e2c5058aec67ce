/**
 * Where installed package servers live and what toolgate remembers of them. Each install is a content-addressed
 * folder, `$XDG_DATA_HOME/toolgate/packages/<sha256 of its resolved lock>/` (`~/.local/share/...` by default),
 * read-only once installed: outside toolgate's state folder, which every sandbox hides, so that a server can be
 * shown its own install read-only. The record of which install each server of a manifest runs (its versions, the
 * lock's integrities, the tree's digest) is private to toolgate, beside the manifest's trust record.
 * Not here: making an install (`package_install.ts`), checking one at start (`installed_server.ts`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { dirname, join } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import { trustDir } from "../manifest/trust_record.ts";
import { ensurePrivateDir } from "../state/private_dir.ts";
import { readPrivateText, writePrivateText } from "../state/private_file.ts";
import { fnv1a64 } from "../state/state.ts";
import type { PackageEntry } from "./package_entry.ts";

/** One server's install, as toolgate made and pinned it. */
export interface InstalledPackage {
  /** The digest of what the entry asked for ({@linkcode requestOf}): another request is another install. */
  readonly request: string;
  readonly ecosystem: "npm" | "pypi";
  /** The package's name. */
  readonly name: string;
  /** The exact version installed. */
  readonly version: string;
  /** Every package of the install, `name@version`, with its integrity (npm's lockfile `integrity`; `sha256:HEX` of a wheel). */
  readonly lock: Readonly<Record<string, string>>;
  /** The install's folder (content-addressed, read-only). */
  readonly dir: string;
  /** `sha256:HEX` over the installed tree ({@linkcode TreeDigest.digest}). */
  readonly digest: string;
  /** The tree's stamp when it was installed ({@linkcode TreeDigest.stamp}). */
  readonly stamp: string;
  /** The interpreter the server runs under (its name: `node`, or the venv's `bin/python`, absolute). */
  readonly runtime: string;
  /** The file the interpreter runs (the npm bin's script, the console script), absolute, inside `dir`. */
  readonly program: string;
  /** Folders besides the install the server must read (the Python the venv was made from). */
  readonly reads: readonly string[];
  /** When it was installed (ISO 8601). */
  readonly installedAt: string;
}

const RECORD_VERSION = 1;

/**
 * The digest of what an entry asks to install: the registry, the package, the version written, the program and
 * whether its install scripts may run. The same request reuses its install; another one is installed anew.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestOf } from "./package_store.ts";
 * const entry = { kind: "package", ecosystem: "npm", name: "a", args: [], written: "npx a" } as const;
 * assert.notDeepEqual(requestOf(entry, false), requestOf({ ...entry, version: "1.0.0" }, false));
 * ```
 */
export function requestOf(entry: PackageEntry, allowScripts: boolean): string {
  const text = JSON.stringify([
    entry.ecosystem,
    entry.name,
    entry.version ?? null,
    entry.bin ?? null,
    allowScripts,
  ]);
  return `sha256:${createHash("sha256").update(text).digest("hex")}`;
}

function recordFile(stateDir: string, manifestRealPath: string): string {
  return join(trustDir(stateDir), `packages-${fnv1a64(manifestRealPath)}.json`);
}

/**
 * The installs the servers of the manifest at `manifestRealPath` run, by server name (none yet: `{}`). Throws
 * `StateDirError` when the record is not toolgate's own private file.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readInstalls } from "./package_store.ts";
 * assert.deepEqual(readInstalls(Deno.makeTempDirSync(), "/srv/p/tools.json"), {});
 * ```
 */
export function readInstalls(stateDir: string, manifestRealPath: string): Record<string, InstalledPackage> {
  const text = readPrivateText(recordFile(stateDir, manifestRealPath), "the installed MCP server packages");
  if (text === undefined) return {};
  try {
    const value = JSON.parse(text);
    if (!isRecord(value) || value.version !== RECORD_VERSION || value.manifest !== manifestRealPath) {
      return {};
    }
    return isRecord(value.servers) ? value.servers as Record<string, InstalledPackage> : {};
  } catch {
    return {};
  }
}

/**
 * Records the installs the manifest's servers run, replacing the earlier record.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readInstalls, writeInstalls } from "./package_store.ts";
 * const state = Deno.makeTempDirSync();
 * writeInstalls(state, "/srv/p/tools.json", {});
 * assert.deepEqual(readInstalls(state, "/srv/p/tools.json"), {});
 * ```
 */
export function writeInstalls(
  stateDir: string,
  manifestRealPath: string,
  servers: Readonly<Record<string, InstalledPackage>>,
): void {
  ensurePrivateDir(trustDir(stateDir), dirname(stateDir));
  writePrivateText(
    recordFile(stateDir, manifestRealPath),
    JSON.stringify({ version: RECORD_VERSION, manifest: manifestRealPath, servers }, null, 2) + "\n",
  );
}

/**
 * Makes a folder tree read-only (`chmod -R a-w`), or writable again for its owner before it is removed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { setWritable } from "./package_store.ts";
 * const dir = Deno.makeTempDirSync();
 * setWritable(dir, false);
 * assert.deepEqual(Deno.statSync(dir).mode! & 0o222, 0);
 * setWritable(dir, true);
 * ```
 */
export function setWritable(dir: string, writable: boolean): void {
  const change = (path: string) => {
    const info = Deno.lstatSync(path);
    if (info.isSymlink) return;
    if (info.isDirectory && writable) Deno.chmodSync(path, (info.mode! & 0o7777) | 0o200);
    if (info.isDirectory) { for (const entry of Deno.readDirSync(path)) change(join(path, entry.name)); }
    const mode = info.mode! & 0o7777;
    Deno.chmodSync(path, writable ? mode | 0o200 : mode & ~0o222);
  };
  change(dir);
}

/**
 * Removes an install folder whole (made writable first); nothing when it is not there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { removeTree, setWritable } from "./package_store.ts";
 * const dir = Deno.makeTempDirSync();
 * setWritable(dir, false);
 * removeTree(dir);
 * assert.deepEqual(removeTree(dir), undefined);
 * ```
 */
export function removeTree(dir: string): void {
  try {
    setWritable(dir, true);
  } catch {
    return;
  }
  Deno.removeSync(dir, { recursive: true });
}
