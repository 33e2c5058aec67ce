/**
 * Loads the manifest a command uses (`--tools`, `TOOLGATE_TOOLS`, the nearest `tools.json` from the workspace
 * (`--cwd`) or the current folder, else the built-in belt), says which when it is not `./tools.json`, holds a found one to the trust gate when the command runs
 * tools, and reports its problems on stderr, so that every command treats a manifest the same way.
 *
 * @module
 */
import { flag, type Io, type ParsedArgs, stringOption } from "./cli.ts";
import {
  isOwnManifest,
  locateManifest,
  type ManifestLocation,
  manifestNotice,
} from "../manifest/manifest_location.ts";
import type { Manifest, ManifestOptions, ManifestResult } from "../manifest/manifest_types.ts";
import type { ManifestContent } from "../manifest/trust.ts";
import { BELT_MANIFEST, BELT_MANIFEST_PATH } from "../manifest/tool_belt.ts";
import { stateRoot } from "../state/state.ts";
import { resolve } from "../base/paths.ts";
import { passGate } from "./trust_gate.ts";

/** toolgate's state folder, where a manifest's checked schemas are remembered; none without HOME. */
function cacheDir(env: Readonly<Record<string, string>>): string | undefined {
  try {
    return stateRoot(env);
  } catch {
    return undefined;
  }
}

/**
 * The folder a command's manifest is searched from: the workspace `--cwd` names (a command that takes it), else
 * the folder the command was typed in.
 *
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { searchFolderOf } from "./load.ts";
 * const io = { cwd: "/srv/host", env: {} } as unknown as Parameters<typeof searchFolderOf>[1];
 * deepEqual(searchFolderOf({ values: { cwd: "../my-tool" }, positionals: [] }, io), "/srv/my-tool");
 * deepEqual(searchFolderOf({ values: {}, positionals: [] }, io), "/srv/host");
 * ```
 */
export function searchFolderOf(parsed: ParsedArgs, io: Io): string {
  return resolve(io.cwd, stringOption(parsed, "cwd") ?? ".");
}

/** The manifest a command uses and where it came from (see `manifest_location.ts`). */
export function manifestLocationOf(parsed: ParsedArgs, io: Io): ManifestLocation {
  return locateManifest(stringOption(parsed, "tools"), io.env, io.cwd, searchFolderOf(parsed, io));
}

/**
 * The manifest a command uses: `--tools`, else `TOOLGATE_TOOLS`, else the nearest `tools.json` up to the project's
 * root, else the built-in tool belt's own; relative paths against the caller's cwd.
 */
export function manifestPath(parsed: ParsedArgs, io: Io): string {
  return manifestLocationOf(parsed, io).path;
}

/**
 * Where a command's tools and servers run: `--cwd`, else the folder it was typed in.
 *
 * @example Not run as a doc test: a fragment of a command, with its parsed command line and Io in scope.
 * ```ts ignore
 * import { workspaceOf } from "./load.ts";
 * workspaceOf(parsed, io); // "/srv/project/sub" for `--cwd sub` typed in /srv/project
 * ```
 */
export function workspaceOf(parsed: ParsedArgs, io: Io): string {
  return resolve(io.cwd, stringOption(parsed, "cwd") ?? ".");
}

/** How a command loads its manifest: the loader's options, and whether it runs tools (then it is gated). */
export interface LoadOptions extends ManifestOptions {
  /**
   * The command runs tools: a found manifest must be trusted first. `ask`: a person at the terminal may trust it
   * there; `refuse`: never asked (serve, whose stdin is the protocol's). Absent: the command only reads it.
   */
  readonly runsTools?: "ask" | "refuse";
  /** Told the content the trust gate pinned, when it checked one (`serve` keeps it to tell a later change). */
  readonly onTrusted?: (content: ManifestContent) => void;
}

/**
 * Validates the very bytes and profiles a trust check read (`content`), as a command loads a found manifest: each
 * program and the code its command lines name as they were trusted (a later change is not run).
 *
 * @example Not run as a doc test: a fragment of a command, with its parsed command line, Io and content in scope.
 * ```ts ignore
 * const result = await loadTrusted(parsed, io, location.path, content);
 * if (result.ok) executor.replaceOwnTools(result.manifest);
 * ```
 */
export async function loadTrusted(
  parsed: ParsedArgs,
  io: Io,
  path: string,
  content: ManifestContent,
): Promise<ManifestResult> {
  const { loadManifest } = await import("../manifest/manifest.ts");
  const result = await loadManifest(path, {
    allowAbsoluteCommands: flag(parsed, "allow-absolute-commands"),
    cacheDir: cacheDir(io.env),
    text: content.text,
    profiles: content.profiles,
  });
  if (!result.ok) return result;
  const manifest = Object.freeze({ ...result.manifest, pinned: content.programs, pinnedCode: content.code });
  return { ...result, manifest };
}

/**
 * Loads the manifest; on errors prints them all (then the warnings) and returns `undefined`. A command that runs
 * tools gets an untrusted manifest as a thrown `UntrustedManifest` (see `trust_gate.ts`).
 */
export async function loadForCommand(
  parsed: ParsedArgs,
  io: Io,
  options: LoadOptions = {},
): Promise<Manifest | undefined> {
  const location = manifestLocationOf(parsed, io);
  const path = location.path;
  const notice = manifestNotice(location, searchFolderOf(parsed, io));
  if (notice !== undefined) await io.stderr(notice + "\n");
  const { runsTools, onTrusted, ...manifestOptions } = options;
  const workspace = workspaceOf(parsed, io);
  const gate = runsTools === undefined
    ? undefined
    : await passGate(location, io, runsTools === "ask", workspace);
  const { loadManifest, validateManifest } = await import("../manifest/manifest.ts");
  const loadOptions: ManifestOptions = {
    allowAbsoluteCommands: flag(parsed, "allow-absolute-commands"),
    cacheDir: cacheDir(io.env),
    ...manifestOptions,
    // The very bytes and profiles the gate pinned: nothing is read a second time, so nothing can be swapped.
    ...(gate?.checked ? { text: gate.content.text, profiles: gate.content.profiles } : {}),
  };
  let result;
  if (path === BELT_MANIFEST_PATH || (location.source === "found" && isOwnManifest(path))) {
    // The belt is built in (a bundle or a binary carries it without a file on disk), and its schemas are held to
    // the rules by toolgate's own tests: only `validate` checks them again.
    if (options.compileSchemas) await (await import("../manifest/schema.ts")).loadSchemaEngine();
    result = validateManifest(BELT_MANIFEST, BELT_MANIFEST_PATH, {
      ...loadOptions,
      schemasChecked: !options.compileSchemas,
    });
  } else {
    result = await loadManifest(path, loadOptions);
  }
  const lines = result.ok ? [...result.warnings].map((w) => `warning: ${w}`) : [
    ...result.errors,
    ...result.warnings.map((w) => `warning: ${w}`),
  ];
  if (lines.length > 0) await io.stderr(lines.join("\n") + "\n");
  if (!result.ok) return undefined;
  if (gate?.checked) onTrusted?.(gate.content);
  // Each program as it was trusted: one that changes later is not run (see tool_launch.ts).
  return gate?.checked
    ? Object.freeze({ ...result.manifest, pinned: gate.content.programs, pinnedCode: gate.content.code })
    : result.manifest;
}
