/**
 * The one place where each built-in tool's Deno permissions are declared. toolgate starts a built-in tool with
 * the runtime that runs toolgate itself and exactly these flags (a compiled binary drops every other permission
 * in its tool mode); the launchers in `tools/bin/` are generated from this table, for running a tool by hand or
 * under agentcli, and a test keeps them in step.
 *
 * @module
 */

/** One tool's permissions: why it needs them, and the flags. */
export interface ToolDenoFlags {
  /** Why these and no more, in one line (it heads the tool's launcher). */
  readonly why: string;
  /** `--allow-*` flags; relative paths are against the tool's working directory, the workspace. */
  readonly flags: readonly string[];
  /**
   * The argument naming the URL the tool connects to first, for a tool that fetches URLs: the policy reads a
   * call's destination from it (`--approve-hosts`).
   */
  readonly connectsTo?: string;
}

/**
 * The file tools confine themselves (tools/lib/workspace.ts): they work in pinned directories, one path component
 * at a time with O_NOFOLLOW, so no symlink swapped in can lead out of the workspace. Deno passes relative paths
 * and open flags to the kernel unchanged only with every permission granted: under scoped flags it makes each
 * path absolute and opens the canonicalized one, which reopens the race. The sandbox profile bounds them.
 */
const FILE_TOOL = ["--allow-all"];
const why = (name: string, what: string) =>
  `${name} ${what} in the workspace only, confined by its own code (pinned directories, O_NOFOLLOW); ` +
  "that needs every permission, as tools/deno_flags.ts says.";

/**
 * Every built-in tool, by name, with its Deno flags.
 *
 * @example
 * ```ts
 * import { TOOL_DENO_FLAGS } from "./deno_flags.ts";
 * TOOL_DENO_FLAGS.http_fetch.flags; // ["--allow-net", "--allow-env=TOOLGATE_FETCH_ALLOW_HOSTS"]
 * ```
 */
export const TOOL_DENO_FLAGS: Readonly<Record<string, ToolDenoFlags>> = {
  get_time: { why: "get_time needs no Deno permission: it reads stdin and writes stdout.", flags: [] },
  fs_read_file: { why: why("fs_read_file", "reads files"), flags: FILE_TOOL },
  fs_read_lines: { why: why("fs_read_lines", "reads files"), flags: FILE_TOOL },
  fs_list_dir: { why: why("fs_list_dir", "lists folders"), flags: FILE_TOOL },
  fs_search: { why: why("fs_search", "searches files"), flags: FILE_TOOL },
  fs_stat: { why: why("fs_stat", "reads metadata"), flags: FILE_TOOL },
  fs_write_file: { why: why("fs_write_file", "writes files"), flags: FILE_TOOL },
  fs_edit: { why: why("fs_edit", "rewrites files"), flags: FILE_TOOL },
  fs_mkdir: { why: why("fs_mkdir", "creates folders"), flags: FILE_TOOL },
  fs_remove: { why: why("fs_remove", "deletes"), flags: FILE_TOOL },
  http_fetch: {
    why: "http_fetch needs the network (it checks every address itself) and its one allow-hosts variable.",
    flags: ["--allow-net", "--allow-env=TOOLGATE_FETCH_ALLOW_HOSTS"],
    connectsTo: "url",
  },
  exec: {
    why:
      "exec runs programs (the sandbox profile confines them), checks its cwd in the workspace, passes PATH, HOME " +
      "and the sandbox's proxy, CA and credential placeholders (their names vary: it reads its whole environment, " +
      "which --allow-run could print anyway).",
    flags: ["--allow-run", "--allow-read=.", "--allow-env"],
  },
  job: {
    why:
      "job runs inside toolgate, which owns the jobs and starts no process for it; run on its own it only says so.",
    flags: [],
  },
};

/** The flags every built-in tool runs with, before its own. */
export const COMMON_DENO_FLAGS: readonly string[] = ["--quiet", "--no-prompt", "--no-config", "--no-lock"];

/**
 * The text of a tool's launcher in `tools/bin/`: `deno` from PATH, the tool's flags, its source beside it.
 *
 * @example
 * ```ts
 * import { launcherText } from "./deno_flags.ts";
 * launcherText("get_time").startsWith("#!/bin/sh\n"); // true
 * ```
 */
export function launcherText(name: string): string {
  const entry = TOOL_DENO_FLAGS[name];
  const flags = [...COMMON_DENO_FLAGS, ...entry.flags].join(" ");
  return `#!/bin/sh\n# ${entry.why}\nexec deno run ${flags} "$(dirname -- "$0")/../src/${name}.ts"\n`;
}
