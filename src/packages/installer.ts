/**
 * What an installer (`npm_install.ts`, `pip_install.ts`) takes and gives: the launcher that confines its steps
 * and where installs go, the install it made (its versions, lock, folder, digests and what the server runs), or
 * the one line that says why it could not.
 * Not here: the record of installs (`package_store.ts`), the steps (`install_step.ts`).
 *
 * @module
 */
import type { ToolLauncher } from "../sandbox/tool_launch.ts";
import type { InstalledPackage } from "./package_store.ts";

/** What an install made: where, which versions, and what the server runs (the record, less what the store adds). */
export type MadeInstall = Omit<InstalledPackage, "request" | "ecosystem" | "name" | "installedAt">;

/** What an installer needs: the launcher that confines its steps, toolgate's environment, the installs' folder. */
export interface InstallContext {
  readonly launcher: ToolLauncher;
  readonly env: Readonly<Record<string, string>>;
  /** The installs' folder (`package_store.ts`'s `packagesRoot`). */
  readonly root: string;
  /** Whether the package's install scripts may run (the entry's `allowScripts`). */
  readonly allowScripts: boolean;
}

/**
 * An install that cannot be made: its one line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InstallError } from "./installer.ts";
 * assert.equal(new InstallError("npm is not found on PATH").name, "InstallError");
 * ```
 */
export class InstallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InstallError";
  }
}
