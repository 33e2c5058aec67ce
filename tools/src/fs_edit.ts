// fs_edit: replaces one exact, unique string, or a 1-based inclusive line range, in a workspace text file; an
// optional sha256 of the original file guards against editing a file that changed since it was read. Only a regular
// file is edited; the new version replaces it by a rename in the same pinned directory.
import { readStdinArgs } from "../lib/args.ts";
import { invalidArgs, runTool } from "../lib/envelope.ts";
import { filePathArgument, sha256Hex } from "../lib/files.ts";
import { Workspace } from "../lib/workspace.ts";
import { FS_EDIT_ARGS } from "../schemas/fs_edit.ts";

/** Files larger than this are not edited in memory. */
const MAX_FILE_BYTES = 16_777_216;

function countOccurrences(haystack: string, needle: string): number[] {
  const at: number[] = [];
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) at.push(i);
  return at;
}

/** 1-based line number of the character at `index`. */
function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

await runTool(async () => {
  const args = await readStdinArgs(FS_EDIT_ARGS);
  const { path, old_string: oldString, new_string: newString, start_line: startLine, end_line: endLine } =
    args;
  const expectedSha = args.expected_sha256.toLowerCase();

  const byString = oldString !== "";
  const byLines = startLine > 0 || endLine > 0;
  if (byString === byLines) {
    throw invalidArgs(
      byString ? "start_line" : "old_string",
      "give either old_string (exact text to replace) or start_line/end_line (a line range), not both or neither",
      "old_string, or start_line with an optional end_line",
    );
  }
  if (expectedSha !== "" && !/^[0-9a-f]{64}$/.test(expectedSha)) {
    throw invalidArgs("expected_sha256", "expected_sha256 is not a sha256 hex digest", "64 hex characters");
  }

  filePathArgument(path);
  const workspace = Workspace.fromEnvironment();
  const target = workspace.locate(path, { follow: true });
  if (target.info !== undefined) workspace.guardChange(target.real, target.rel, "path");
  const file = workspace.openFile(target);
  let bytes: Uint8Array;
  try {
    if (file.size > MAX_FILE_BYTES) {
      throw invalidArgs("path", `file is too large to edit (${file.size} bytes, limit ${MAX_FILE_BYTES})`);
    }
    bytes = file.read(0, file.size);
  } finally {
    file.close();
  }
  const mode = file.mode;
  const previousSha = await sha256Hex(bytes);
  if (expectedSha !== "" && expectedSha !== previousSha) {
    throw invalidArgs(
      "expected_sha256",
      `the file changed since it was read: sha256 is ${previousSha}, expected ${expectedSha}`,
      "the sha256 of the file as it is now (read it again)",
    );
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalidArgs("path", `not a UTF-8 text file: ${JSON.stringify(target.rel)}`, "a text file");
  }

  let updated: string;
  let firstLine: number;
  let lastLine: number;
  if (byString) {
    const at = countOccurrences(text, oldString);
    if (at.length === 0) {
      throw invalidArgs(
        "old_string",
        "old_string was not found in the file",
        "text copied exactly from the file",
      );
    }
    if (at.length > 1) {
      const lines = at.slice(0, 10).map((i) => lineOf(text, i)).join(", ");
      throw invalidArgs(
        "old_string",
        `old_string matches ${at.length} times (lines ${lines}); it must match exactly once`,
        "a longer, unique piece of text",
      );
    }
    updated = text.slice(0, at[0]) + newString + text.slice(at[0] + oldString.length);
    firstLine = lineOf(text, at[0]);
    lastLine = lineOf(text, at[0] + oldString.length);
  } else {
    const first = startLine === 0 ? endLine : startLine;
    const last = endLine === 0 ? first : endLine;
    // Lines keep their own terminators, so a CRLF file stays CRLF and the last line keeps (or lacks) its newline.
    const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
    if (last < first) {
      throw invalidArgs("end_line", `end_line ${last} is before start_line ${first}`, `>= ${first}`);
    }
    if (last > lines.length) {
      throw invalidArgs(
        last === first ? "start_line" : "end_line",
        `line ${last} is past the end of the file (${lines.length} lines)`,
        `a line number from 1 to ${lines.length}`,
      );
    }
    const lastOld = lines[last - 1];
    const eol = lastOld.endsWith("\r\n") ? "\r\n" : lastOld.endsWith("\n") ? "\n" : "";
    const replacement = newString === "" || newString.endsWith("\n") ? newString : newString + eol;
    updated = lines.slice(0, first - 1).join("") + replacement + lines.slice(last).join("");
    firstLine = first;
    lastLine = last;
  }

  const out = new TextEncoder().encode(updated);
  // Nothing moved the cwd since the file was opened: the new file lands beside the one that was read.
  workspace.writeFile(target, out, mode);
  return {
    path: target.rel,
    replaced_lines: { start: firstLine, end: lastLine },
    bytes: out.length,
    previous_sha256: previousSha,
    sha256: await sha256Hex(out),
  };
});
