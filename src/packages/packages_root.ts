/**
 * What toolgate itself needs for package servers, known before anything loads: the folder installs live in (read
 * at every start of a package server, written at `trust`), and the variables that carry the package managers'
 * settings. The launcher grants them; nothing here runs.
 * Not here: the installs (`package_install.ts`), their record (`package_store.ts`).
 *
 * @module
 */
import { isAbsolute, join } from "../base/paths.ts";
import { StateDirError } from "../state/state.ts";

/**
 * The variables the package managers read their registry, index and certificates from, which `trust` passes to
 * them when it asks for their settings (a confined install step gets the settings themselves, never these).
 */
export const INSTALL_ENV: readonly string[] = [
  "XDG_DATA_HOME",
  "NODE_EXTRA_CA_CERTS",
  "npm_config_registry",
  "npm_config_cafile",
  "npm_config_userconfig",
  "NPM_CONFIG_REGISTRY",
  "NPM_CONFIG_USERCONFIG",
  "PIP_CONFIG_FILE",
  "PIP_INDEX_URL",
  "PIP_EXTRA_INDEX_URL",
  "PIP_FIND_LINKS",
  "PIP_NO_INDEX",
  "PIP_CERT",
  "PIP_CONSTRAINT",
  "PIP_TRUSTED_HOST",
  "PYENV_VERSION",
];

/**
 * The folder installs live in: `$XDG_DATA_HOME/toolgate/packages`, else `$HOME/.local/share/toolgate/packages`
 * (outside toolgate's state folder, which every sandbox hides: a server is shown its own install read-only).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { packagesRoot } from "./packages_root.ts";
 * assert.deepEqual(packagesRoot({ HOME: "/home/me" }), "/home/me/.local/share/toolgate/packages");
 * ```
 */
export function packagesRoot(env: Readonly<Record<string, string>>): string {
  const data = env.XDG_DATA_HOME;
  if (data !== undefined && isAbsolute(data)) return join(data, "toolgate", "packages");
  const home = env.HOME;
  if (home === undefined || !isAbsolute(home)) {
    throw new StateDirError(
      "neither XDG_DATA_HOME nor HOME is set to an absolute path: toolgate has no place for installs",
    );
  }
  return join(home, ".local", "share", "toolgate", "packages");
}
