/**
 * Installs a PyPI package server (an `uvx`, `uv tool run` or `pipx run` entry) without uv or pipx: `pip download`
 * of the exact requirement and its dependencies (wheels only, unless the entry allows scripts), confined to the
 * indexes pip is configured for; each file's sha256 is the lock; then a venv at the lock's content-addressed
 * folder and `pip install --no-index --require-hashes` of exactly those files, offline; read-only afterwards. The
 * server runs its console script with the venv's Python.
 * Not here: npm packages (`npm_install.ts`), the record of installs (`package_store.ts`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "../base/paths.ts";
import { FALLBACK_PATH } from "../sandbox/tool_launch.ts";
import { runStep } from "./install_step.ts";
import type { PackageEntry } from "./package_entry.ts";
import { removeTree, setWritable } from "./package_store.ts";
import { type InstallContext, InstallError, type MadeInstall } from "./installer.ts";
import { pipSettings, pipSources, pythonOf } from "./registry_settings.ts";
import { treeDigest } from "./tree_digest.ts";

/** A distribution file's name and version: `name-1.2(-build)-py3-none-any.whl` or `name-1.2.tar.gz`. */
function distribution(file: string): { name: string; version: string } | undefined {
  const wheel = /^([^-]+)-([^-]+)(-[^-]+)?-[^-]+-[^-]+-[^-]+\.whl$/.exec(file);
  if (wheel !== null) return { name: wheel[1], version: wheel[2] };
  const sdist = /^(.+)-([0-9][^-]*)\.(tar\.gz|zip)$/.exec(file);
  return sdist === null ? undefined : { name: sdist[1], version: sdist[2] };
}

/** PEP 503's normal form of a project name. */
const normal = (name: string): string => name.toLowerCase().replace(/[-_.]+/g, "-");

/**
 * Installs `entry` (at `version` when given: the one pinned earlier). `keep` is the digest an earlier install of
 * the same folder was pinned with: a folder still holding it is kept. Throws {@linkcode InstallError}.
 *
 * @example
 * ```ts ignore
 * // Ignored: it installs from the index.
 * const made = await installPip(entry, undefined, { launcher, env, root, allowScripts: false });
 * made.runtime; // ".../packages/<sha256>/bin/python"
 * ```
 */
export async function installPip(
  entry: PackageEntry,
  version: string | undefined,
  context: InstallContext,
  keep?: string,
): Promise<MadeInstall> {
  const { env, root } = context;
  const path = env.PATH ?? FALLBACK_PATH;
  const found = pythonOf(env);
  if (found === undefined) {
    throw new InstallError(
      `python3 is not found on PATH (${path}), or does not run: toolgate installs PyPI packages into a venv with it`,
    );
  }
  const python = found.executable;
  const prefix = found.prefix;
  const sources = pipSettings(env) ?? pipSources("");
  Deno.mkdirSync(root, { recursive: true });
  const staging = Deno.makeTempDirSync({ dir: root, prefix: ".staging-" });
  const pipEnv = {
    HOME: join(staging, ".home"),
    PIP_CONFIG_FILE: "/dev/null",
    PIP_NO_CACHE_DIR: "1",
    PIP_DISABLE_PIP_VERSION_CHECK: "1",
    PIP_NO_INPUT: "1",
    PYTHONDONTWRITEBYTECODE: "1",
    ...sources.env,
  };
  try {
    const downloads = join(staging, "dl");
    const requirement = `${entry.name}${
      (version ?? entry.version) === undefined ? "" : `==${version ?? entry.version}`
    }`;
    const fetched = await runStep(context.launcher, {
      what: `pip download ${requirement}`,
      program: python,
      args: [
        "-m",
        "pip",
        "download",
        "--dest",
        downloads,
        "--retries",
        "1",
        "--progress-bar",
        "off",
        ...(context.allowScripts ? [] : ["--only-binary", ":all:"]),
        requirement,
      ],
      write: [staging],
      read: [prefix, ...sources.read],
      net: [...sources.net],
      env: pipEnv,
    }, path);
    if (!fetched.ok) throw new InstallError(fetched.reason);
    const lock: Record<string, string> = {};
    const lines: string[] = [];
    let own: string | undefined;
    for (const file of [...Deno.readDirSync(downloads)].map((e) => e.name).sort()) {
      const dist = distribution(file);
      if (dist === undefined) throw new InstallError(`pip downloaded ${file}, which toolgate cannot name`);
      const hex = createHash("sha256").update(Deno.readFileSync(join(downloads, file))).digest("hex");
      lock[`${normal(dist.name)}@${dist.version}`] = `sha256:${hex}`;
      lines.push(`${dist.name}==${dist.version} --hash=sha256:${hex}`);
      if (normal(dist.name) === normal(entry.name)) own = dist.version;
    }
    if (own === undefined) throw new InstallError(`pip downloaded no ${entry.name}`);
    Deno.writeTextFileSync(join(staging, "requirements.txt"), lines.join("\n") + "\n");
    const dir = join(
      root,
      createHash("sha256").update(
        JSON.stringify({ pypi: lock, scripts: context.allowScripts, python: prefix }),
      )
        .digest("hex"),
    );
    let kept = false;
    if (keep !== undefined) {
      try {
        kept = treeDigest(dir).digest === keep;
      } catch {
        kept = false;
      }
    }
    if (!kept) {
      removeTree(dir);
      // Made here, so that the confined steps can write it (a folder to write must exist to be shown).
      Deno.mkdirSync(dir);
      const { PIP_CONSTRAINT: _constraint, ...offline } = pipEnv as Record<string, string>;
      for (
        const step of [
          { what: "python3 -m venv", program: python, args: ["-m", "venv", "--copies", dir] },
          {
            what: `pip install ${requirement}`,
            program: join(dir, "bin", "python"),
            args: [
              "-m",
              "pip",
              "install",
              "--no-index",
              "--no-deps",
              "--no-compile",
              "--require-hashes",
              "--find-links",
              downloads,
              "-r",
              join(staging, "requirements.txt"),
            ],
          },
        ]
      ) {
        const done = await runStep(context.launcher, {
          ...step,
          write: [dir],
          read: [prefix, staging],
          net: [],
          env: { ...offline, PIP_FIND_LINKS: downloads },
        }, path);
        if (!done.ok) {
          removeTree(dir);
          throw new InstallError(done.reason);
        }
      }
      setWritable(dir, false);
    }
    const made = treeDigest(dir);
    const bin = entry.bin ?? entry.name;
    const program = join(dir, "bin", bin);
    try {
      Deno.statSync(program);
    } catch {
      throw new InstallError(`${entry.name}==${own} has no console script ${bin}`);
    }
    return {
      version: own,
      lock,
      dir,
      digest: made.digest,
      stamp: made.stamp,
      runtime: join(dir, "bin", "python"),
      program,
      reads: [prefix],
    };
  } finally {
    removeTree(staging);
  }
}
