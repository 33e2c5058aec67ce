// fs_write_file: writes a whole file in the workspace atomically (a new file in the same pinned directory, then a
// rename); missing parent directories are created only when asked; only a regular file is replaced.
import { readStdinArgs } from "../lib/args.ts";
import { invalidArgs, runTool, ToolFailure } from "../lib/envelope.ts";
import { filePathArgument, sha256Hex } from "../lib/files.ts";
import { describeType, Workspace } from "../lib/workspace.ts";
import { FS_WRITE_FILE_ARGS } from "../schemas/fs_write_file.ts";

await runTool(async () => {
  const { path, content, encoding, create_parents: createParents } = await readStdinArgs(FS_WRITE_FILE_ARGS);

  const bytes = encoding === "base64" ? fromBase64(content) : new TextEncoder().encode(content);
  if (bytes === undefined) throw invalidArgs("content", "content is not valid base64", "base64 text");
  const rel = filePathArgument(path);
  const workspace = Workspace.fromEnvironment();
  const target = workspace.locate(path, {
    follow: true,
    createParents,
    missingParent: () =>
      new ToolFailure(
        "not_found",
        `the parent directory of ${JSON.stringify(rel)} does not exist (set create_parents to create it)`,
        { field: "path" },
      ),
    parentNotDirectory: () =>
      invalidArgs("path", `a parent of ${JSON.stringify(rel)} is not a directory`, "a file path"),
  });
  if (target.isRoot) throw invalidArgs("path", "path names the workspace itself", "a file path");
  if (target.info !== undefined && !target.info.isFile) {
    throw workspace.notRegular(target, describeType(target.info));
  }
  const mode = target.info?.mode === null || target.info === undefined
    ? undefined
    : target.info.mode & 0o7777;
  workspace.writeFile(target, bytes, mode);
  return {
    path: target.rel,
    bytes: bytes.length,
    created: target.info === undefined,
    sha256: await sha256Hex(bytes),
  };
});

/** Standard base64 (whitespace ignored, padding optional), or `undefined` when the text is not base64. */
function fromBase64(text: string): Uint8Array | undefined {
  try {
    return Uint8Array.fromBase64(text);
  } catch {
    return undefined;
  }
}
