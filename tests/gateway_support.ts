/**
 * What the gateway's tests share: the real third-party MCP servers, installed once by the test setup into the
 * git-ignored tests/.cache/gateway (npm for the Node servers, a venv with PyPI's `mcp` for the Python one), and a
 * project folder whose manifest names servers.
 *
 * @module
 */
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ProgressNotificationSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import type { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
import { probeSandbox } from "../src/sandbox/sandbox.ts";
import { denoDir, launcherArgs, REPO, runToolgate, tempDir } from "./support.ts";
import { type HttpServer, spawnHttp, TOKEN } from "./mcp/helpers.ts";
import { withLockFolder } from "./node22.ts";
import { isRequired, requires } from "./requires.ts";

/** CI sets it: a server that cannot be installed fails the test instead of skipping it. */
export const REQUIRED = isRequired("gateway");
/** Where the servers are installed. */
export const CACHE = join(REPO, "tests", ".cache", "gateway");
/** The npm packages' folder. */
export const MODULES = join(CACHE, "node_modules");
/** The Python servers' venv. */
export const VENV = join(CACHE, "venv");
/** The venv's interpreter. */
export const PYTHON = join(VENV, "bin", "python");
/** The Node the servers run with. */
export const NODE = "/usr/bin/node";
const PACKAGES = [
  "@modelcontextprotocol/server-filesystem",
  "@modelcontextprotocol/server-memory",
  "@modelcontextprotocol/server-everything",
  "@modelcontextprotocol/sdk@1.32.2",
  "@modelcontextprotocol/server@2.4.0",
];

/** The filesystem server's entry point. */
export const FS_SERVER = join(MODULES, "@modelcontextprotocol", "server-filesystem", "dist", "index.js");
/** The memory server's entry point. */
export const MEMORY_SERVER = join(MODULES, "@modelcontextprotocol", "server-memory", "dist", "index.js");
/** The everything server's entry point (`stdio` or `streamableHttp` as its argument). */
export const EVERYTHING_SERVER = join(
  MODULES,
  "@modelcontextprotocol",
  "server-everything",
  "dist",
  "index.js",
);
/**
 * Writes a project's own MCP server: `server.mjs` (its text made by `server` from the path of the file its
 * description is read from, `description.txt`), and a manifest whose one server, `own`, runs it under Node reading
 * the installed modules only. `.port` beside the description names a loopback port the server tries to reach.
 * Returns the description file's path.
 */
export async function writeOwnServer(
  dir: string,
  server: (description: string) => string,
  options: { description?: string; port?: string; readOnly?: string[] } = {},
): Promise<string> {
  const description = join(dir, "description.txt");
  await Deno.writeTextFile(description, options.description ?? "Says hello.");
  if (options.port !== undefined) await Deno.writeTextFile(`${description}.port`, options.port);
  const script = join(dir, "server.mjs");
  await Deno.writeTextFile(script, server(description));
  const own = {
    command: "node",
    args: [script],
    permissions: { read: [MODULES] },
    readOnly: options.readOnly,
  };
  await Deno.writeTextFile(join(dir, "tools.json"), JSON.stringify({ tools: [], mcpServers: { own } }));
  return description;
}

/** server-everything over stdio as an `mcpServers` entry: run by Node, reading its installed modules only. */
export const EVERYTHING_STDIO = {
  command: "node",
  args: [EVERYTHING_SERVER, "stdio"],
  permissions: { read: [MODULES], net: false },
} as const;

const exists = (path: string): boolean => {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
};

/** Installs the Node servers once; the reason it cannot, or `undefined`. */
export function installNode(): Promise<string | undefined> {
  if (!exists(NODE)) return Promise.resolve(`no Node at ${NODE}`);
  // The test files that share the cache start at once under `deno test --parallel`.
  return withLockFolder(`${CACHE}.lock`, installNodeLocked);
}

async function installNodeLocked(): Promise<string | undefined> {
  if (PACKAGES.every((name) => exists(join(MODULES, name.replace(/@[0-9.]+$/, ""), "package.json")))) {
    return undefined;
  }
  try {
    const out = await new Deno.Command("npm", {
      args: ["install", "--prefix", CACHE, "--no-audit", "--no-fund", ...PACKAGES],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) return `npm install failed: ${new TextDecoder().decode(out.stderr).slice(-300)}`;
  } catch (error) {
    return `npm cannot run: ${(error as Error).message}`;
  }
  return undefined;
}

/** Installs PyPI's `mcp` once into a venv; the reason it cannot, or `undefined`. */
export async function installPython(): Promise<string | undefined> {
  const run = async (program: string, args: string[]): Promise<string | undefined> => {
    try {
      const out = await new Deno.Command(program, { args, stdout: "piped", stderr: "piped" }).output();
      return out.success ? undefined : new TextDecoder().decode(out.stderr).trim().slice(-300);
    } catch (error) {
      return (error as Error).message;
    }
  };
  const importable = async () => await run(PYTHON, ["-c", "import mcp.server"]) === undefined;
  if (exists(PYTHON) && await importable()) return undefined;
  if (!exists(PYTHON)) {
    const failed = await run("python3", ["-m", "venv", VENV]);
    if (failed !== undefined) return `python3 -m venv failed: ${failed}`;
  }
  // A registry out of reach is not retried: pip moves on to the other indexes its configuration names.
  const failed = await run(PYTHON, ["-m", "pip", "install", "--quiet", "--retries", "0", "mcp"]);
  if (failed !== undefined) return `pip install mcp failed: ${failed}`;
  return await importable() ? undefined : "the mcp package installed but cannot be imported";
}

/** Why the gateway's tests cannot run here (no sandbox, no Node, no install), or `undefined`. */
export async function nodeServersMissing(name: string): Promise<string | undefined> {
  const support = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin");
  if (!support.ok) {
    return requires("bwrap", `no sandbox: ${support.reason}`, name) ? support.reason : undefined;
  }
  return skipOrFail(name, await installNode());
}

/**
 * Prints why a test file skips, or throws under TOOLGATE_REQUIRE_GATEWAY=1 ({@linkcode requires} decides);
 * returns `missing` where the tests are to be ignored.
 */
export function skipOrFail(name: string, missing: string | undefined): string | undefined {
  return requires("gateway", missing, name) ? missing : undefined;
}

/** A project folder whose manifest names `servers`, with its own state folder; `run` runs toolgate there. */
export async function project(servers: Record<string, unknown>, tools: unknown[] = []) {
  const dir = await tempDir();
  const state = await tempDir();
  await Deno.writeTextFile(join(dir.path, "tools.json"), JSON.stringify({ tools, mcpServers: servers }));
  const env: Record<string, string> = {
    XDG_STATE_HOME: state.path,
    XDG_CONFIG_HOME: join(state.path, "config"),
    HOME: state.path,
  };
  const run = (args: string[], stdin?: string, extra: Record<string, string> = {}) =>
    runToolgate(args, dir.path, { ...env, ...extra }, stdin);
  return {
    dir,
    state,
    env,
    run,
    async [Symbol.asyncDispose]() {
      await dir[Symbol.asyncDispose]();
      await state[Symbol.asyncDispose]();
    },
  };
}

/**
 * `toolgate serve --http 0` over a {@linkcode project}'s manifest, in its folder and with its state, serving with
 * ./mcp/helpers.ts's `TOKEN`, with `extra` flags; resolves once it listens.
 */
export function serveProject(
  p: { dir: { path: string }; env: Record<string, string> },
  extra: readonly string[] = [],
): Promise<HttpServer> {
  const manifest = join(p.dir.path, "tools.json");
  const args = launcherArgs(["serve", "--http", "0", "--tools", manifest, "--cwd", p.dir.path, ...extra]);
  return spawnHttp(Deno.execPath(), args, { ...p.env, DENO_DIR: denoDir(), TOOLGATE_MCP_TOKEN: TOKEN });
}

/** The envelope a `call` printed last. */
// deno-lint-ignore no-explicit-any
export const envelope = (stdout: string): any => JSON.parse(stdout.trim().split("\n").at(-1)!);

/** The audit lines under `state` (serve's default audit folder is in the state folder), every day's file. */
export async function auditLines(state: string): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && entry.name.endsWith(".log") && dir.endsWith("audit")) {
        lines.push(
          ...(await Deno.readTextFile(path)).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)),
        );
      }
    }
  };
  await walk(state);
  return lines;
}

/** A progress notification as the client got it. */
export interface Progress {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

/**
 * Calls `name` with a progress token of the test's own and gathers every progress notification that names it: read
 * off the wire (the SDK's `onprogress` forgets a token as the answer arrives, and may drop a notification sent just
 * before it).
 */
export async function callWithProgress(client: Client, name: string, args: Record<string, unknown>) {
  const token = `test-${crypto.randomUUID()}`;
  const progress: Progress[] = [];
  client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
    const { progressToken, progress: value, total, message } = notification.params;
    if (progressToken === token) progress.push({ progress: value, total, message });
  });
  const answer = await client.callTool(
    { name, arguments: args, _meta: { progressToken: token } },
    undefined,
    {
      timeout: 60_000,
    },
  );
  // What was sent before the answer is handled by now; a moment more for the last notification's own turn.
  await new Promise((done) => setTimeout(done, 100));
  return { answer, progress };
}
