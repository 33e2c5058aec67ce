// fs_stat: the type, size, modification time and mode of a workspace path; a symlink is described as itself, with
// the workspace path it points to.
import { relative } from "node:path";
import { readStdinArgs } from "../lib/args.ts";
import { fsFailure, runTool } from "../lib/envelope.ts";
import { resolveInWorkspace } from "../lib/paths.ts";

function typeOf(info: Deno.FileInfo): "file" | "directory" | "symlink" | "other" {
  if (info.isSymlink) return "symlink";
  if (info.isDirectory) return "directory";
  return info.isFile ? "file" : "other";
}

await runTool(async () => {
  const args = await readStdinArgs();
  const path = args.string("path", { expected: "a relative path, e.g. src or ." });
  args.done();

  const target = resolveInWorkspace(path);
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(target.entry);
  } catch (error) {
    throw fsFailure(error, target.rel);
  }
  const result: Record<string, unknown> = {
    path: target.rel,
    type: typeOf(info),
    size: info.size,
    mtime: info.mtime?.toISOString() ?? null,
    mode: info.mode === null ? null : `0${(info.mode & 0o7777).toString(8).padStart(3, "0")}`,
  };
  if (info.isSymlink) {
    // resolveInWorkspace already proved the target is inside the workspace.
    result.target = relative(target.root, target.real).split("\\").join("/") || ".";
    result.target_type = typeOf(await Deno.stat(target.real));
  }
  return result;
});
