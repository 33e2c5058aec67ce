/**
 * Which manifest a run uses, decided in one place for the launcher and every command: `--tools`, else
 * `TOOLGATE_TOOLS`, else the nearest `tools.json` in the workspace (`--cwd`, else the current folder) or an
 * ancestor up to the project's root (the first folder holding `.git`, or the home folder, whichever comes first),
 * else the built-in tool belt.
 *
 * Not here: whether a found manifest is trusted (`trust.ts`), loading and checking it (`manifest.ts`).
 *
 * @module
 */
import { dirname, join, resolve } from "../base/paths.ts";
import { existsNoFollow } from "../base/lstat.ts";
import { BELT_MANIFEST_PATH, packaging } from "./tool_belt.ts";
import { BELT_MANIFEST_DATA } from "./belt_data.ts";
import { canonical } from "../base/canonical_json.ts";

/**
 * Where the manifest came from: named on the command line (`tools`), in the environment (`env`), found in the
 * folder or above it (`found`), or the built-in belt (`belt`). Only a `found` one can have been planted by a tool,
 * so only it must be trusted before its tools run.
 */
export type ManifestSource = "tools" | "env" | "found" | "belt";

/** The manifest of a run and how it was chosen. */
export interface ManifestLocation {
  /** The manifest file, absolute (a found one by its real path; the belt's own path when none is found). */
  readonly path: string;
  readonly source: ManifestSource;
}

/**
 * The folders searched for a `tools.json`, nearest first: `cwd` and its ancestors up to the project's root (the
 * first holding `.git`, or `home`). With neither above `cwd`, only `cwd` itself: a `tools.json` in `/tmp` or `/`
 * is nobody's project and is never picked up from below.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { searchedFolders } from "./manifest_location.ts";
 * assert.deepEqual(searchedFolders("/nowhere/at/all", "/also/nowhere"), ["/nowhere/at/all"]); // no project root above it
 * ```
 */
export function searchedFolders(cwd: string, home: string | undefined): string[] {
  const folders: string[] = [];
  const top = home === undefined || home === "" ? undefined : resolve(home);
  for (let dir = resolve(cwd);; dir = dirname(dir)) {
    folders.push(dir);
    if (dir === top || existsNoFollow(join(dir, ".git"))) return folders;
    if (dirname(dir) === dir) return [resolve(cwd)];
  }
}

/**
 * The manifest a run uses and where it came from: `--tools` and `TOOLGATE_TOOLS` relative to `cwd` (the folder the
 * command was typed in), the nearest `tools.json` searched from `workspace` (the folder `--cwd` names; `cwd`
 * without it), so that a host which starts `toolgate serve --cwd ~/my-tool` from a folder of its own gets that
 * project's manifest.
 *
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { locateManifest } from "./manifest_location.ts";
 * deepEqual(locateManifest("my-tools.json", {}, "/srv/project"), {
 *   path: "/srv/project/my-tools.json",
 *   source: "tools",
 * });
 * // Named relative to where it was typed, whatever the workspace.
 * deepEqual(locateManifest("t.json", {}, "/srv/here", "/srv/project").path, "/srv/here/t.json");
 * ```
 */
export function locateManifest(
  tools: string | undefined,
  env: Readonly<Record<string, string>>,
  cwd: string,
  workspace: string = cwd,
): ManifestLocation {
  if (tools !== undefined) return { path: resolve(cwd, tools), source: "tools" };
  if (env.TOOLGATE_TOOLS) return { path: resolve(cwd, env.TOOLGATE_TOOLS), source: "env" };
  for (const dir of searchedFolders(resolve(cwd, workspace), env.HOME)) {
    const candidate = join(dir, "tools.json");
    // By its real path: a link planted as tools.json must not borrow another manifest's trust (or toolgate's own)
    // while its commands resolve against the folder the link lies in.
    if (!existsNoFollow(candidate)) continue;
    // A checkout of toolgate itself, found by the installed command: its tools.json is the belt, run as built in.
    if (isBeltCopy(candidate)) return { path: BELT_MANIFEST_PATH, source: "belt" };
    return { path: realOr(candidate), source: "found" };
  }
  return { path: BELT_MANIFEST_PATH, source: "belt" };
}

/**
 * Whether `path`, found by a bundled or compiled toolgate, is a checkout's copy of toolgate's own `tools.json`: its
 * folder holds toolgate's source, and the file says exactly what the built-in belt says. Such a file is taken as
 * the belt: its tools run as built in (never the checkout's programs, which nobody trusted), so the installed
 * command agrees with `deno task agent` in that checkout that it needs no trust. From source, the checkout running
 * is toolgate's own and `isOwnManifest` decides.
 */
function isBeltCopy(path: string): boolean {
  if (packaging() === "source") return false;
  if (!existsNoFollow(join(dirname(path), "src", "manifest", "tool_belt.ts"))) return false;
  try {
    return canonical(JSON.parse(Deno.readTextFileSync(path))) === canonical(BELT_MANIFEST_DATA);
  } catch {
    return false;
  }
}

function realOr(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}

/** Is `path` toolgate's own manifest (its checkout's `tools.json`, the belt's), by real path? */
export function isOwnManifest(path: string): boolean {
  if (path === BELT_MANIFEST_PATH) return true;
  try {
    return Deno.realPathSync(path) === Deno.realPathSync(BELT_MANIFEST_PATH);
  } catch {
    return false;
  }
}

/**
 * Whether a manifest must be trusted before its tools run: only one found in the folder or above it, where a tool
 * may have written it, and never toolgate's own. What the user named (`--tools`, `TOOLGATE_TOOLS`) is trusted for
 * the run that names it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { needsTrust } from "./manifest_location.ts";
 * assert.equal(needsTrust({ path: "/srv/project/tools.json", source: "tools" }), false); // the user named it
 * ```
 */
export function needsTrust(location: ManifestLocation): boolean {
  return location.source === "found" && !isOwnManifest(location.path);
}

/**
 * The one line that says which manifest is in use, when it is not the workspace's `tools.json` (`cwd`: the folder
 * searched from) and was not named with `--tools` on this very command line; `undefined` when there is nothing to
 * say.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { manifestNotice } from "./manifest_location.ts";
 * assert.equal(manifestNotice({ path: "/srv/project/tools.json", source: "found" }, "/srv/project/src"), "toolgate: using the manifest /srv/project/tools.json");
 * ```
 */
export function manifestNotice(location: ManifestLocation, cwd: string): string | undefined {
  switch (location.source) {
    case "tools":
      return undefined;
    case "env":
      return `toolgate: using the manifest ${location.path} (TOOLGATE_TOOLS)`;
    case "found":
      return location.path === realOr(join(resolve(cwd), "tools.json"))
        ? undefined
        : `toolgate: using the manifest ${location.path}`;
    case "belt":
      return "toolgate: using the built-in tool belt (no tools.json here or up to the project's root)";
  }
}
