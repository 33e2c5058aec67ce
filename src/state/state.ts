/**
 * Where toolgate keeps its own state (the audit log, the digest key, caches) and its configuration: in the user's
 * state and config directories, never in a workspace a tool may write, each folder the user's own with mode 0700.
 *
 * @module
 */
import { basename, isAbsolute, join } from "../base/paths.ts";

/** The variables that place toolgate's state and configuration. */
export const STATE_ENV = ["HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"] as const;

/**
 * A folder or file toolgate may not use as its own (a symlink, someone else's, open to others), or state it has no
 * place for. Its message names the path and the fix; the CLI prints it and exits 1.
 */
export class StateDirError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StateDirError";
  }
}

/** `$XDG_*_HOME` when it is absolute (the spec says to ignore a relative one), else `$HOME/<fallback>`. */
function xdg(env: Readonly<Record<string, string>>, variable: string, fallback: string): string {
  const value = env[variable];
  if (value !== undefined && isAbsolute(value)) return join(value, "toolgate");
  const home = env.HOME;
  if (home === undefined || !isAbsolute(home)) {
    throw new StateDirError(
      `neither ${variable} nor HOME is set to an absolute path: toolgate has no place for its state`,
    );
  }
  return join(home, fallback, "toolgate");
}

/**
 * toolgate's state folder: `$XDG_STATE_HOME/toolgate`, else `$HOME/.local/state/toolgate`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stateRoot } from "./state.ts";
 * assert.equal(stateRoot({ HOME: "/home/me" }), "/home/me/.local/state/toolgate");
 * ```
 */
export function stateRoot(env: Readonly<Record<string, string>>): string {
  return xdg(env, "XDG_STATE_HOME", ".local/state");
}

/**
 * toolgate's configuration folder: `$XDG_CONFIG_HOME/toolgate`, else `$HOME/.config/toolgate`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { configRoot } from "./state.ts";
 * assert.equal(configRoot({ HOME: "/home/me", XDG_CONFIG_HOME: "/etc/me" }), "/etc/me/toolgate");
 * ```
 */
export function configRoot(env: Readonly<Record<string, string>>): string {
  return xdg(env, "XDG_CONFIG_HOME", ".config");
}

/**
 * toolgate's data folder (the bundle `deno task install` builds): `$XDG_DATA_HOME/toolgate`, else
 * `$HOME/.local/share/toolgate`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dataRoot } from "./state.ts";
 * assert.equal(dataRoot({ HOME: "/home/me" }), "/home/me/.local/share/toolgate");
 * ```
 */
export function dataRoot(env: Readonly<Record<string, string>>): string {
  return xdg(env, "XDG_DATA_HOME", ".local/share");
}

/**
 * The secret store's file: `<config>/secrets.json` (its key, where there is no keyring, is in the state folder).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { secretStoreFile } from "./state.ts";
 * assert.equal(secretStoreFile({ HOME: "/home/me" }), "/home/me/.config/toolgate/secrets.json");
 * ```
 */
export function secretStoreFile(env: Readonly<Record<string, string>>): string {
  return join(configRoot(env), "secrets.json");
}

/**
 * FNV-1a, 64 bits, as 16 hex digits: enough to tell folders apart by name, and cheap (no crypto module to load at
 * start-up; nothing here is a secret or a check).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fnv1a64 } from "./state.ts";
 * assert.equal(fnv1a64("/srv/project").length, 16);
 * ```
 */
export function fnv1a64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, "0");
}

/**
 * The state folder of one workspace (given as its real path): `<root>/workspaces/<name>-<digest>`, the digest
 * telling apart workspaces that share a folder name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { workspaceStateDir } from "./state.ts";
 * assert.equal(
 *   workspaceStateDir("/home/me/.local/state/toolgate", "/home/me/project"),
 *   "/home/me/.local/state/toolgate/workspaces/project-6afe337369685c16",
 * );
 * ```
 */
export function workspaceStateDir(root: string, workspace: string): string {
  const digest = fnv1a64(workspace);
  const name = basename(workspace).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 40) || "root";
  return join(root, "workspaces", `${name}-${digest}`);
}

/** The audit folder of a workspace. */
export function auditDirFor(env: Readonly<Record<string, string>>, workspace: string): string {
  return join(workspaceStateDir(stateRoot(env), workspace), "audit");
}
