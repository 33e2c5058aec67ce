/**
 * The built-in tool belt: which tools toolgate ships, where their files live, and how each one starts with the
 * very runtime that runs toolgate (no `deno` on PATH needed): from its source file, from the bundle in tool mode,
 * or, in a binary from `deno compile`, by the binary itself in tool mode.
 *
 * @module
 */
import { basename, dirname, fromFileUrl, join } from "../base/paths.ts";
import { BELT_COMMON_FLAGS, BELT_MANIFEST_DATA, BELT_TOOLS } from "./belt_data.ts";

/**
 * The built-in belt's manifest itself, built into toolgate (so that a bundle or a binary carries it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BELT_MANIFEST } from "./tool_belt.ts";
 * assert.ok(BELT_MANIFEST.tools.map((tool) => tool.name).includes("fs_read_file"));
 * ```
 */
export const BELT_MANIFEST: {
  readonly tools: readonly { readonly name: string; readonly readOnly?: boolean }[];
} = BELT_MANIFEST_DATA;

/**
 * Whether the built-in tool `name` is read-only by the belt's own manifest (toolgate's word, not a manifest's).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { beltReadOnly } from "./tool_belt.ts";
 * assert.ok(beltReadOnly("fs_read_file"));
 * assert.equal(beltReadOnly("exec"), false);
 * ```
 */
export function beltReadOnly(name: string): boolean {
  return BELT_MANIFEST.tools.some((tool) => tool.name === name && tool.readOnly === true);
}

/**
 * The argument of built-in tool `name` naming the URL it connects to first (`url` for `http_fetch`), for a tool
 * that fetches URLs; `undefined` for any other tool. The policy reads a call's destination from it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { beltUrlArgument } from "./tool_belt.ts";
 *
 * assert.equal(beltUrlArgument("http_fetch"), "url");
 * assert.equal(beltUrlArgument("exec"), undefined);
 * ```
 */
export function beltUrlArgument(name: string): string | undefined {
  return Object.hasOwn(BELT_TOOLS, name) ? BELT_TOOLS[name].connectsTo : undefined;
}

/** The argument that puts toolgate's entry in tool mode: `toolgate __tool NAME`. */
export const TOOL_MODE = "__tool";
/** The argument that runs the egress bridge: `toolgate __bridge SOCKET PROGRAM ARGS...`. */
export const BRIDGE_MODE = "__bridge";
/** Where the egress proxy's socket is bound inside a sandbox. */
export const BRIDGE_SOCKET = "/tmp/.toolgate-proxy.sock";

/** How this code runs: from its source files, bundled into one file, or inside a compiled binary. */
export type Packaging = "source" | "bundle" | "binary";

/** This module's own file: `src/manifest/tool_belt.ts` from source, the bundle file when bundled. */
const SELF = import.meta.url.startsWith("file:") ? fromFileUrl(import.meta.url) : import.meta.url;

/**
 * How toolgate is packaged here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { packaging } from "./tool_belt.ts";
 * assert.equal(packaging(), "source"); // when run as `deno run src/main.ts`
 * ```
 */
export function packaging(): Packaging {
  if (Deno.build.standalone) return "binary";
  return SELF.endsWith(join("src", "manifest", "tool_belt.ts")) ? "source" : "bundle";
}

/**
 * The folder that holds toolgate's `tools.json`, `tools/` and `permissions/` (the repository root from source;
 * beside the bundle or binary otherwise, where those folders do not exist: the belt is built in).
 */
export const TOOLGATE_ROOT: string = packaging() === "source"
  ? dirname(dirname(dirname(SELF)))
  // A folder that is never there, so that a `tools.json` beside the bundle is never taken for the belt's.
  : join(dirname(SELF), "(built-in)");

/** The main module's file, when it is one. */
function mainFile(): string | undefined {
  return Deno.mainModule.startsWith("file:") ? fromFileUrl(Deno.mainModule) : undefined;
}

/**
 * The bundle's entry, `main.js`, which also runs the built-in tools in tool mode: the main module itself in a
 * one-file bundle; beside it when the main module is the bundled launcher (`launch.js`, of the split bundle that
 * `deno task install` builds).
 */
export function bundleEntry(): string {
  const main = mainFile() ?? SELF;
  return basename(main) === "launch.js" ? join(dirname(main), "main.js") : main;
}

/**
 * toolgate's own code on disk: the repository from source, the binary itself, the bundle file, or the folder of a
 * split bundle (whose modules, this one included, are chunks beside its entries).
 */
export const TOOLGATE_CODE: string = packaging() === "source"
  ? TOOLGATE_ROOT
  : packaging() === "binary"
  ? Deno.execPath()
  : SELF === mainFile()
  ? SELF
  : dirname(SELF);

/** `tools/bin` of toolgate's own manifest: a program there with a belt tool's name is that built-in tool. */
export const BELT_BIN: string = join(TOOLGATE_ROOT, "tools", "bin");

/**
 * The name of the built-in tool that `program` is, or `undefined` for any other program: one in toolgate's own
 * `tools/bin`, or a `tools/bin/NAME` anywhere (a checkout's, run by an installed toolgate) whose text is exactly
 * the launcher toolgate generates for NAME. That launcher runs NAME's tool with `deno` from PATH, which the
 * sandbox may not show (a Deno under the home folder) or which may not be there at all; toolgate runs it as its
 * own built-in tool instead, with the runtime that runs toolgate.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BELT_BIN, beltToolOf } from "./tool_belt.ts";
 * assert.equal(beltToolOf(`${BELT_BIN}/fs_read_file`), "fs_read_file");
 * assert.equal(beltToolOf("/usr/bin/cat"), undefined);
 * ```
 */
