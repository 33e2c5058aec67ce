/**
 * Helpers for the MCP server's tests: `toolgate serve` as a real process over the fixture manifest
 * (`tests/fixtures/mcp/tools.json`), driven by the SDK's own client over stdio or Streamable HTTP.
 *
 * @module
 */
import { join } from "node:path";
// The SDK's "./*" export points `x.js` at types in `x.js.d.ts`, which do not exist: name the types beside each import.
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { cliArgs, GRANTS, hostEnv, REPO } from "../support.ts";
import { scratch } from "../executor_helpers.ts";
import { exitWithin } from "../processes.ts";

/** The fixture manifest. */
export const MCP_MANIFEST: string = join(REPO, "tests", "fixtures", "mcp", "tools.json");
/** The fixture manifest of the session, cap and approval tests: long calls, timed naps, a tree, a note. */
export const SESSIONS_MANIFEST: string = join(REPO, "tests", "fixtures", "mcp", "sessions.json");
/** The fixture manifest of the structured results: tools that keep, break or lack their outputSchema. */
export const OUTPUT_MANIFEST: string = join(REPO, "tests", "fixtures", "mcp", "output.json");
/** The token the HTTP tests serve with. */
export const TOKEN = "test-token-0123456789";

/** `deno run` with the permissions the test task grants, then `toolgate serve` over a fixture manifest. */
export function serveArgs(extra: readonly string[], cwd: string, manifest: string = MCP_MANIFEST): string[] {
  return cliArgs([...GRANTS.broad, "--allow-net=127.0.0.1"], [
    "serve",
    "--tools",
    manifest,
    "--sandbox",
    "off",
    "--no-audit",
    "--kill-grace",
    "0.5",
    "--cwd",
    cwd,
    ...extra,
  ]);
}

/** A connected client and what it runs on; disposing it closes the client and the server. */
export interface Connected extends AsyncDisposable {
  readonly client: Client;
  /** The server's stderr so far (stdio only). */
  readonly stderr: () => string;
  /** What the client's transport could not read or route (a stray line on stdout shows here). */
  readonly protocolErrors: string[];
}

/** The test client's identity. */
const CLIENT_INFO = { name: "toolgate-tests", version: "1.0.0" };

/**
 * Starts `toolgate serve` (stdio) through the SDK's StdioClientTransport and connects a client to it.
 *
 * @example
 * ```ts ignore
 * await using served = await connectStdio([], dir.path);
 * const { tools } = await served.client.listTools();
 * ```
 */
export async function connectStdio(
  extra: readonly string[],
  cwd: string,
  manifest: string = MCP_MANIFEST,
): Promise<Connected> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: serveArgs(extra, cwd, manifest),
    cwd: REPO,
    env: { ...getDefaultEnvironment(), NO_COLOR: "1" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk));
  const client = new Client(CLIENT_INFO);
  const protocolErrors: string[] = [];
  client.onerror = (error) => void protocolErrors.push(error.message);
  await client.connect(transport);
  return {
    client,
    stderr: () => stderr,
    protocolErrors,
    [Symbol.asyncDispose]: () => client.close(),
  };
}

/** A `toolgate serve --http` process. */
export interface HttpServer extends AsyncDisposable {
  readonly child: Deno.ChildProcess;
  /** The URL the server printed on stderr. */
  readonly url: URL;
  /** Everything the server has printed on stderr so far. */
  readonly stderr: () => string;
  /** Whether the process is still alive. */
  readonly running: () => boolean;
  /** Sends SIGTERM and waits for the exit code. */
  stop(): Promise<number>;
}

/**
 * Starts `toolgate serve --http 0` and waits for the address it prints on stderr.
 *
 * @example
 * ```ts ignore
 * await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN });
 * await fetch(server.url, { method: "POST" }); // 401
 * ```
 */
export function startHttp(
  extra: readonly string[],
  cwd: string,
  env: Record<string, string> = {},
  manifest: string = MCP_MANIFEST,
): Promise<HttpServer> {
  return spawnHttp(Deno.execPath(), serveArgs(["--http", "0", ...extra], cwd, manifest), env);
}

