// fs_mkdir: creates a directory in the workspace (and its missing parents when asked); an existing directory is
// not an error.
import { readStdinArgs } from "../lib/args.ts";
import { fsFailure, invalidArgs, runTool, ToolFailure } from "../lib/envelope.ts";
import { resolveInWorkspace } from "../lib/paths.ts";

await runTool(async () => {
  const args = await readStdinArgs();
  const path = args.string("path", { expected: "a relative directory path, e.g. notes/2026" });
  const parents = args.boolean("parents", false);
  args.done();

  const target = resolveInWorkspace(path);
  if (target.exists) {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(target.real);
    } catch (error) {
      throw fsFailure(error, target.rel);
    }
    if (!info.isDirectory) {
      throw invalidArgs(
        "path",
        `exists and is not a directory: ${JSON.stringify(target.rel)}`,
        "a new directory path",
      );
    }
    return { path: target.rel, created: false };
  }
  try {
    await Deno.mkdir(target.real, { recursive: parents });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new ToolFailure(
        "not_found",
        `the parent directory of ${JSON.stringify(target.rel)} does not exist (set parents to create it)`,
        { field: "path" },
      );
    }
    throw fsFailure(error, target.rel);
  }
  return { path: target.rel, created: true };
});
