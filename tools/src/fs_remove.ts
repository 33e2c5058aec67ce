// fs_remove: removes a file, a symlink (the link itself, wherever it points, never its target) or a directory in
// the workspace; a non-empty directory only when recursive is asked, and never the workspace itself. The entry is
// removed by its name in its pinned parent directory, so a symlink swapped in is unlinked, not followed.
import { readStdinArgs } from "../lib/args.ts";
import { fsFailure, invalidArgs, runTool, ToolFailure } from "../lib/envelope.ts";
import { Workspace } from "../lib/workspace.ts";
import { FS_REMOVE_ARGS } from "../schemas/fs_remove.ts";

await runTool(async () => {
  const { path, recursive } = await readStdinArgs(FS_REMOVE_ARGS);

  const workspace = Workspace.fromEnvironment();
  const target = workspace.locate(path);
  if (target.isRoot) {
    throw invalidArgs("path", "refusing to remove the workspace itself", "a path inside the workspace");
  }
  const info = target.info;
  if (info === undefined) {
    throw new ToolFailure("not_found", `no such file or directory: ${JSON.stringify(target.rel)}`, {
      field: "path",
    });
  }
  const type = info.isSymlink ? "symlink" : info.isDirectory ? "directory" : info.isFile ? "file" : "other";
  try {
    workspace.remove(target, type === "directory" && recursive);
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOTEMPTY") {
      throw invalidArgs(
        "recursive",
        `directory is not empty: ${
          JSON.stringify(target.rel)
        } (set recursive to remove it and everything in it)`,
        "true to remove a non-empty directory",
      );
    }
    throw fsFailure(error, target.rel);
  }
  return { path: target.rel, removed: true, type };
});
