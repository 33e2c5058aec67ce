/**
 * Installs an npm package server: `npm install --ignore-scripts` of the exact spec into a staging folder, confined
 * (it writes that folder only and reaches the registry npm is configured for only), the versions and integrities
 * read from the lockfile npm wrote, then moved to its content-addressed folder and made read-only. The server then
 * runs the package's bin under Node.
 * Not here: PyPI packages (`pip_install.ts`), the record of installs (`package_store.ts`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { findProgram } from "../base/find_program.ts";
import { join, normalize } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import { FALLBACK_PATH } from "../sandbox/tool_launch.ts";
import { runStep } from "./install_step.ts";
import { type InstallContext, InstallError, type MadeInstall } from "./installer.ts";
import { npmSources } from "./registry_settings.ts";
import type { PackageEntry } from "./package_entry.ts";
import { removeTree, setWritable } from "./package_store.ts";
import { treeDigest } from "./tree_digest.ts";

/**
 * Moves a finished staging folder to its content-addressed place `root/<sha256 of lock>`, read-only; an identical
 * install already there is kept. Returns the folder and its tree's digest.
 */
function settle(
  root: string,
  staging: string,
  lockText: string,
): { dir: string; digest: string; stamp: string } {
  const dir = join(root, createHash("sha256").update(lockText).digest("hex"));
  const fresh = treeDigest(staging);
  let existing: string | undefined;
  try {
    existing = treeDigest(dir).digest;
  } catch {
    existing = undefined;
  }
  if (existing === fresh.digest) {
    removeTree(staging);
  } else {
    removeTree(dir);
    Deno.renameSync(staging, dir);
  }
  setWritable(dir, false);
  const made = treeDigest(dir);
  return { dir, digest: made.digest, stamp: made.stamp };
}

/** The bin a package runs for the entry: its only one, or the one named (by the entry, or like the package). */
function binOf(manifest: Record<string, unknown>, name: string, wanted?: string): string | undefined {
  const bin = manifest.bin;
  const unscoped = name.replace(/^@[^/]+\//, "");
  if (typeof bin === "string") return wanted === undefined || wanted === unscoped ? bin : undefined;
  if (!isRecord(bin)) return undefined;
  const entries = Object.entries(bin).filter((entry): entry is [string, string] =>
    typeof entry[1] === "string"
  );
  if (wanted !== undefined) return entries.find(([key]) => key === wanted)?.[1];
  if (entries.length === 1) return entries[0][1];
  return entries.find(([key]) => key === unscoped)?.[1];
}

/**
 * Installs `entry` (at `version`, the one pinned earlier, when the entry names none and no update was asked).
 * Throws {@linkcode InstallError}.
 *
 * @example
 * ```ts ignore
 * // Ignored: it installs from the registry.
 * const made = await installNpm(entry, undefined, { launcher, env, root, allowScripts: false });
 * made.version; // "2025.8.21"
 * ```
 */
export async function installNpm(entry: PackageEntry, version: string | undefined, context: InstallContext) {
  const { env, root } = context;
  const path = env.PATH ?? FALLBACK_PATH;
  const npm = findProgram("npm", path);
  if (npm === undefined) {
    throw new InstallError(`npm is not found on PATH (${path}): toolgate installs npm packages with it`);
  }
  const sources = npmSources(env);
  if (sources === undefined) throw new InstallError(`npm is not found on PATH (${path})`);
  Deno.mkdirSync(root, { recursive: true });
  const staging = Deno.makeTempDirSync({ dir: root, prefix: ".staging-" });
  try {
    Deno.writeTextFileSync(
      join(staging, "package.json"),
      '{ "name": "toolgate-install", "private": true }\n',
    );
    const spec = `${entry.name}@${version ?? entry.version ?? "latest"}`;
    const done = await runStep(context.launcher, {
      what: `npm install ${spec}`,
      program: npm,
      args: [
        "install",
        "--prefix",
        staging,
        "--no-audit",
        "--no-fund",
        "--save-exact",
        "--no-update-notifier",
        "--fetch-retries",
        "1",
        ...(context.allowScripts ? [] : ["--ignore-scripts"]),
        "--cache",
        join(staging, ".cache"),
        spec,
      ],
      write: [staging],
      read: sources.read,
      net: sources.net,
      env: {
        ...sources.env,
        HOME: join(staging, ".home"),
        npm_config_userconfig: join(staging, ".npmrc"),
        npm_config_loglevel: "error",
      },
    }, path);
    if (!done.ok) throw new InstallError(done.reason);
    // npm's cache and home are not part of the install.
    for (const name of [".cache", ".home", ".npmrc"]) removeTree(join(staging, name));
    const lockText = Deno.readTextFileSync(join(staging, "package-lock.json"));
    const lockFile = JSON.parse(lockText);
    const packages = isRecord(lockFile) && isRecord(lockFile.packages) ? lockFile.packages : {};
    const lock: Record<string, string> = {};
    for (const [key, value] of Object.entries(packages)) {
      if (!key.startsWith("node_modules/") || !isRecord(value) || value.link === true) continue;
      const name = key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length);
      lock[`${name}@${value.version}`] = typeof value.integrity === "string" ? value.integrity : "none";
    }
    const own = packages[`node_modules/${entry.name}`];
    if (!isRecord(own) || typeof own.version !== "string") {
      throw new InstallError(`npm installed no ${entry.name}`);
    }
    const sorted = Object.fromEntries(Object.entries(lock).sort(([a], [b]) => a.localeCompare(b)));
    const settled = settle(root, staging, JSON.stringify({ npm: sorted, scripts: context.allowScripts }));
    const packageDir = join(settled.dir, "node_modules", entry.name);
    const manifest = JSON.parse(Deno.readTextFileSync(join(packageDir, "package.json")));
    const bin = isRecord(manifest) ? binOf(manifest, entry.name, entry.bin) : undefined;
    if (bin === undefined) {
      throw new InstallError(
        `${entry.name}@${own.version} has no program ${
          entry.bin ?? "to run"
        } (its package.json "bin" names none)`,
      );
    }
    const program = normalize(join(packageDir, bin));
    if (!program.startsWith(`${packageDir}/`)) {
      throw new InstallError(`${entry.name}'s bin leaves its folder: ${bin}`);
    }
    return {
      version: own.version,
      lock: sorted,
      ...settled,
      runtime: "node",
      program,
      reads: [],
    } as MadeInstall;
  } finally {
    removeTree(staging);
  }
}
