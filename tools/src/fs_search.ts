// fs_search: the lines of workspace files that contain a literal string or match a regular expression; large and
// binary files are skipped (and counted), symlinks are not followed, and the result is capped. Every directory is
// searched from inside it and every file opened without following links, so a swapped-in symlink leads nowhere,
// and only regular files are read (a FIFO is never waited on).
import { join } from "node:path";
import { readStdinArgs } from "../lib/args.ts";
import { errorMessage, fsFailure, invalidArgs, runTool } from "../lib/envelope.ts";
import { compileGlob } from "../lib/glob.ts";
import { childPath } from "../lib/paths.ts";
import { type OpenedFile, Workspace } from "../lib/workspace.ts";
import { FS_SEARCH_ARGS } from "../schemas/fs_search.ts";

/** A matching line is cut to this many characters. */
const MAX_LINE_CHARS = 400;
/** The walk stops after this many files, and says so. */
const MAX_FILES = 20_000;

interface Match {
  path: string;
  line: number;
  column: number;
  text: string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

await runTool(async () => {
  const {
    pattern,
    path,
    regex,
    case_sensitive: caseSensitive,
    glob: globText,
    max_results: maxResults,
    max_file_bytes: maxFileBytes,
  } = await readStdinArgs(FS_SEARCH_ARGS);

  let matcher: RegExp;
  try {
    matcher = new RegExp(regex ? pattern : escapeRegExp(pattern), caseSensitive ? "" : "i");
  } catch (error) {
    throw invalidArgs(
      "pattern",
      `pattern is not a valid regular expression: ${errorMessage(error)}`,
      "a JavaScript regular expression",
    );
  }
  const glob = compileGlob(globText);
  const workspace = Workspace.fromEnvironment();
  const target = workspace.locate(path, { follow: true });
  if (target.info === undefined) throw fsFailure(new Deno.errors.NotFound(), target.rel);

  const matches: Match[] = [];
  let truncated = false;
  let filesSearched = 0;
  let skippedLarge = 0;
  let skippedBinary = 0;
  let skippedUnreadable = 0;
  const decoder = new TextDecoder();

  const searchFile = (file: OpenedFile, relPath: string): void => {
    let bytes: Uint8Array;
    try {
      if (file.size > maxFileBytes) {
        skippedLarge++;
        return;
      }
      // One byte more than its size tells a file that grew past the cap since it was opened.
      bytes = file.read(0, file.size + 1);
    } catch {
      skippedUnreadable++;
      return;
    } finally {
      file.close();
    }
    if (bytes.length > maxFileBytes) {
      skippedLarge++;
      return;
    }
    if (bytes.subarray(0, 8192).includes(0)) {
      skippedBinary++;
      return;
    }
    filesSearched++;
    const lines = decoder.decode(bytes).split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].endsWith("\r") ? lines[i].slice(0, -1) : lines[i];
      const found = matcher.exec(line);
      if (!found) continue;
      if (matches.length >= maxResults) {
        truncated = true;
        return;
      }
      const start = Math.max(0, Math.min(found.index - 100, line.length - MAX_LINE_CHARS));
      const text = line.length > MAX_LINE_CHARS ? line.slice(start, start + MAX_LINE_CHARS) : line;
      matches.push({ path: relPath, line: i + 1, column: found.index + 1, text });
    }
  };

  let filesSeen = 0;
  // The cwd is the directory being searched (`dir` is its real path) whenever `walk` lists, opens or returns.
  const walk = (dir: string, relFromRoot: string): void => {
    let children: Deno.DirEntry[];
    try {
      children = workspace.listHere();
    } catch (error) {
      if (relFromRoot === "") throw fsFailure(error, target.rel);
      skippedUnreadable++;
      return;
    }
    for (const child of children) {
      if (truncated) return;
      const real = join(dir, child.name);
      if (child.isSymlink || workspace.isHidden(real)) continue;
      const within = relFromRoot === "" ? child.name : `${relFromRoot}/${child.name}`;
      if (child.isDirectory) {
        const entered = workspace.descend(child.name);
        if (entered === undefined) {
          skippedUnreadable++;
        } else {
          if (!workspace.isHidden(entered.real)) walk(entered.real, within);
          workspace.ascend(entered);
        }
      } else if (child.isFile && glob.matches(child.name, within)) {
        if (++filesSeen > MAX_FILES) {
          truncated = true;
          return;
        }
        const file = workspace.openChild(child.name);
        if (file === undefined) skippedUnreadable++;
        else searchFile(file, childPath(target.rel, within));
      }
    }
  };

  if (target.info.isDirectory) walk(workspace.enter(target), "");
  else searchFile(workspace.openFile(target), target.rel);

  return {
    pattern,
    path: target.rel,
    matches,
    match_count: matches.length,
    truncated,
    files_searched: filesSearched,
    skipped_large: skippedLarge,
    skipped_binary: skippedBinary,
    skipped_unreadable: skippedUnreadable,
  };
});