/**
 * Starts a command line that runs `toolgate serve --http` (`program` may be a wrapper, e.g. a shell that lowers
 * a limit first) from the repository, with `env` over the base environment, and waits for the address it prints.
 */
export async function spawnHttp(
  program: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<HttpServer> {
  const child = new Deno.Command(program, {
    args: [...args],
    cwd: REPO,
    env: { ...baseEnv(), ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  let running = true;
  void child.status.then(() => running = false);
  const { promise: listening, resolve, reject } = Promise.withResolvers<URL>();
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      stderr += decoder.decode(chunk, { stream: true });
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(new URL(match[1]));
    }
    reject(new Error(`the server stopped before listening:\n${stderr}`));
  })();
  const timer = setTimeout(() => reject(new Error(`no address within 30 s:\n${stderr}`)), 30_000);
  let url: URL;
  try {
    url = await listening;
  } catch (error) {
    child.kill("SIGKILL");
    await child.status;
    await reading.catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
  let exit: Promise<number> | undefined;
  const stop = () =>
    exit ??= (async () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      // Bounded (`deno test` has none): a server that does not end is killed and the test fails.
      const { code } = await exitWithin(child, 60_000, "the server's end after SIGTERM");
      await reading.catch(() => {});
      return code;
    })();
  return {
    child,
    url,
    stderr: () => stderr,
    running: () => running,
    stop,
    [Symbol.asyncDispose]: async () => void await stop(),
  };
}

/** A client connected over HTTP, with its transport (closing the transport alone is a client going away). */
export interface HttpConnected extends Connected {
  readonly transport: StreamableHTTPClientTransport;
}

/**
 * Connects a client to an HTTP server with a bearer token; `capabilities` are what the client declares (e.g.
 * `{ elicitation: {} }`), `setup` registers its handlers before it connects, `fetch` stands in for its fetch.
 */
export async function connectHttp(
  url: URL,
  token: string,
  options: { capabilities?: ClientCapabilities; setup?: (client: Client) => void; fetch?: typeof fetch } = {},
): Promise<HttpConnected> {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  const client = new Client(CLIENT_INFO, { capabilities: options.capabilities ?? {} });
  options.setup?.(client);
  const protocolErrors: string[] = [];
  client.onerror = (error) => void protocolErrors.push(error.message);
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => "",
    protocolErrors,
    [Symbol.asyncDispose]: async () => {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/** PATH and HOME of this process (deno needs them; nothing else leaks into the server). */
export function baseEnv(): Record<string, string> {
  return hostEnv();
}

/**
 * The envelope behind a tool result: a failure's `structuredContent` (after checking that its text block is the
 * envelope's message), or a success's structured result as `{ok: true, result}`.
 */
export function envelopeOf(result: Record<string, unknown>): Record<string, unknown> {
  const content = (Array.isArray(result.content) ? result.content : []) as { type: string; text?: string }[];
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  if (!structured) throw new Error(`no structuredContent in ${JSON.stringify(result)}`);
  if (result.isError !== true) return { ok: true, result: structured };
  if (content[0]?.text !== structured.message) {
    throw new Error(`the text block is not the failure's message: ${JSON.stringify(result)}`);
  }
  return structured;
}

/**
 * Runs `toolgate serve EXTRA` in a scratch folder with stdin closed, to its end: for start-up mistakes, which end
 * it before it serves.
 *
 * @example
 * ```ts ignore
 * const { code, stderr } = await serveToEnd(["--http", "0"]); // 2, and why
 * ```
 */
export async function serveToEnd(
  extra: readonly string[],
): Promise<{ code: number; stderr: string; stdout: string }> {
  await using dir = await scratch();
  const output = await new Deno.Command(Deno.execPath(), {
    args: serveArgs(extra, dir.path),
    env: baseEnv(),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code: output.code, stdout: decoder.decode(output.stdout), stderr: decoder.decode(output.stderr) };
}
