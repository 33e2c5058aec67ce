// fs_read_lines: lines start_line..end_line (1-based, inclusive) of a text file in the workspace; a range past the
// end is an empty result, never an error.
import { readStdinArgs } from "../lib/args.ts";
import { fsFailure, invalidArgs, runTool } from "../lib/envelope.ts";
import { resolveInWorkspace } from "../lib/paths.ts";

/** The most lines one call returns. */
const MAX_LINES = 2000;
/** The most characters one call returns; a longer line is cut (and the result says so). */
const MAX_CHARS = 200_000;

await runTool(async () => {
  const args = await readStdinArgs();
  const path = args.string("path", { expected: "a relative file path, e.g. src/main.ts" });
  const startLine = args.integer("start_line", 1, { min: 1 });
  const endLine = args.integer("end_line", 0, { min: 0 });
  args.done();
  if (endLine !== 0 && endLine < startLine) {
    throw invalidArgs(
      "end_line",
      `end_line ${endLine} is before start_line ${startLine}`,
      `0 or >= ${startLine}`,
    );
  }

  const target = resolveInWorkspace(path);
  let file: Deno.FsFile;
  try {
    file = await Deno.open(target.real, { read: true });
    if (!(await file.stat()).isFile) {
      file.close();
      throw invalidArgs("path", `not a regular file: ${JSON.stringify(target.rel)}`, "a file path");
    }
  } catch (error) {
    throw fsFailure(error, target.rel);
  }

  // At most MAX_LINES lines per call; the result says when the requested range went further.
  const last = Math.min(endLine === 0 ? Number.MAX_SAFE_INTEGER : endLine, startLine + MAX_LINES - 1);
  const lines: string[] = [];
  let chars = 0;
  let charCapHit = false;
  let lineNo = 0;
  const take = (line: string): boolean => {
    lineNo++;
    if (lineNo < startLine) return true;
    if (lineNo > last) return false;
    const text = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (chars + text.length > MAX_CHARS) {
      lines.push(text.slice(0, Math.max(0, MAX_CHARS - chars)));
      charCapHit = true;
      return false;
    }
    lines.push(text);
    chars += text.length + 1;
    return true;
  };
  let eof = true;
  try {
    const reader = file.readable.pipeThrough(new TextDecoderStream()).getReader();
    let pending = "";
    reading: while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += value;
      let newline: number;
      while ((newline = pending.indexOf("\n")) !== -1) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (!take(line)) {
          eof = false;
          break reading;
        }
      }
      if (pending.length > MAX_CHARS + 1) {
        // A giant line without a newline: a skipped one need not be kept, a wanted one is cut at the cap.
        if (lineNo + 1 < startLine) {
          pending = pending.slice(-1);
        } else if (!take(pending)) {
          eof = false;
          break;
        }
      }
    }
    if (eof && pending !== "") take(pending);
    if (!eof) await reader.cancel();
  } catch (error) {
    throw fsFailure(error, target.rel);
  }
  const truncated = charCapHit || (!eof && last < (endLine === 0 ? Number.MAX_SAFE_INTEGER : endLine));
  return {
    kind: "lines",
    path: target.rel,
    start_line: startLine,
    end_line: startLine + lines.length - 1,
    line_count: lines.length,
    content: lines.join("\n"),
    eof,
    truncated,
  };
});
