/**
 * Loads the manifest a command names (`--tools`, `TOOLGATE_TOOLS`, `./tools.json`) and reports its problems on
 * stderr, so that every command treats a bad manifest the same way.
 *
 * @module
 */
import { resolve } from "node:path";
import { flag, type Io, type ParsedArgs, stringOption } from "../cli.ts";
import { loadManifest, type Manifest, type ManifestOptions } from "../manifest.ts";

/** The manifest path a command was given, relative paths against the caller's cwd. */
export function manifestPath(parsed: ParsedArgs, io: Io): string {
  return resolve(io.cwd, stringOption(parsed, "tools") ?? io.env.TOOLGATE_TOOLS ?? "tools.json");
}

/** Loads the manifest; on errors prints them all (then the warnings) and returns `undefined`. */
export async function loadForCommand(
  parsed: ParsedArgs,
  io: Io,
  options: ManifestOptions = {},
): Promise<Manifest | undefined> {
  const result = await loadManifest(manifestPath(parsed, io), {
    allowAbsoluteCommands: flag(parsed, "allow-absolute-commands"),
    ...options,
  });
  const lines = result.ok ? [...result.warnings].map((w) => `warning: ${w}`) : [
    ...result.errors,
    ...result.warnings.map((w) => `warning: ${w}`),
  ];
  if (lines.length > 0) await io.stderr(lines.join("\n") + "\n");
  return result.ok ? result.manifest : undefined;
}