export function beltToolOf(program: string): string | undefined {
  const name = basename(program);
  if (!Object.hasOwn(BELT_TOOLS, name)) return undefined;
  if (dirname(program) === BELT_BIN) return name;
  const bin = dirname(program);
  if (basename(bin) !== "bin" || basename(dirname(bin)) !== "tools") return undefined;
  const text = BELT_TOOLS[name].launcher;
  try {
    // A launcher is a few hundred bytes: a larger file is no launcher, and is not read.
    if (Deno.statSync(program).size !== new TextEncoder().encode(text).length) return undefined;
    return Deno.readTextFileSync(program) === text ? name : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The bundled entry of built-in tool `name` and its arguments: the tool's own entry (`belt/NAME.js`, which loads
 * that tool's code alone) in the split bundle that `deno task install` builds, else the bundle's entry in tool
 * mode. The main entry's static imports, all of toolgate's command line, made a tool's start a third longer.
 */
function beltEntry(name: string): string[] {
  const entry = bundleEntry();
  const own = join(dirname(entry), "belt", `${name}.js`);
  try {
    if (Deno.statSync(own).isFile) return [own];
  } catch {
    // A bundle without the tools' entries (built by an older toolgate, or as one file).
  }
  return [entry, TOOL_MODE, name];
}

/** How one built-in tool starts, and the files it must see inside the sandbox. */
export interface BeltLaunch {
  readonly program: string;
  readonly args: readonly string[];
  /** The runtime and the code it runs: bound read-only into the sandbox. */
  readonly files: readonly string[];
}

/**
 * The command that runs built-in tool `name` under its own Deno flags with this process's runtime.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { beltLaunch } from "./tool_belt.ts";
 * const launch = beltLaunch("get_time"); // from a checkout: deno run --quiet ... <root>/tools/src/get_time.ts
 * assert.equal(launch.program, Deno.execPath());
 * assert.equal(launch.args[0], "run");
 * assert.ok(launch.args.at(-1)?.endsWith("/tools/src/get_time.ts"));
 * ```
 */
export function beltLaunch(name: string): BeltLaunch {
  const runtime = Deno.execPath();
  const flags = [...BELT_COMMON_FLAGS, ...BELT_TOOLS[name].flags];
  switch (packaging()) {
    case "binary":
      // The binary's flags were baked in at compile time: its tool mode revokes what this tool does not need.
      return { program: runtime, args: [TOOL_MODE, name], files: [runtime] };
    case "bundle":
      return {
        program: runtime,
        args: ["run", ...flags, ...beltEntry(name)],
        files: [runtime, TOOLGATE_CODE],
      };
    case "source":
      return {
        program: runtime,
        args: ["run", ...flags, join(TOOLGATE_ROOT, "tools", "src", `${name}.ts`)],
        // The tools' code, and the contract they share with the core (src/contract.ts and src/contract/).
        files: [
          runtime,
          join(TOOLGATE_ROOT, "tools"),
          join(TOOLGATE_ROOT, "src", "contract.ts"),
          join(TOOLGATE_ROOT, "src", "contract"),
        ],
      };
  }
}

/**
 * Where the built-in belt's manifest lives (`tools.json` at toolgate's root): the manifest of a run that names
 * none and finds no `./tools.json`. Bundled or compiled, the file is not on disk: {@linkcode BELT_MANIFEST} is.
 */
export const BELT_MANIFEST_PATH: string = join(TOOLGATE_ROOT, "tools.json");

/**
 * The command that runs the egress bridge (`src/sandbox/net_bridge.ts`) inside a sandbox, in front of a tool whose profile
 * names hosts: the program and arguments to put before the tool's own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bridgeLaunch } from "./tool_belt.ts";
 * const bridge = bridgeLaunch(); // put before the tool's own: [bridge.program, ...bridge.args, "/usr/bin/curl", ...]
 * assert.equal(bridge.program, Deno.execPath());
 * assert.ok(bridge.args.some((arg) => arg.endsWith("net_bridge.ts")));
 * ```
 */
export function bridgeLaunch(): BeltLaunch {
  const runtime = Deno.execPath();
  const flags = [
    ...BELT_COMMON_FLAGS,
    `--allow-net=127.0.0.1:3128,unix:${BRIDGE_SOCKET}`,
    `--allow-read=${BRIDGE_SOCKET}`,
    `--allow-write=${BRIDGE_SOCKET}`,
    "--allow-run",
    "--allow-env=DENO_NO_UPDATE_CHECK",
  ];
  switch (packaging()) {
    case "binary":
      return { program: runtime, args: [BRIDGE_MODE, BRIDGE_SOCKET], files: [runtime] };
    case "bundle":
      return {
        program: runtime,
        args: ["run", ...flags, bundleEntry(), BRIDGE_MODE, BRIDGE_SOCKET],
        files: [runtime, TOOLGATE_CODE],
      };
    case "source": {
      const bridge = join(TOOLGATE_ROOT, "src", "sandbox", "net_bridge.ts");
      return { program: runtime, args: ["run", ...flags, bridge, BRIDGE_SOCKET], files: [runtime, bridge] };
    }
  }
}
