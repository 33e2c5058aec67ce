/**
 * The permission flags toolgate runs under for this repository's own manifest: the set kept in
 * `permissions/toolgate.json` and `deno.json` (relative paths, for `deno task agent`), and the set `deno task
 * compile` bakes into the binary (absolute paths, so the binary runs from any folder).
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadManifest } from "../manifest.ts";
import { derivePermissions, type PermissionSet, toFlags } from "../permissions.ts";

/** The repository's root folder. */
export const ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

/** The least set for the root manifest; paths relative to the root, or absolute. */
export async function rootPermissions(absolute = false): Promise<PermissionSet> {
  const loaded = await loadManifest(join(ROOT, "tools.json"));
  if (!loaded.ok) throw new Error(`tools.json is invalid:\n${loaded.errors.join("\n")}`);
  return derivePermissions({ manifest: loaded.manifest, relativeTo: absolute ? undefined : ROOT });
}

/** The flags `deno task compile` bakes in. */
export async function compileFlags(): Promise<string[]> {
  return toFlags(await rootPermissions(true));
}
