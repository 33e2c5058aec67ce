/**
 * Tool mode (`toolgate __tool NAME`): the bundle or the compiled binary runs one of its built-in tools. Every
 * Deno permission the tool does not need is revoked first, so that a binary with toolgate's own flags baked in
 * runs each tool with no more than the tool's own.
 *
 * @module
 */
import { TOOL_DENO_FLAGS } from "../../tools/deno_flags.ts";

const TOOLS: Readonly<Record<string, () => Promise<unknown>>> = {
  get_time: () => import("../../tools/src/get_time.ts"),
  fs_read_file: () => import("../../tools/src/fs_read_file.ts"),
  fs_read_lines: () => import("../../tools/src/fs_read_lines.ts"),
  fs_list_dir: () => import("../../tools/src/fs_list_dir.ts"),
  fs_search: () => import("../../tools/src/fs_search.ts"),
  fs_stat: () => import("../../tools/src/fs_stat.ts"),
  fs_write_file: () => import("../../tools/src/fs_write_file.ts"),
  fs_edit: () => import("../../tools/src/fs_edit.ts"),
  fs_mkdir: () => import("../../tools/src/fs_mkdir.ts"),
  fs_remove: () => import("../../tools/src/fs_remove.ts"),
  http_fetch: () => import("../../tools/src/http_fetch.ts"),
  exec: () => import("../../tools/src/exec.ts"),
  job: () => import("../../tools/src/job.ts"),
};

const KINDS = ["read", "write", "net", "env", "run", "ffi", "sys", "import"] as const;

/**
 * Revokes every permission kind the tool's flags do not name. (A grant can only be dropped whole: a scoped one
 * that the tool also has stays as it was granted.)
 *
 * @example
 * ```ts
 * import { dropPermissions } from "./tool_mode.ts";
 * // In tool mode, before get_time's module loads: read, write, net, env, run, ffi and sys are revoked.
 * if (Deno.args[0] === "__tool") dropPermissions("get_time");
 * ```
 */
export function dropPermissions(name: string): void {
  // A tool that takes every permission needs Deno to pass its paths through untouched: any revoked kind would stop
  // that (see tools/deno_flags.ts).
  if (TOOL_DENO_FLAGS[name].flags.includes("--allow-all")) return;
  const named = new Set(TOOL_DENO_FLAGS[name].flags.map((flag) => /^--allow-([a-z]+)/.exec(flag)?.[1]));
  for (const kind of KINDS) {
    // The import permission gates only remote imports, and the tool's modules are already inside the program.
    if (kind === "import" || named.has(kind)) continue;
    Deno.permissions.revokeSync({ name: kind } as Deno.PermissionDescriptor);
  }
}

/**
 * Runs built-in tool `name` (its module does the work when imported); an unknown name exits 2.
 *
 * @example Not run as a doc test: it reads stdin and ends the process.
 * ```ts ignore
 * import { runToolMode } from "./tool_mode.ts";
 * await runToolMode("get_time"); // reads the arguments on stdin, prints the result
 * ```
 */
export async function runToolMode(name: string | undefined): Promise<void> {
  if (name === undefined || !Object.hasOwn(TOOLS, name)) {
    console.error(`toolgate: tool mode: no built-in tool named ${JSON.stringify(name ?? "")}`);
    Deno.exit(2);
  }
  dropPermissions(name);
  await TOOLS[name]();
}
