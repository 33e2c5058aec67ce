// fs_mkdir: creates a directory in the workspace (and its missing parents when asked); an existing directory is
// not an error. Each directory is created in its pinned parent, which was checked to be inside the workspace.
import { readStdinArgs } from "../lib/args.ts";
import { invalidArgs, runTool, ToolFailure } from "../lib/envelope.ts";
import { parseRelative } from "../lib/paths.ts";
import { Workspace } from "../lib/workspace.ts";
import { FS_MKDIR_ARGS } from "../schemas/fs_mkdir.ts";

await runTool(async () => {
  const { path, parents } = await readStdinArgs(FS_MKDIR_ARGS);

  const { rel } = parseRelative(path);
  const workspace = Workspace.fromEnvironment();
  const target = workspace.locate(path, {
    follow: true,
    createParents: parents,
    missingParent: () =>
      new ToolFailure(
        "not_found",
        `the parent directory of ${JSON.stringify(rel)} does not exist (set parents to create it)`,
        { field: "path" },
      ),
  });
  workspace.guardChange(target.real, target.rel, "path");
  const refuseExisting = (info: Deno.FileInfo) => {
    if (!info.isDirectory) {
      throw invalidArgs(
        "path",
        `exists and is not a directory: ${JSON.stringify(target.rel)}`,
        "a new directory path",
      );
    }
  };
  if (target.info !== undefined) {
    refuseExisting(target.info);
    return { path: target.rel, created: false };
  }
  try {
    workspace.makeDirectory(target);
  } catch (error) {
    // Created meanwhile by someone else: judged as if it had been there.
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    const now = workspace.locate(path, { follow: true });
    if (now.info === undefined) throw error;
    refuseExisting(now.info);
    return { path: target.rel, created: false };
  }
  return { path: target.rel, created: true };
});
