/**
 * Loads the manifest a command names (`--tools`, `TOOLGATE_TOOLS`, `./tools.json`) and reports its problems on
 * stderr, so that every command treats a bad manifest the same way.
 *
 * @module
 */
import { flag, type Io, type ParsedArgs, stringOption } from "../cli.ts";
import { manifestLocation } from "../launch_plan.ts";
import { loadManifest, type Manifest, type ManifestOptions, validateManifest } from "../manifest.ts";
import { BELT_MANIFEST, BELT_MANIFEST_PATH } from "../tool_belt.ts";

/**
 * The manifest a command uses: `--tools`, else `TOOLGATE_TOOLS`, else `./tools.json` when it exists, else the
 * built-in tool belt's own; relative paths against the caller's cwd.
 */
export function manifestPath(parsed: ParsedArgs, io: Io): string {
  return manifestLocation(stringOption(parsed, "tools"), io.env, io.cwd);
}

/** Loads the manifest; on errors prints them all (then the warnings) and returns `undefined`. */
export async function loadForCommand(
  parsed: ParsedArgs,
  io: Io,
  options: ManifestOptions = {},
): Promise<Manifest | undefined> {
  const path = manifestPath(parsed, io);
  const loadOptions = { allowAbsoluteCommands: flag(parsed, "allow-absolute-commands"), ...options };
  // The belt is built in: a bundle or a binary carries it without a file on disk.
  const result = path === BELT_MANIFEST_PATH
    ? validateManifest(BELT_MANIFEST, path, loadOptions)
    : await loadManifest(path, loadOptions);
  const lines = result.ok ? [...result.warnings].map((w) => `warning: ${w}`) : [
    ...result.errors,
    ...result.warnings.map((w) => `warning: ${w}`),
  ];
  if (lines.length > 0) await io.stderr(lines.join("\n") + "\n");
  return result.ok ? result.manifest : undefined;
}
