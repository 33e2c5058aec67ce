/**
 * The shape every host module shares: one server as a host starts it ({@linkcode HostServer}, in Claude
 * Desktop's vocabulary whatever the host's), the outcome of reading a file ({@linkcode HostRead}), and a host's
 * format ({@linkcode HostFormat}: its reader and its writer). Also what a rewired entry starts
 * ({@linkcode HostLaunch}) and how to tell an entry that starts toolgate already.
 *
 * Not here: each host's own keys (`claude_desktop.ts`, `codex.ts`, ...), where the files are (`host_files.ts`).
 *
 * @module
 */
import { basename } from "../base/paths.ts";

/** The hosts toolgate reads, by the name `--host` and `--apply` take. */
export const HOST_IDS = [
  "claude-desktop",
  "claude-code",
  "cursor",
  "vscode",
  "codex",
  "windsurf",
  "gemini",
] as const;

/** One of {@linkcode HOST_IDS}. */
export type HostId = typeof HOST_IDS[number];

/**
 * Is `name` a host toolgate reads?
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { isHostId } from "./host_format.ts";
 * assertEquals(isHostId("codex"), true);
 * assertEquals(isHostId("emacs"), false);
 * ```
 */
export function isHostId(name: string): name is HostId {
  return (HOST_IDS as readonly string[]).includes(name);
}

/** One server of a host's file, in the vocabulary of Claude Desktop's (what `mcp_import.ts` reads). */
export interface HostServer {
  /** Its name in the host's file. */
  readonly name: string;
  /** `command`, `args`, `env` (stdio) or `url`, `headers`, `type: "sse"` (HTTP), as the host gives them. */
  readonly entry: Readonly<Record<string, unknown>>;
  /** The host starts it (Codex `enabled = false`, a `disabled: true` elsewhere: false). */
  readonly enabled: boolean;
  /** The folder the host starts it in, when the entry names one (relative paths in its arguments are from there). */
  readonly cwd?: string;
  /** Variables whose values are credentials whatever their names (a VS Code `${input:ID}` of a password input). */
  readonly credentialEnv: readonly string[];
  /** The only tools the host shows of it (Codex `enabled_tools`, Gemini `includeTools`). */
  readonly allow?: readonly string[];
  /** Tools the host hides (Codex `disabled_tools`, Gemini `excludeTools`, Windsurf `disabledTools`). */
  readonly deny?: readonly string[];
  /** What the reader left out or changed, one line each; never a value. */
  readonly notes: readonly string[];
}

/** The outcome of reading a host's file: its servers, or one line `FILE:LINE:COL: message`. */
export type HostRead =
  | { readonly ok: true; readonly servers: readonly HostServer[] }
  | { readonly ok: false; readonly reason: string };

/** What a rewired entry starts: an absolute program and its arguments. */
export interface HostLaunch {
  readonly command: string;
  readonly args: readonly string[];
}

/** What a reader and a writer know besides the text: the file's path, and the project it is read for. */
export interface HostContext {
  /** The file's path (every error names it). */
  readonly file: string;
  /** The project folder, absolute (Claude Code's `~/.claude.json` keeps servers per project path). */
  readonly project: string;
  /** The user named this file: one without the host's servers key is not the host's (an error, not "none"). */
  readonly named?: boolean;
}

/** A host's format: a pure reader and a pure writer of its configuration's text. */
export interface HostFormat {
  readonly id: HostId;
  /** The host's name for people ("Claude Desktop"). */
  readonly label: string;
  /** The servers of `text`, or one line naming the file and the position of what is wrong. */
  read(text: string, context: HostContext): Promise<HostRead>;
  /**
   * `text` with each server of `launches` (by its name in the file) started by that launch instead, every other
   * key of the entry (its on/off switch, timeouts) and the rest of the file kept; and what changed besides.
   */
  rewire(
    text: string,
    context: HostContext,
    launches: ReadonlyMap<string, HostLaunch>,
  ): Promise<{ readonly text: string; readonly notes: readonly string[] }>;
}

/**
 * Does this entry start toolgate already (`toolgate serve ... --server NAME`, as `import --apply` writes it)?
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { startsToolgate } from "./host_format.ts";
 * assertEquals(startsToolgate({ command: "/home/me/.local/bin/toolgate", args: ["serve", "--server", "fs"] }), true);
 * assertEquals(startsToolgate({ command: "npx", args: ["-y", "x"] }), false);
 * ```
 */
export function startsToolgate(entry: Readonly<Record<string, unknown>>): boolean {
  const args = Array.isArray(entry.args) ? entry.args : [];
  if (typeof entry.command !== "string" || !args.includes("serve") || !args.includes("--server")) {
    return false;
  }
  return basename(entry.command) === "toolgate" ||
    args.some((arg) => typeof arg === "string" && /(^|\/)(launch\.ts|launch\.js)$/.test(arg));
}

/** The keys that say how a server starts: a rewired entry replaces them all with `command` and `args`. */
export const LAUNCH_KEYS: ReadonlySet<string> = new Set([
  "command",
  "args",
  "env",
  "envFile",
  "cwd",
  "url",
  "httpUrl",
  "serverUrl",
  "headers",
  "type",
  "transport",
  // Codex's
  "env_vars",
  "bearer_token_env_var",
  "bearer_token",
  "http_headers",
  "env_http_headers",
]);

/**
 * The entry a host starts toolgate by: `entry`'s own keys (switches, timeouts, in their order) with the launch
 * keys replaced by `launch`'s `command` and `args` where the first of them stood; `type: "stdio"` where the host
 * writes a type.
 *
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * import { rewiredEntry } from "./host_format.ts";
 * const entry = rewiredEntry({ type: "http", url: "https://x", timeout: 5 }, { command: "/bin/toolgate", args: ["serve"] });
 * assertEquals(entry, { type: "stdio", command: "/bin/toolgate", args: ["serve"], timeout: 5 });
 * ```
 */
export function rewiredEntry(
  entry: Readonly<Record<string, unknown>>,
  launch: HostLaunch,
  dropped: ReadonlySet<string> = new Set(),
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let placed = false;
  for (const [key, value] of Object.entries(entry)) {
    if (dropped.has(key)) continue;
    if (!LAUNCH_KEYS.has(key)) {
      out[key] = value;
      continue;
    }
    if (placed) continue;
    placed = true;
    if (entry.type !== undefined) out.type = "stdio";
    out.command = launch.command;
    out.args = [...launch.args];
  }
  if (!placed) Object.assign(out, { command: launch.command, args: [...launch.args] });
  return out;
}
