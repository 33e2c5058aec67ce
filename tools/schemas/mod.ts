/**
 * Every built-in tool's argument schema, by tool name: what `deno task tools-json` writes into `tools.json`.
 * A tool imports its own module, never this one.
 *
 * @module
 */
import type { ArgsSchema } from "../lib/args.ts";
import { EXEC_ARGS } from "./exec.ts";
import { FS_EDIT_ARGS } from "./fs_edit.ts";
import { FS_LIST_DIR_ARGS } from "./fs_list_dir.ts";
import { FS_MKDIR_ARGS } from "./fs_mkdir.ts";
import { FS_READ_FILE_ARGS } from "./fs_read_file.ts";
import { FS_READ_LINES_ARGS } from "./fs_read_lines.ts";
import { FS_REMOVE_ARGS } from "./fs_remove.ts";
import { FS_SEARCH_ARGS } from "./fs_search.ts";
import { FS_STAT_ARGS } from "./fs_stat.ts";
import { FS_WRITE_FILE_ARGS } from "./fs_write_file.ts";
import { GET_TIME_ARGS } from "./get_time.ts";
import { HTTP_FETCH_ARGS } from "./http_fetch.ts";
import { JOB_ARGS } from "./job.ts";

/**
 * The argument schema of each built-in tool.
 *
 * @example
 * ```ts
 * import { TOOL_ARGS } from "./mod.ts";
 * TOOL_ARGS.get_time.required; // ["timezone"]
 * ```
 */
export const TOOL_ARGS: Readonly<Record<string, ArgsSchema>> = {
  get_time: GET_TIME_ARGS,
  fs_read_file: FS_READ_FILE_ARGS,
  fs_read_lines: FS_READ_LINES_ARGS,
  fs_list_dir: FS_LIST_DIR_ARGS,
  fs_search: FS_SEARCH_ARGS,
  fs_stat: FS_STAT_ARGS,
  fs_write_file: FS_WRITE_FILE_ARGS,
  fs_edit: FS_EDIT_ARGS,
  fs_mkdir: FS_MKDIR_ARGS,
  fs_remove: FS_REMOVE_ARGS,
  http_fetch: HTTP_FETCH_ARGS,
  exec: EXEC_ARGS,
  job: JOB_ARGS,
};
