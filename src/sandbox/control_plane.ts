/**
 * The control plane: what is toolgate's and never a tool's to change. Read-only to tools: the manifest and what
 * sits beside it (`tools/`, `permissions/`, `deno.json`, `deno.jsonc`, `deno.lock`), toolgate's own code and the
 * runtime that runs it. Hidden from tools: toolgate's state and configuration (the audit log, its key, secrets).
 *
 * @module
 */
import { join } from "../base/paths.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import { configRoot, stateRoot } from "../state/state.ts";
import { TOOLGATE_CODE } from "../manifest/tool_belt.ts";

/** The protected paths of one run, as absolute real paths (those that exist). */
export interface ControlPlane {
  /** Tools may read these (their own program files among them) but never change them. */
  readonly readOnly: readonly string[];
  /** Tools may neither read nor change these. */
  readonly hidden: readonly string[];
}

/** The files beside a manifest that belong to it. */
const BESIDE_MANIFEST = ["tools", "permissions", "deno.json", "deno.jsonc", "deno.lock"];

/** The real path of `path`, or `undefined` when it does not exist. */
function real(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch {
    return undefined;
  }
}

function present(paths: readonly string[]): string[] {
  const out = new Set<string>();
  for (const path of paths) {
    const resolved = real(path);
    if (resolved !== undefined) out.add(resolved);
  }
  return [...out];
}

/**
 * The control plane of a run: the manifest's own files, toolgate's code and runtime, and its state and config
 * folders. Folders that do not exist yet are left out (the executor creates the state folder before any tool
 * runs).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { controlPlane } from "./control_plane.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const home = await Deno.makeTempDir();
 * await Deno.mkdir(`${home}/.local/state/toolgate`, { recursive: true });
 * const plane = controlPlane(loaded.manifest, { HOME: home });
 * assert.ok(plane.readOnly.includes(`${Deno.cwd()}/tools.json`));
 * assert.deepEqual(plane.hidden, [`${home}/.local/state/toolgate`]); // config: none yet, so left out
 * ```
 */
export function controlPlane(manifest: Manifest, env: Readonly<Record<string, string>>): ControlPlane {
  const roots: string[] = [];
  for (const root of [() => stateRoot(env), () => configRoot(env)]) {
    try {
      roots.push(root());
    } catch {
      // No HOME: there is no state folder to hide.
    }
  }
  return {
    readOnly: present([
      manifest.path,
      ...BESIDE_MANIFEST.map((name) => join(manifest.dir, name)),
      TOOLGATE_CODE,
      Deno.execPath(),
    ]),
    hidden: present(roots),
  };
}
