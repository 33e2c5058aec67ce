// fs_stat: the type, size, modification time and mode of a workspace path; a symlink is described as itself, with
// the workspace path it points to. Metadata is read with lstat relative to the entry's pinned parent directory.
import { relative } from "node:path";
import { readStdinArgs } from "../lib/args.ts";
import { runTool, ToolFailure } from "../lib/envelope.ts";
import { Workspace } from "../lib/workspace.ts";
import { FS_STAT_ARGS } from "../schemas/fs_stat.ts";

function typeOf(info: Deno.FileInfo): "file" | "directory" | "symlink" | "other" {
  if (info.isSymlink) return "symlink";
  if (info.isDirectory) return "directory";
  return info.isFile ? "file" : "other";
}

await runTool(async () => {
  const { path } = await readStdinArgs(FS_STAT_ARGS);

  const workspace = Workspace.fromEnvironment();
  const entry = workspace.locate(path);
  const info = entry.info;
  if (info === undefined) {
    throw new ToolFailure("not_found", `no such file or directory: ${JSON.stringify(entry.rel)}`, {
      field: "path",
    });
  }
  workspace.guardRead(entry.real, entry.rel, "path");
  const result: Record<string, unknown> = {
    path: entry.rel,
    type: typeOf(info),
    size: info.size,
    mtime: info.mtime?.toISOString() ?? null,
    mode: info.mode === null ? null : `0${(info.mode & 0o7777).toString(8).padStart(3, "0")}`,
  };
  if (info.isSymlink) {
    // Walked again with the link followed: a target outside the workspace is refused like any escape.
    const target = workspace.locate(path, { follow: true });
    workspace.guardRead(target.real, entry.rel, "path");
    result.target = relative(workspace.root, target.real).split("\\").join("/") || ".";
    result.target_type = target.info === undefined ? "missing" : typeOf(target.info);
  }
  return result;
});
