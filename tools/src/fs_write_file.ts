// fs_write_file: writes a whole file in the workspace atomically (a temporary file in the same directory, then a
// rename); missing parent directories are created only when asked.
import { dirname } from "node:path";
import { decodeBase64 } from "../lib/base64.ts";
import { readStdinArgs } from "../lib/args.ts";
import { fsFailure, invalidArgs, runTool, ToolFailure } from "../lib/envelope.ts";
import { atomicWrite, sha256Hex } from "../lib/files.ts";
import { resolveInWorkspace } from "../lib/paths.ts";

await runTool(async () => {
  const args = await readStdinArgs();
  const path = args.string("path", { expected: "a relative file path, e.g. notes/todo.md" });
  const content = args.string("content", { allowEmpty: true, expected: "the whole new file contents" });
  const encoding = args.choice("encoding", ["text", "base64"] as const, "text");
  const createParents = args.boolean("create_parents", false);
  args.done();

  const bytes = encoding === "base64" ? decodeBase64(content) : new TextEncoder().encode(content);
  if (bytes === undefined) throw invalidArgs("content", "content is not valid base64", "base64 text");
  const target = resolveInWorkspace(path);
  if (target.isRoot) throw invalidArgs("path", "path names the workspace itself", "a file path");

  let mode: number | undefined;
  try {
    if (target.exists) {
      const info = await Deno.stat(target.real);
      if (!info.isFile) {
        throw invalidArgs("path", `not a regular file: ${JSON.stringify(target.rel)}`, "a file path");
      }
      mode = info.mode === null ? undefined : info.mode & 0o7777;
    } else {
      const parent = dirname(target.real);
      const parentInfo = await Deno.stat(parent).catch((error) => {
        if (error instanceof Deno.errors.NotFound) return undefined;
        throw error;
      });
      if (parentInfo === undefined) {
        if (!createParents) {
          throw new ToolFailure(
            "not_found",
            `the parent directory of ${
              JSON.stringify(target.rel)
            } does not exist (set create_parents to create it)`,
            { field: "path" },
          );
        }
        await Deno.mkdir(parent, { recursive: true });
      } else if (!parentInfo.isDirectory) {
        throw invalidArgs(
          "path",
          `a parent of ${JSON.stringify(target.rel)} is not a directory`,
          "a file path",
        );
      }
    }
    await atomicWrite(target.real, bytes, mode);
  } catch (error) {
    throw fsFailure(error, target.rel);
  }
  return { path: target.rel, bytes: bytes.length, created: !target.exists, sha256: await sha256Hex(bytes) };
});
