/**
 * What a stdio server's `command` and `args` ask to run, read the way its launcher reads them: a package of a
 * registry run by its package runner (`npx`, `uvx`, `uv tool run`, `pipx run`, `deno run npm:`), which toolgate
 * installs at trust and runs from the install; a program run as written (`node FILE`, `python -m MODULE`, any
 * other); or a launcher toolgate does not support (`docker`, `deno run jsr:`), said plainly.
 * Not here: installing the package (`package_install.ts`), running it from the install (`installed_server.ts`).
 *
 * @module
 */
import { basename } from "../base/paths.ts";

/** A registry package a server entry runs: what to install and what to run of it. */
export interface PackageEntry {
  readonly kind: "package";
  /** Which registry and installer: npm (`npm install`) or PyPI (a venv and `pip install`). */
  readonly ecosystem: "npm" | "pypi";
  /** The package's name as the registry spells it (`@scope/name`, `mcp-server-time`). */
  readonly name: string;
  /** The version (or range) written in the entry, `undefined` for the newest one. */
  readonly version?: string;
  /** The program of the package to run: an npm bin's or a console script's name; `undefined` for the default. */
  readonly bin?: string;
  /** The arguments the server gets, after the package. */
  readonly args: readonly string[];
  /** How the entry names it, for messages (`npx @scope/name@1.2`). */
  readonly written: string;
}

/** A server run as written: nothing to install (`node FILE`, a program on PATH); `note` says what to know. */
export interface PlainEntry {
  readonly kind: "plain";
  readonly note?: string;
}

/** A server entry toolgate cannot run: the one line that says why and what to do instead. */
export interface UnsupportedEntry {
  readonly kind: "unsupported";
  readonly message: string;
}

/** What a server entry runs. */
export type ServerEntry = PackageEntry | PlainEntry | UnsupportedEntry;

const NPX_FLAGS_WITH_VALUE = new Set(["-p", "--package", "-c", "--call"]);
const NPX_SWITCHES = new Set(["-y", "--yes", "-q", "--quiet", "--no-install", "--no"]);
const UVX_FLAGS_WITH_VALUE = new Set(["--python", "-p", "--index-url", "--index", "--default-index"]);
const UVX_SWITCHES = new Set(["-q", "--quiet", "--isolated", "--offline", "--no-cache", "-n"]);

/** `@scope/name@1.2.3` or `name@^1` -> name and version (an npm spec). */
function npmSpec(spec: string): { name: string; version?: string } {
  const at = spec.indexOf("@", spec.startsWith("@") ? 1 : 0);
  return at < 0 ? { name: spec } : { name: spec.slice(0, at), version: spec.slice(at + 1) || undefined };
}

/** `name==1.2`, `name@1.2`, `name>=1` or `name[extra]` -> name and version (a Python requirement). */
function pypiSpec(spec: string): { name: string; version?: string } | undefined {
  const match = /^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:(?:==|@)\s*([A-Za-z0-9.*+!-]+))?$/.exec(
    spec,
  );
  return match === null ? undefined : { name: match[1], version: match[2] };
}

const NPM_NAME = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;

function unsupported(message: string): UnsupportedEntry {
  return { kind: "unsupported", message };
}

/** `npx [-y] [-p PKG]... CMD|PKG[@VERSION] ARGS` */
function npx(args: readonly string[]): ServerEntry {
  const packages: string[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      i++;
      break;
    }
    if (NPX_SWITCHES.has(arg)) continue;
    if (arg.startsWith("--package=")) packages.push(arg.slice("--package=".length));
    else if (NPX_FLAGS_WITH_VALUE.has(arg)) {
      if (arg === "-c" || arg === "--call") {
        return unsupported("npx -c runs a shell command: name the package");
      }
      packages.push(args[++i] ?? "");
    } else if (arg.startsWith("-")) return unsupported(`toolgate does not read npx's option ${arg}`);
    else break;
  }
  const first = args[i];
  if (first === undefined) return unsupported("npx names no package");
  if (packages.length > 1) {
    return unsupported("npx with more than one --package: toolgate installs one package");
  }
  const spec = npmSpec(packages[0] ?? first);
  if (!NPM_NAME.test(spec.name)) {
    return unsupported(`npx names ${JSON.stringify(spec.name)}, not an npm package`);
  }
  return {
    kind: "package",
    ecosystem: "npm",
    name: spec.name,
    version: spec.version,
    bin: packages.length === 1 ? first : undefined,
    args: args.slice(i + 1),
    written: `npx ${packages.length === 1 ? `-p ${packages[0]} ${first}` : first}`,
  };
}

