// fs_read_file: a byte range of a file in the workspace, as text or base64, never more than the size cap.
import { encodeBase64 } from "../lib/base64.ts";
import { readStdinArgs } from "../lib/args.ts";
import { fsFailure, invalidArgs, runTool } from "../lib/envelope.ts";
import { resolveInWorkspace } from "../lib/paths.ts";

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

  const target = resolveInWorkspace(path);
  let file: Deno.FsFile;
  try {
    file = await Deno.open(target.real, { read: true });
  } catch (error) {
    throw fsFailure(error, target.rel);
  }
  try {
    const info = await file.stat();
    if (!info.isFile) {
      throw invalidArgs("path", `not a regular file: ${JSON.stringify(target.rel)}`, "a file path");
    }
    const size = info.size;
    const start = Math.min(offset, size);
    const want = Math.min(length, size - start);
    const bytes = new Uint8Array(want);
    await file.seek(start, Deno.SeekMode.Start);
    let got = 0;
    while (got < want) {
      const n = await file.read(bytes.subarray(got));
      if (n === null) break;
      got += n;
    }
    const chunk = bytes.subarray(0, got);
    return {
      kind: "file",
      path: target.rel,
      encoding,
      content: encoding === "base64" ? encodeBase64(chunk) : new TextDecoder().decode(chunk),
      offset: start,
      bytes: got,
      size,
      truncated: start + got < size,
    };
  } catch (error) {
    throw fsFailure(error, target.rel);
  } finally {
    file.close();
  }
});
