/**
 * Where this machine's npm and pip get packages from, asked of them as the user set them up (`npm config get`,
 * `pip config list`): the registry or indexes, the local folders of a file index, the certificates they trust. An
 * install step gets exactly these settings (and reaches exactly these hosts); the launcher grants toolgate the
 * same hosts for `trust` of a manifest with package servers.
 * Not here: running the installs (`npm_install.ts`, `pip_install.ts`).
 *
 * @module
 */
import { findProgram } from "../base/find_program.ts";
import { dirname, isAbsolute } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import { readJsonc } from "../manifest/jsonc.ts";
import { serverEntryOf } from "./package_entry.ts";

/** An installer's package sources: its settings as variables, the folders it reads, the hosts it reaches. */
export interface Sources {
  readonly env: Readonly<Record<string, string>>;
  readonly read: readonly string[];
  readonly net: readonly string[];
}

const FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin";

/**
 * Runs `program args` on the host (a question to a package manager about its settings): its stdout, trimmed, or
 * `undefined` when it fails.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostOutput } from "./registry_settings.ts";
 * assert.deepEqual(hostOutput("/nonexistent/npm", ["config", "get", "registry"], {}), undefined);
 * ```
 */
export function hostOutput(
  program: string,
  args: string[],
  env: Readonly<Record<string, string>>,
): string | undefined {
  try {
    const out = new Deno.Command(program, {
      args,
      env: { ...env },
      clearEnv: true,
      stdout: "piped",
      stderr: "null",
    })
      .outputSync();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `host:port` of a registry URL, as the egress proxy matches it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostOf } from "./registry_settings.ts";
 * assert.deepEqual(hostOf(new URL("https://registry.npmjs.org/")), "registry.npmjs.org:443");
 * ```
 */
export function hostOf(url: URL): string {
  return `${url.hostname}:${url.port || (url.protocol === "http:" ? "80" : "443")}`;
}

/** `npm config get A B C`'s answer (`a=1` lines): by key, unset ones left out. */
function npmSettings(text: string): Map<string, string> {
  const settings = new Map<string, string>();
  for (const line of text.split("\n")) {
    const at = line.indexOf("=");
    const value = line.slice(at + 1).trim();
    if (at > 0 && value !== "" && value !== "null" && value !== "undefined") {
      settings.set(line.slice(0, at).trim(), value);
    }
  }
  return settings;
}

/**
 * npm's registry and the certificates it trusts here (a company proxy's CA), as `npm_config_*` variables for an
 * npm that reads no user configuration; `undefined` when npm is not found.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { npmSources } from "./registry_settings.ts";
 * assert.deepEqual(npmSources({ PATH: "/nonexistent" }), undefined);
 * ```
 */
export function npmSources(env: Readonly<Record<string, string>>): Sources & { registry: URL } | undefined {
  const npm = findProgram("npm", env.PATH ?? FALLBACK_PATH);
  if (npm === undefined) return undefined;
  const settings = npmSettings(
    hostOutput(npm, ["config", "get", "registry", "cafile", "strict-ssl"], env) ?? "",
  );
  const text = settings.get("registry") ?? "https://registry.npmjs.org/";
  const registry = new URL(URL.canParse(text) ? text : "https://registry.npmjs.org/");
  const out: Record<string, string> = { npm_config_registry: registry.href };
  const read: string[] = [];
  const cafile = settings.get("cafile");
  if (cafile !== undefined && isAbsolute(cafile)) {
    out.npm_config_cafile = cafile;
    read.push(cafile);
  }
  const extra = env.NODE_EXTRA_CA_CERTS;
  if (extra !== undefined && isAbsolute(extra)) {
    out.NODE_EXTRA_CA_CERTS = extra;
    read.push(extra);
  }
  if (settings.get("strict-ssl") === "false") out.npm_config_strict_ssl = "false";
  return { env: out, read, net: [hostOf(registry)], registry };
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
 * import { pipSources } from "./registry_settings.ts";
 * const sources = pipSources("global.extra-index-url='file:///opt/simple'\n:env:.find-links='/opt/wheels'");
 * assert.deepEqual(sources.read, ["/opt/simple", "/opt/wheels"]);
 * assert.deepEqual(sources.net, ["pypi.org:443", "files.pythonhosted.org:443"]);
 * assert.deepEqual(pipSources(":env:.no-index='1'").net, []);
 * ```
 */
export function pipSources(configList: string): Sources {
  const values = new Map<string, string>();
  // Variables win over files, as pip reads them: their lines are taken last.
  const lines = configList.split("\n").map((line) => line.trim());
  const ordered = [
    ...lines.filter((l) => !l.startsWith(":env:")),
    ...lines.filter((l) => l.startsWith(":env:")),
  ];
  for (const line of ordered) {
    const match = /^([^=]+)\.([a-z-]+)='(.*)'$/.exec(line);
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
      for (const part of value.split(/\s+/)) if (part !== "") place(part);
    }
  }
  if (!values.has("index-url") && !values.has("no-index")) net.add("pypi.org:443");
  // PyPI serves its files from another host than its pages.
  if (net.has("pypi.org:443")) net.add("files.pythonhosted.org:443");
  return { env, read: [...read], net: [...net] };
}

/**
 * pip's sources as python3 on PATH reads them; `undefined` when python3 is not found.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pipSettings } from "./registry_settings.ts";
 * assert.deepEqual(pipSettings({ PATH: "/nonexistent" }), undefined);
 * ```
 */
export function pipSettings(env: Readonly<Record<string, string>>): Sources | undefined {
  const python = findProgram("python3", env.PATH ?? FALLBACK_PATH);
  if (python === undefined) return undefined;
  return pipSources(hostOutput(python, ["-m", "pip", "config", "list"], env) ?? "");
}

/** What toolgate itself needs to install a manifest's package servers: hosts, programs, folders to read. */
export interface InstallGrants {
  /** The registries' hosts (its egress proxy reaches them for the confined steps). */
  readonly hosts: readonly string[];
  /** The package managers it asks about their settings (npm, python3 on PATH). */
  readonly programs: readonly string[];
  /** What it reads: those programs, and the Python a venv is made from. */
  readonly reads: readonly string[];
}

/**
 * What `trust` of the manifest at `path` needs to install its package servers (nothing when it has none), as this
 * machine's npm and pip are set up: the launcher grants exactly this.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { installGrants } from "./registry_settings.ts";
 * assert.deepEqual(installGrants("/nonexistent/tools.json", {}), { hosts: [], programs: [], reads: [] });
 * ```
 */
export function installGrants(path: string, env: Readonly<Record<string, string>>): InstallGrants {
  const none = { hosts: [], programs: [], reads: [] };
  let parsed: unknown;
  try {
    parsed = readJsonc(Deno.readTextFileSync(path));
  } catch {
    return none;
  }
  const servers = isRecord(parsed) && isRecord(parsed.mcpServers) ? Object.values(parsed.mcpServers) : [];
  const ecosystems = new Set<string>();
  for (const server of servers) {
    if (!isRecord(server) || typeof server.command !== "string") continue;
    const args = Array.isArray(server.args) ? server.args.filter((arg) => typeof arg === "string") : [];
    const entry = serverEntryOf(server.command, args);
    if (entry.kind === "package") ecosystems.add(entry.ecosystem);
  }
  const hosts: string[] = [];
  const programs: string[] = [];
  const reads: string[] = [];
  const search = env.PATH ?? FALLBACK_PATH;
  if (ecosystems.has("npm")) {
    hosts.push(...npmSources(env)?.net ?? []);
    const npm = findProgram("npm", search);
    if (npm !== undefined) programs.push(npm);
  }
  if (ecosystems.has("pypi")) {
    hosts.push(...pipSettings(env)?.net ?? []);
    const python = pythonOf(env);
    if (python !== undefined) {
      programs.push(python.found);
      reads.push(python.executable, python.prefix);
    }
  }
  return { hosts, programs, reads: [...programs, ...reads] };
}

/**
 * python3 on PATH: as found, its real interpreter, and the prefix a venv made from it reads (its standard
 * library); `undefined` when there is none, or it does not run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pythonOf } from "./registry_settings.ts";
 * assert.deepEqual(pythonOf({ PATH: "/nonexistent" }), undefined);
 * ```
 */
export function pythonOf(
  env: Readonly<Record<string, string>>,
): { found: string; executable: string; prefix: string } | undefined {
  const found = findProgram("python3", env.PATH ?? FALLBACK_PATH);
  if (found === undefined) return undefined;
  const facts = hostOutput(found, [
    "-c",
    "import os, sys, json; print(json.dumps([os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix)]))",
  ], env);
  if (facts === undefined) return undefined;
  try {
    const [executable, prefix] = JSON.parse(facts) as [string, string];
    return { found, executable, prefix };
  } catch {
    return undefined;
  }
}
