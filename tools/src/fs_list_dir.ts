// fs_list_dir: the entries of a workspace directory as a listing (ready-to-use relative paths and types), optionally
// recursive to a depth and filtered by a glob; symlinks are listed, never followed, and every directory is listed
// from inside it (entered, then checked to be where it should be), so a swapped-in symlink leads nowhere.
import { join } from "node:path";
import { readStdinArgs } from "../lib/args.ts";
import { fsFailure, invalidArgs, runTool } from "../lib/envelope.ts";
import { compileGlob } from "../lib/glob.ts";
import { childPath } from "../lib/paths.ts";
import { Workspace } from "../lib/workspace.ts";
import { FS_LIST_DIR_ARGS } from "../schemas/fs_list_dir.ts";

type EntryType = "file" | "directory" | "symlink" | "other";

interface Entry {
  name: string;
  path: string;
  type: EntryType;
}

function typeOf(entry: Deno.DirEntry): EntryType {
  if (entry.isSymlink) return "symlink";
  if (entry.isDirectory) return "directory";
  return entry.isFile ? "file" : "other";
}

await runTool(async () => {
  const {
    path,
    recursive,
    max_depth: maxDepth,
    glob: globText,
    max_entries: maxEntries,
  } = await readStdinArgs(FS_LIST_DIR_ARGS);

  const glob = compileGlob(globText);
  const workspace = Workspace.fromEnvironment();
  const target = workspace.locate(path, { follow: true });
  if (target.info === undefined) throw fsFailure(new Deno.errors.NotFound(), target.rel);
  if (!target.info.isDirectory) {
    throw invalidArgs(
      "path",
      `not a directory: ${JSON.stringify(target.rel)}`,
      "a directory path, e.g. . or src",
    );
  }
  const top = workspace.enter(target);

  const entries: Entry[] = [];
  let truncated = false;
  const depthLimit = recursive ? maxDepth : 1;
  // Depth-first in name order, so a listing reads like a tree and the cap cuts it at a stable place. The cwd is
  // the directory being listed (`dir` is its real path) whenever `walk` lists or returns.
  const walk = (dir: string, relFromRoot: string, depth: number): void => {
    let children: Deno.DirEntry[];
    try {
      children = workspace.listHere();
    } catch (error) {
      if (depth === 1) throw fsFailure(error, target.rel);
      return; // An unreadable subdirectory is left out, not fatal.
    }
    for (const child of children) {
      if (truncated) return;
      const real = join(dir, child.name);
      if (workspace.isHidden(real)) continue;
      const within = relFromRoot === "" ? child.name : `${relFromRoot}/${child.name}`;
      const type = typeOf(child);
      if (glob.matches(child.name, within)) {
        if (entries.length >= maxEntries) {
          truncated = true;
          return;
        }
        entries.push({ name: child.name, path: childPath(target.rel, within), type });
      }
      if (type === "directory" && depth < depthLimit) {
        const entered = workspace.descend(child.name);
        if (entered === undefined) continue;
        if (!workspace.isHidden(entered.real)) walk(entered.real, within, depth + 1);
        workspace.ascend(entered);
      }
    }
  };
  walk(top, "", 1);
  return { kind: "listing", path: target.rel, entries, entry_count: entries.length, truncated };
});
