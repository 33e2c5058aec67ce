// fs_read_file: a byte range of a file in the workspace, as text or base64, never more than the size cap; only a
// regular file is read (opened without following a swapped-in symlink, a FIFO refused without waiting).
import { encodeBase64 } from "../lib/base64.ts";
import { readStdinArgs } from "../lib/args.ts";
import { runTool } from "../lib/envelope.ts";
import { Workspace } from "../lib/workspace.ts";

/** The most bytes one call returns. */
const MAX_LENGTH = 1_048_576;
const DEFAULT_LENGTH = 262_144;

await runTool(async () => {
  const args = await readStdinArgs();
  const path = args.string("path", { expected: "a relative file path, e.g. src/main.ts" });
  const offset = args.integer("offset", 0, { min: 0 });
  const length = args.integer("length", DEFAULT_LENGTH, { min: 1, max: MAX_LENGTH });
  const encoding = args.choice("encoding", ["text", "base64"] as const, "text");
  args.done();

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
      content: encoding === "base64" ? encodeBase64(chunk) : new TextDecoder().decode(chunk),
      offset: start,
      bytes: chunk.length,
      size,
      truncated: start + chunk.length < size,
    };
  } finally {
    file.close();
  }
});
