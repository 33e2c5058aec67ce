// fs_read_file: a byte range of a file in the workspace, as text or base64, never more than the size cap; only a
// regular file is read (opened without following a swapped-in symlink, a FIFO refused without waiting).
import { readStdinArgs } from "../lib/args.ts";
import { runTool } from "../lib/envelope.ts";
import { Workspace } from "../lib/workspace.ts";
import { FS_READ_FILE_ARGS } from "../schemas/fs_read_file.ts";

await runTool(async () => {
  const { path, offset, length, encoding } = await readStdinArgs(FS_READ_FILE_ARGS);

  const workspace = Workspace.fromEnvironment();
  const target = workspace.locate(path, { follow: true });
  const file = workspace.openFile(target);
  try {
    const size = file.size;
    const start = Math.min(offset, size);
    const chunk = file.read(start, Math.min(length, size - start));
    return {
      kind: "file",
      path: target.rel,
      encoding,
      content: encoding === "base64" ? chunk.toBase64() : new TextDecoder().decode(chunk),
      offset: start,
      bytes: chunk.length,
      size,
      truncated: start + chunk.length < size,
    };
  } finally {
    file.close();
  }
});
