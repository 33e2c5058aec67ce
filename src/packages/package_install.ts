/**
 * The installs `toolgate trust` makes: each package server of a manifest (`npx`, `uvx`, `pipx run`, `deno run
 * npm:`) installed once, confined, at the version pinned (the one the entry names, else the newest at the first
 * trust), kept while its tree is the one pinned, installed again at `--update NAME` (the version change shown),
 * and recorded for the server's starts. Entries toolgate cannot install are said plainly.
 * Not here: the installers (`npm_install.ts`, `pip_install.ts`), running an install (`installed_server.ts`).
 *
 * @module
 */
import type { Manifest } from "../manifest/manifest_types.ts";
import { controlPlane } from "../sandbox/control_plane.ts";
import type { SandboxMode } from "../sandbox/sandbox.ts";
import { ToolLauncher } from "../sandbox/tool_launch.ts";
import { stillInstalled } from "./installed_server.ts";
import { serverEntryOf } from "./package_entry.ts";
import { type InstalledPackage, readInstalls, requestOf, writeInstalls } from "./package_store.ts";
import { packagesRoot } from "./packages_root.ts";
import { type InstallContext, InstallError, type MadeInstall } from "./installer.ts";
import { installNpm } from "./npm_install.ts";
import { installPip } from "./pip_install.ts";

/** What {@linkcode installPackages} needs. */
export interface InstallPackagesOptions {
  /** The manifest whose servers are installed (its folder and control plane confine the installs). */
  readonly manifest: Manifest;
  /** Its real path: the key of the record. */
  readonly manifestRealPath: string;
  /** toolgate's state folder. */
  readonly state: string;
  /** toolgate's environment (PATH finds npm and python3; HOME or XDG_DATA_HOME places the installs). */
  readonly env: Readonly<Record<string, string>>;
  /** The workspace, the installs' working folder. */
  readonly workspace: string;
  readonly sandbox?: SandboxMode;
  readonly bwrap?: string;
  /** Servers to resolve again (`trust --update NAME`): `true` for all. */
  readonly update: ReadonlySet<string> | true;
  /** Told what is being installed, as it starts (an install takes seconds to a minute). */
  readonly progress: (line: string) => Promise<void>;
}

/** What the installs came to: a line per package server, and the servers that cannot run. */
export interface InstallReport {
  readonly lines: readonly string[];
  readonly failed: readonly string[];
}

const count = (lock: Readonly<Record<string, string>>): string => {
  const n = Object.keys(lock).length;
  return `${n} package${n === 1 ? "" : "s"} pinned`;
};

/**
 * Installs the package servers of a manifest that need it and records them: one line per package server (what
 * runs, its version, a version change), one per entry toolgate cannot run.
 *
 * @example
 * ```ts ignore
 * // Ignored: it installs from the registries.
 * const report = await installPackages({ manifest, manifestRealPath, state, env, workspace, update: new Set(),
 *   progress: (line) => io.stderr(line + "\n") });
 * report.lines; // ["memory: npx @modelcontextprotocol/server-memory -> 2026.8.31 (96 packages pinned), installed"]
 * ```
 */
export async function installPackages(options: InstallPackagesOptions): Promise<InstallReport> {
  const { env, state, manifestRealPath } = options;
  const before = readInstalls(state, manifestRealPath);
  const after: Record<string, InstalledPackage> = {};
  const lines: string[] = [];
  const failed: string[] = [];
  let context: InstallContext | undefined;
  const contextFor = (allowScripts: boolean): InstallContext => {
    context ??= {
      launcher: new ToolLauncher({
        manifest: { ...options.manifest, pinned: undefined },
        env,
        workspace: options.workspace,
        controlPlane: controlPlane(options.manifest, env),
        sandbox: options.sandbox,
        bwrap: options.bwrap,
      }),
      env,
      root: packagesRoot(env),
      allowScripts,
    };
    return { ...context, allowScripts };
  };
  for (const server of options.manifest.servers ?? []) {
    if (server.transport !== "stdio" || server.command === undefined) continue;
    const entry = serverEntryOf(server.command, server.args);
    if (entry.kind === "unsupported") {
      lines.push(`${server.name}: ${entry.message}`);
      failed.push(server.name);
      continue;
    }
    const named = options.update !== true && options.update.has(server.name);
    if (entry.kind === "plain") {
      if (entry.note !== undefined) lines.push(`${server.name}: ${entry.note}`);
      else if (named) lines.push(`${server.name}: runs ${server.command} as written: nothing to update`);
      continue;
    }
    const allowScripts = server.allowScripts === true;
    const request = requestOf(entry, allowScripts);
    const previous = before[server.name];
    const same = previous !== undefined && previous.request === request;
    const update = options.update === true || options.update.has(server.name);
    if (same && !update && stillInstalled(previous)) {
      after[server.name] = previous;
      lines.push(
        `${server.name}: ${entry.written} -> ${previous.name}@${previous.version} (${
          count(previous.lock)
        }), installed`,
      );
      continue;
    }
    // The version stays the one pinned until the user asks for another (--update), or the entry names one.
    const version = same && !update ? previous.version : undefined;
    const scripts = allowScripts ? ", its install scripts allowed" : "";
    await options.progress(
      `toolgate: installing ${entry.name}${version === undefined ? "" : `@${version}`} from ${
        entry.ecosystem === "npm" ? "npm" : "PyPI"
      } for the server ${JSON.stringify(server.name)}${scripts} (confined; this can take a minute)...`,
    );
    let made: MadeInstall;
    try {
      made = entry.ecosystem === "npm"
        ? await installNpm(entry, version, contextFor(allowScripts))
        : await installPip(entry, version, contextFor(allowScripts), same ? previous.digest : undefined);
    } catch (error) {
      const message = error instanceof InstallError ? error.message : (error as Error).message;
      lines.push(`${server.name}: ${entry.written} cannot be installed: ${message}`);
      // An update that failed leaves the install that was pinned.
      if (same && stillInstalled(previous)) after[server.name] = previous;
      else failed.push(server.name);
      continue;
    }
    after[server.name] = {
      request,
      ecosystem: entry.ecosystem,
      name: entry.name,
      ...made,
      installedAt: new Date().toISOString(),
    };
    const change = previous === undefined
      ? "installed"
      : previous.version === made.version
      ? `installed again (version ${made.version} unchanged${
        update && entry.version !== undefined ? `: the entry names ${entry.version}, edit it to move` : ""
      })`
      : `updated ${previous.name}@${previous.version} -> ${made.version}`;
    lines.push(
      `${server.name}: ${entry.written} -> ${entry.name}@${made.version} (${
        count(made.lock)
      }), ${change}, in ${made.dir}`,
    );
  }
  writeInstalls(state, manifestRealPath, after);
  return { lines, failed };
}
