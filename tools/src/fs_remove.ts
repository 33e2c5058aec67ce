// fs_remove: removes a file, a symlink (not its target) or a directory in the workspace; a non-empty directory
// only when recursive is asked, and never the workspace itself.
import { readStdinArgs } from "../lib/args.ts";
import { fsFailure, invalidArgs, runTool } from "../lib/envelope.ts";
import { resolveInWorkspace } from "../lib/paths.ts";

await runTool(async () => {
  const args = await readStdinArgs();
  const path = args.string("path", { expected: "a relative path, e.g. build/old.txt" });
  const recursive = args.boolean("recursive", false);
  args.done();

  const target = resolveInWorkspace(path);
  if (target.isRoot) {
    throw invalidArgs("path", "refusing to remove the workspace itself", "a path inside the workspace");
  }
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(target.entry);
  } catch (error) {
    throw fsFailure(error, target.rel);
  }
  const type = info.isSymlink ? "symlink" : info.isDirectory ? "directory" : info.isFile ? "file" : "other";
  if (type === "directory" && !recursive) {
    let empty = true;
    try {
      for await (const _ of Deno.readDir(target.entry)) {
        empty = false;
        break;
      }
    } catch (error) {
      throw fsFailure(error, target.rel);
    }
    if (!empty) {
      throw invalidArgs(
        "recursive",
        `directory is not empty: ${
          JSON.stringify(target.rel)
        } (set recursive to remove it and everything in it)`,
        "true to remove a non-empty directory",
      );
    }
  }
  try {
    // A symlink is unlinked, never followed; recursive removal does not descend into symlinks either.
    await Deno.remove(target.entry, { recursive: type === "directory" && recursive });
  } catch (error) {
    throw fsFailure(error, target.rel);
  }
  return { path: target.rel, removed: true, type };
});
