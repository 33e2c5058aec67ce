// fs_read_lines: lines start_line..end_line (1-based, inclusive) of a text file in the workspace; a range past the
// end is an empty result, never an error. Only a regular file is read, opened as fs_read_file opens it.
import { readStdinArgs } from "../lib/args.ts";
import { invalidArgs, runTool } from "../lib/envelope.ts";
import { Workspace } from "../lib/workspace.ts";
import { FS_READ_LINES_ARGS } from "../schemas/fs_read_lines.ts";

/** The most lines one call returns. */
const MAX_LINES = 2000;
/** The most characters one call returns; a longer line is cut (and the result says so). */
const MAX_CHARS = 200_000;
/** Bytes read at a time. */
const CHUNK = 65_536;

await runTool(async () => {
  const { path, start_line: startLine, end_line: endLine } = await readStdinArgs(FS_READ_LINES_ARGS);
  if (endLine !== 0 && endLine < startLine) {
    throw invalidArgs(
      "end_line",
      `end_line ${endLine} is before start_line ${startLine}`,
      `0 or >= ${startLine}`,
    );
  }

  const workspace = Workspace.fromEnvironment();
  const target = workspace.locate(path, { follow: true });
  const file = workspace.openFile(target);

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
    const decoder = new TextDecoder();
    let pending = "";
    reading: while (true) {
      const bytes = file.readNext(CHUNK);
      if (bytes.length === 0) break;
      pending += decoder.decode(bytes, { stream: true });
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
    if (eof) pending += decoder.decode();
    if (eof && pending !== "") take(pending);
  } finally {
    file.close();
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
