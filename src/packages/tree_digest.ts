/**
 * The digest of an installed package's folder tree: every file's bytes and mode bits, every link's target, every
 * folder, by path (what the pin of an install covers); and its stamp, the identity and times of every entry, which
 * tells at a server's start, without reading a byte, that nothing was touched since (a ctime moves on any change
 * and cannot be set back).
 * Not here: where installs live and how they are recorded (`package_store.ts`).
 *
 * @module
 */
import { fileStamp } from "../base/file_stamp.ts";
import { createHash } from "node:crypto";
import { join } from "../base/paths.ts";

/** A tree's digest and stamp, `sha256:HEX` each. */
export interface TreeDigest {
  /** Over every entry's path, kind, mode and bytes (or link target). */
  readonly digest: string;
  /** Over every entry's path and `dev:ino:size:mtime:ctime`. */
  readonly stamp: string;
  /** How many entries the tree holds. */
  readonly entries: number;
}

function walk(dir: string, visit: (relative: string, info: Deno.FileInfo) => void, relative = ""): void {
  const names = [...Deno.readDirSync(join(dir, relative))].map((entry) => entry.name).sort();
  for (const name of names) {
    const path = relative === "" ? name : `${relative}/${name}`;
    const info = Deno.lstatSync(join(dir, path));
    visit(path, info);
    if (info.isDirectory) walk(dir, visit, path);
  }
}

/**
 * The stamp of the tree at `dir` alone (entries' identities and times): equal to a {@linkcode treeDigest}'s stamp
 * when nothing in it changed since. Throws when `dir` cannot be read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { treeDigest, treeStamp } from "./tree_digest.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/a.js`, "1");
 * assert.deepEqual(treeStamp(dir), treeDigest(dir).stamp);
 * ```
 */
export function treeStamp(dir: string): string {
  const hash = createHash("sha256");
  walk(dir, (path, info) => hash.update(`${path}\0${fileStamp(info)}\n`));
  return `sha256:${hash.digest("hex")}`;
}

/**
 * The digest and stamp of the tree at `dir`, reading every file. Throws when it cannot be read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { treeDigest } from "./tree_digest.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/a.js`, "1");
 * const before = treeDigest(dir);
 * Deno.writeTextFileSync(`${dir}/a.js`, "2");
 * assert.notDeepEqual(treeDigest(dir).digest, before.digest);
 * assert.deepEqual(before.entries, 1);
 * ```
 */
export function treeDigest(dir: string): TreeDigest {
  const content = createHash("sha256");
  const stamps = createHash("sha256");
  let entries = 0;
  walk(dir, (path, info) => {
    entries++;
    stamps.update(`${path}\0${fileStamp(info)}\n`);
    const executable = ((info.mode ?? 0) & 0o111) !== 0;
    if (info.isSymlink) content.update(`l ${path}\0${Deno.readLinkSync(join(dir, path))}\n`);
    else if (info.isDirectory) content.update(`d ${path}\n`);
    else if (info.isFile) {
      const bytes = createHash("sha256").update(Deno.readFileSync(join(dir, path))).digest("hex");
      content.update(`f ${path}\0${executable ? "x" : "-"} ${bytes}\n`);
    } else content.update(`o ${path}\n`);
  });
  return { digest: `sha256:${content.digest("hex")}`, stamp: `sha256:${stamps.digest("hex")}`, entries };
}
