// fs_list_dir: the entries of a workspace directory as a listing (ready-to-use relative paths and types), optionally
// recursive to a depth and filtered by a glob; symlinks are listed, never followed.
import { join } from "node:path";
import { readStdinArgs } from "../lib/args.ts";
import { fsFailure, invalidArgs, runTool } from "../lib/envelope.ts";
import { compileGlob } from "../lib/glob.ts";
import { childPath, resolveInWorkspace } from "../lib/paths.ts";

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
  const args = await readStdinArgs();
  const path = args.optionalString("path", ".");
  const recursive = args.boolean("recursive", false);
  const maxDepth = args.integer("max_depth", 3, { min: 1, max: 20 });
  const globText = args.optionalString("glob", "*");
  const maxEntries = args.integer("max_entries", 500, { min: 1, max: 5000 });
  args.done();

  const glob = compileGlob(globText);
  const target = resolveInWorkspace(path);
  try {
    if (!(await Deno.stat(target.real)).isDirectory) {
      throw invalidArgs(
        "path",
        `not a directory: ${JSON.stringify(target.rel)}`,
        "a directory path, e.g. . or src",
      );
    }
  } catch (error) {
    throw fsFailure(error, target.rel);
  }

  const entries: Entry[] = [];
  let truncated = false;
  const depthLimit = recursive ? maxDepth : 1;
  // Depth-first in name order, so a listing reads like a tree and the cap cuts it at a stable place.
  const walk = async (dir: string, relFromRoot: string, depth: number): Promise<void> => {
    const children: Deno.DirEntry[] = [];
    try {
      for await (const child of Deno.readDir(dir)) children.push(child);
    } catch (error) {
      if (depth === 1) throw fsFailure(error, target.rel);
      return; // An unreadable subdirectory is left out, not fatal.
    }
    children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const child of children) {
      if (truncated) return;
      const within = relFromRoot === "" ? child.name : `${relFromRoot}/${child.name}`;
      const type = typeOf(child);
      if (glob.matches(child.name, within)) {
        if (entries.length >= maxEntries) {
          truncated = true;
          return;
        }
        entries.push({ name: child.name, path: childPath(target.rel, within), type });
      }
      if (type === "directory" && depth < depthLimit) await walk(join(dir, child.name), within, depth + 1);
    }
  };
  await walk(target.real, "", 1);
  return { kind: "listing", path: target.rel, entries, entry_count: entries.length, truncated };
});
