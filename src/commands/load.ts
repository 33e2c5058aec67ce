/**
 * Loads the manifest a command names (`--tools`, `TOOLGATE_TOOLS`, `./tools.json`) and reports its problems on
 * stderr, so that every command treats a bad manifest the same way.
 *
 * @module
 */
import { flag, type Io, type ParsedArgs, stringOption } from "./cli.ts";
import { manifestLocation } from "../launch_plan.ts";
import type { Manifest, ManifestOptions } from "../manifest.ts";
import { BELT_MANIFEST, BELT_MANIFEST_PATH } from "../tool_belt.ts";
import { stateRoot } from "../state.ts";

/** toolgate's state folder, where a manifest's checked schemas are remembered; none without HOME. */
function cacheDir(env: Readonly<Record<string, string>>): string | undefined {
  try {
    return stateRoot(env);
  } catch {
    return undefined;
  }
}

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
  const { loadManifest, validateManifest } = await import("../manifest.ts");
  const loadOptions: ManifestOptions = {
    allowAbsoluteCommands: flag(parsed, "allow-absolute-commands"),
    cacheDir: cacheDir(io.env),
    ...options,
  };
  let result;
  if (path === BELT_MANIFEST_PATH) {
    // The belt is built in (a bundle or a binary carries it without a file on disk), and its schemas are held to
    // the rules by toolgate's own tests: only `validate` checks them again.
    if (options.compileSchemas) await (await import("../schema.ts")).loadSchemaEngine();
    result = validateManifest(BELT_MANIFEST, path, {
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
  return result.ok ? result.manifest : undefined;
}
