/**
 * A package server's entry as it runs: rewritten from its package runner (`npx PKG`, `uvx PKG`, ...) to its
 * interpreter running the install toolgate made at trust (`node .../bin.js ARGS`, `.../bin/python .../bin/CMD
 * ARGS`), its profile reading that install (and the Python the venv was made from) besides what it names. Nothing
 * is downloaded here: a server with no install says to run `toolgate trust`, and an install whose tree is not the
 * one pinned is refused.
 * Not here: making installs (`package_install.ts`), recognising entries (`package_entry.ts`).
 *
 * @module
 */
import { findProgram } from "../base/find_program.ts";
import type { ServerSpec } from "../manifest/server_spec.ts";
import { FALLBACK_PATH } from "../sandbox/tool_launch.ts";
import { stateRoot } from "../state/state.ts";
import { serverEntryOf } from "./package_entry.ts";
import { type InstalledPackage, readInstalls, requestOf } from "./package_store.ts";
import { treeDigest, treeStamp } from "./tree_digest.ts";

/** Where a server's install is looked up: toolgate's environment, and the manifest's real path. */
export interface InstalledServerOptions {
  readonly env: Readonly<Record<string, string>>;
  /** The manifest's real path (its servers' installs are recorded by it); `undefined`: none is installed. */
  readonly manifest?: string;
}

/**
 * Is the install's tree the one pinned? Its stamp first (nothing read), its bytes when the stamp moved.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stillInstalled } from "./installed_server.ts";
 * import { treeDigest } from "./tree_digest.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.writeTextFileSync(`${dir}/index.js`, "1");
 * const install = { ...treeDigest(dir), dir } as unknown as Parameters<typeof stillInstalled>[0];
 * assert.equal(stillInstalled(install), true);
 * Deno.writeTextFileSync(`${dir}/index.js`, "2");
 * assert.equal(stillInstalled(install), false);
 * ```
 */
export function stillInstalled(install: InstalledPackage): boolean {
  try {
    return treeStamp(install.dir) === install.stamp || treeDigest(install.dir).digest === install.digest;
  } catch {
    return false;
  }
}

/**
 * The server as it runs: a package server rewritten to run its pinned install, any other unchanged; or the one
 * line that says why it does not start (not installed, its install changed, an entry toolgate does not run).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { installedServer } from "./installed_server.ts";
 * import { checkServers } from "../manifest/server_spec.ts";
 * const [server] = checkServers({ m: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] } },
 *   "/srv/p", new Map(), [], []);
 * const state = Deno.makeTempDirSync();
 * assert.match(installedServer(server, { env: { HOME: state }, manifest: "/srv/p/tools.json" }) as string,
 *   /not installed: run `toolgate trust`/);
 * const [node] = checkServers({ n: { command: "node", args: ["s.js"] } }, "/srv/p", new Map(), [], []);
 * assert.deepEqual(installedServer(node, { env: {} }), node);
 * ```
 */
export function installedServer(server: ServerSpec, options: InstalledServerOptions): ServerSpec | string {
  if (server.transport !== "stdio" || server.command === undefined) return server;
  const entry = serverEntryOf(server.command, server.args);
  if (entry.kind === "unsupported") return entry.message;
  if (entry.kind === "plain") return server;
  const notInstalled =
    `${entry.written} is not installed: run \`toolgate trust\`, which installs the package once, pinned, ` +
    "or says why it cannot (a package index that lacks it, no network); nothing is downloaded when a server starts";
  if (options.manifest === undefined) return notInstalled;
  let install: InstalledPackage | undefined;
  try {
    install = readInstalls(stateRoot(options.env), options.manifest)[server.name];
  } catch (error) {
    return `the record of installed packages cannot be read: ${(error as Error).message}`;
  }
  if (install === undefined || install.request !== requestOf(entry, server.allowScripts === true)) {
    return notInstalled;
  }
  if (!stillInstalled(install)) {
    return `the install of ${install.name}@${install.version} in ${install.dir} changed since toolgate installed ` +
      "it, so it was not started: run `toolgate trust` to install it again";
  }
  const path = options.env.PATH ?? FALLBACK_PATH;
  const runtime = install.runtime === "node" ? findProgram("node", path) : install.runtime;
  if (runtime === undefined) return `node is not found on PATH (${path}): ${install.name} runs under it`;
  return Object.freeze({
    ...server,
    command: runtime,
    args: Object.freeze([install.program, ...entry.args]),
    // A read-only install: Python must not try to write its bytecode beside it.
    env: Object.freeze(
      install.ecosystem === "pypi" ? { PYTHONDONTWRITEBYTECODE: "1", ...server.env } : server.env,
    ),
    profile: Object.freeze({
      ...server.profile,
      read: Object.freeze([...server.profile.read, install.dir, ...install.reads]),
    }),
  });
}