/** `uvx [--from SPEC] PKG[@VERSION|==VERSION] ARGS` (also `uv tool run`). */
function uvx(args: readonly string[], runner: string): ServerEntry {
  let from: string | undefined;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--from") from = args[++i];
    else if (arg.startsWith("--from=")) from = arg.slice("--from=".length);
    else if (UVX_FLAGS_WITH_VALUE.has(arg)) i++;
    else if (UVX_SWITCHES.has(arg)) continue;
    else if (arg.startsWith("-")) return unsupported(`toolgate does not read ${runner}'s option ${arg}`);
    else break;
  }
  const command = args[i];
  if (command === undefined) return unsupported(`${runner} names no package`);
  const spec = pypiSpec(from ?? command);
  if (spec === undefined) {
    return unsupported(
      `${runner} names ${JSON.stringify(from ?? command)}, not a PyPI requirement toolgate reads`,
    );
  }
  const bin = from === undefined ? spec.name : command;
  return {
    kind: "package",
    ecosystem: "pypi",
    name: spec.name,
    version: spec.version,
    bin: from === undefined ? undefined : bin,
    args: args.slice(i + 1),
    written: `${runner} ${from === undefined ? command : `--from ${from} ${command}`}`,
  };
}

/** `pipx run [--spec SPEC] PKG ARGS` */
function pipxRun(args: readonly string[]): ServerEntry {
  let spec: string | undefined;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--spec") spec = args[++i];
    else if (arg.startsWith("--spec=")) spec = arg.slice("--spec=".length);
    else if (arg === "--no-cache" || arg === "-q" || arg === "--quiet") continue;
    else if (arg.startsWith("-")) return unsupported(`toolgate does not read pipx run's option ${arg}`);
    else break;
  }
  const command = args[i];
  if (command === undefined) return unsupported("pipx run names no package");
  const parsed = pypiSpec(spec ?? command);
  if (parsed === undefined) return unsupported(`pipx run names ${JSON.stringify(spec ?? command)}`);
  return {
    kind: "package",
    ecosystem: "pypi",
    name: parsed.name,
    version: parsed.version,
    bin: spec === undefined ? undefined : command,
    args: args.slice(i + 1),
    written: `pipx run ${spec === undefined ? command : `--spec ${spec} ${command}`}`,
  };
}

/** `deno run [FLAGS] npm:PKG[@VERSION][/BIN] ARGS` */
function denoRun(args: readonly string[]): ServerEntry {
  const at = args.findIndex((arg) => !arg.startsWith("-"));
  const target = args[at];
  if (target === undefined) return { kind: "plain" };
  if (target.startsWith("jsr:")) {
    return unsupported(
      "deno run jsr: is not installed by toolgate: install the module yourself and name its file (deno run FILE)",
    );
  }
  if (!target.startsWith("npm:")) return { kind: "plain" };
  const rest = target.slice(4);
  const slash = rest.indexOf("/", rest.startsWith("@") ? rest.indexOf("/") + 1 : 0);
  const spec = npmSpec(slash < 0 ? rest : rest.slice(0, slash));
  if (!NPM_NAME.test(spec.name)) {
    return unsupported(`deno run names ${JSON.stringify(target)}, not an npm package`);
  }
  return {
    kind: "package",
    ecosystem: "npm",
    name: spec.name,
    version: spec.version,
    bin: slash < 0 ? undefined : rest.slice(slash + 1),
    args: args.slice(at + 1),
    written: `deno run ${target}`,
  };
}

/**
 * What a stdio server's `command` and `args` run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serverEntryOf } from "./package_entry.ts";
 * const entry = serverEntryOf("npx", ["-y", "@modelcontextprotocol/server-filesystem@2025.8.21", "/srv"]);
 * assert.deepEqual(entry.kind === "package" && [entry.ecosystem, entry.name, entry.version, entry.args], [
 *   "npm", "@modelcontextprotocol/server-filesystem", "2025.8.21", ["/srv"],
 * ]);
 * assert.deepEqual(serverEntryOf("uvx", ["mcp-server-time==0.6.2"]).kind, "package");
 * assert.deepEqual(serverEntryOf("node", ["dist/index.js"]).kind, "plain");
 * assert.deepEqual(serverEntryOf("docker", ["run", "-i", "mcp/time"]).kind, "unsupported");
 * ```
 */
export function serverEntryOf(command: string, args: readonly string[]): ServerEntry {
  const program = basename(command);
  switch (program) {
    case "npx":
      return npx(args);
    case "uvx":
      return uvx(args, "uvx");
    case "uv":
      return args[0] === "tool" && args[1] === "run"
        ? uvx(args.slice(2), "uv tool run")
        : unsupported("uv entries other than `uv tool run` are not installed by toolgate: use `uvx PKG`");
    case "pipx":
      return args[0] === "run"
        ? pipxRun(args.slice(1))
        : unsupported("pipx entries other than `pipx run PKG` are not installed by toolgate");
    case "deno":
      return args[0] === "run" ? denoRun(args.slice(1)) : { kind: "plain" };
    case "docker":
    case "podman":
      return unsupported(
        `${program} entries are not supported: toolgate confines processes, not containers; run the server's ` +
          "package instead (an npx or uvx entry, which toolgate installs and confines), or reach a server you run " +
          'yourself by its "url"',
      );
  }
  if (/^python[0-9.]*$/.test(program) && args[0] === "-m" && args[1] !== undefined) {
    return {
      kind: "plain",
      note:
        `runs the module ${args[1]} of ${command} as installed on this machine: toolgate cannot tell which ` +
        "package provides it, so it installs nothing; its folder must be in the server's permissions.read, or " +
        `write the entry as \`uvx PACKAGE\` to have toolgate install and pin it`,
    };
  }
  return { kind: "plain" };
}
