/**
 * The permission flags toolgate runs under for this repository's own manifest: the set kept in
 * `permissions/toolgate.json` and `deno.json` (relative paths and `$HOME`, which `deno task agent` expands), and
 * the set `deno task compile` bakes into the binary (absolute paths, so the binary runs from any folder; the state
 * folder is the one of the environment that builds it).
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadManifest } from "../manifest.ts";
import { derivePermissions, type PermissionSet, toFlags } from "../permissions.ts";

/** The repository's root folder. */
export const ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The least set for the root manifest; paths relative to the root, or absolute. With `env`, the state folder is
 * the one it places (absolute); without, the kept `$HOME` form.
 */
export async function rootPermissions(
  absolute = false,
  env?: Readonly<Record<string, string>>,
): Promise<PermissionSet> {
  const loaded = await loadManifest(join(ROOT, "tools.json"));
  if (!loaded.ok) throw new Error(`tools.json is invalid:\n${loaded.errors.join("\n")}`);
  return derivePermissions({ manifest: loaded.manifest, relativeTo: absolute ? undefined : ROOT, env });
}

/** The flags `deno task compile` bakes in: absolute, with the state folder `env` places. */
export async function compileFlags(
  env: Readonly<Record<string, string>> = Deno.env.toObject(),
): Promise<string[]> {
  return toFlags(await rootPermissions(true, env));
}
