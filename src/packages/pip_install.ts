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
import { findProgram } from "../base/find_program.ts";
import { dirname, isAbsolute, join } from "../base/paths.ts";
import { FALLBACK_PATH } from "../sandbox/tool_launch.ts";
import { runStep } from "./install_step.ts";
import type { PackageEntry } from "./package_entry.ts";
import { removeTree, setWritable } from "./package_store.ts";
import { hostOf, hostOutput, type InstallContext, InstallError, type MadeInstall } from "./npm_install.ts";
import { treeDigest } from "./tree_digest.ts";

/** pip's settings that say where packages come from, as variables; the folders and hosts they name. */
export interface PipSources {
  readonly env: Readonly<Record<string, string>>;
  readonly read: readonly string[];
  readonly net: readonly string[];
}

const SOURCE_KEYS = [
  "index-url",
  "extra-index-url",
  "find-links",
  "constraint",
  "cert",
  "no-index",
  "trusted-host",
];

/**
 * pip's package sources from `pip config list` lines (`global.index-url='https://...'`): as `PIP_*` variables for
 * a pip that reads no configuration file, with the local folders to show it and the hosts it may reach.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pipSources } from "./pip_install.ts";
 * const sources = pipSources("global.extra-index-url='file:///opt/simple'\n:env:.find-links='/opt/wheels'");
 * assert.deepEqual(sources.read, ["/opt/simple", "/opt/wheels"]);
 * assert.deepEqual(sources.net, ["pypi.org:443", "files.pythonhosted.org:443"]);
 * ```
 */
export function pipSources(configList: string): PipSources {
  const values = new Map<string, string>();
  for (const line of configList.split("\n")) {
    const match = /^([^=]+)\.([a-z-]+)='(.*)'$/.exec(line.trim());
    if (match !== null && SOURCE_KEYS.includes(match[2])) values.set(match[2], match[3]);
  }
  const env: Record<string, string> = {};
  const read = new Set<string>();
  const net = new Set<string>();
  const place = (value: string) => {
    if (value.startsWith("file://")) read.add(decodeURIComponent(new URL(value).pathname).replace(/\/$/, ""));
    else if (/^https?:\/\//.test(value) && URL.canParse(value)) net.add(hostOf(new URL(value)));
    else if (isAbsolute(value)) read.add(value);
  };
  for (const [key, value] of values) {
    env[`PIP_${key.toUpperCase().replaceAll("-", "_")}`] = value;
    if (key === "constraint" || key === "cert") {
      if (isAbsolute(value)) read.add(key === "cert" ? dirname(value) : value);
    } else if (key !== "no-index" && key !== "trusted-host") {
      for (const part of value.split(/\s+/)) place(part);
    }
  }
  if (!values.has("index-url") && values.get("no-index") === undefined) {
    net.add("pypi.org:443");
  }
  // The index's files are served from another host than its pages.
  if (net.has("pypi.org:443")) net.add("files.pythonhosted.org:443");
  return { env, read: [...read], net: [...net] };
}

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
  const found = findProgram("python3", path);
  if (found === undefined) {
    throw new InstallError(
      `python3 is not found on PATH (${path}): toolgate installs PyPI packages into a venv with it`,
    );
  }
  const facts = await hostOutput(found, [
    "-c",
    "import sys, json; print(json.dumps([sys.executable, sys.base_prefix]))",
  ], env);
  if (facts === undefined) throw new InstallError(`${found} does not run`);
  const [executable, base] = JSON.parse(facts) as [string, string];
  const python = Deno.realPathSync(executable);
  const prefix = Deno.realPathSync(base);
  const sources = pipSources(await hostOutput(python, ["-m", "pip", "config", "list"], env) ?? "");
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
    if (!fetched.ok) throw new InstallError(fetched.message);
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
          { what: "python3 -m venv", program: python, args: ["-m", "venv", dir] },
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
          throw new InstallError(done.message);
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
