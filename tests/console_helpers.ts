/**
 * `toolgate serve --http 0 --console 0` over the built-in belt, in a scratch workspace with its own state folder
 * (the audit log on), for the console's browser and security tests.
 */
import { join } from "node:path";
import { cliArgs, GRANTS, REPO, runProgram } from "./support.ts";
import { baseEnv, connectHttp, type HttpConnected, spawnHttp, TOKEN } from "./mcp/helpers.ts";

/** A served console, its MCP endpoint and what it runs in. */
export interface ConsoleServer extends AsyncDisposable {
  /** The one-time link printed on stderr. */
  readonly link: URL;
  readonly origin: string;
  readonly mcp: URL;
  readonly workspace: string;
  readonly state: string;
  readonly stderr: () => string;
  /** A client that cannot be asked (no elicitation): its calls that need approval wait for the console. */
  connect(): Promise<HttpConnected>;
}

/** Starts the server; `extra` goes after `serve` (e.g. `--sandbox off`), `env` over the base environment. */
export async function startConsoleServer(
  extra: readonly string[] = [],
  env: Record<string, string> = {},
  manifest = join(REPO, "tools.json"),
): Promise<ConsoleServer> {
  const workspace = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_console_" }));
  const state = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_console_state_" }));
  const server = await spawnHttp(
    Deno.execPath(),
    cliArgs([...GRANTS.broad, "--allow-net=127.0.0.1"], [
      "serve",
      "--tools",
      manifest,
      "--http",
      "0",
      "--console",
      "0",
      "--kill-grace",
      "0.5",
      "--cwd",
      workspace,
      ...extra,
    ]),
    { ...baseEnv(), TOOLGATE_MCP_TOKEN: TOKEN, XDG_STATE_HOME: state, ...env },
  );
  const match = /console at (http:\/\/\S+)/.exec(server.stderr());
  if (!match) {
    await server.stop();
    throw new Error(`no console link on stderr:\n${server.stderr()}`);
  }
  const link = new URL(match[1]);
  return {
    link,
    origin: link.origin,
    mcp: server.url,
    workspace,
    state,
    stderr: server.stderr,
    connect: () => connectHttp(server.url, TOKEN),
    async [Symbol.asyncDispose]() {
      await server.stop();
      await Deno.remove(workspace, { recursive: true }).catch(() => {});
      await Deno.remove(state, { recursive: true }).catch(() => {});
    },
  };
}

/** Exchanges the one-time link for the session cookie (`name=value`), as a browser would. */
export async function sessionCookie(link: URL): Promise<string> {
  const response = await fetch(link, { redirect: "manual" });
  await response.body?.cancel();
  const set = response.headers.get("set-cookie") ?? "";
  if (response.status !== 303 || set === "") throw new Error(`no session from the link: ${response.status}`);
  return set.split(";")[0];
}

/** Waits until `check` holds (a live view: the test waits for what it expects). */
export { until } from "./processes.ts";

/** The fixture of the console's own tests: `report`, a toolgate/1 tool that needs approval and writes stderr. */
export const CONSOLE_FIXTURE = join(REPO, "tests", "fixtures", "console");

/** A scratch workspace holding a copy of a fixture's tools.json and tools/, trusted, with its own state folder. */
export interface TrustedWorkspace extends AsyncDisposable {
  readonly workspace: string;
  readonly state: string;
  /** The environment its commands run with (the state folder). */
  readonly env: Record<string, string>;
}

/** Copies `fixture` into a new workspace and trusts its manifest there, as a person would (`toolgate trust`). */
export async function trustedWorkspace(fixture = CONSOLE_FIXTURE): Promise<TrustedWorkspace> {
  const workspace = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_console_ws_" }));
  const state = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_console_state_" }));
  const copied = await new Deno.Command("cp", { args: ["-R", `${fixture}/.`, workspace] }).output();
  if (!copied.success) throw new Error(`cannot copy ${fixture}`);
  const env = { ...baseEnv(), XDG_STATE_HOME: state };
  const trusted = await runProgram(Deno.execPath(), cliArgs(GRANTS.broad, ["trust"]), {
    cwd: workspace,
    env,
    clearEnv: true,
  });
  if (trusted.code !== 0) throw new Error(`toolgate trust failed:\n${trusted.stderr}`);
  return {
    workspace,
    state,
    env,
    async [Symbol.asyncDispose]() {
      await Deno.remove(workspace, { recursive: true }).catch(() => {});
      await Deno.remove(state, { recursive: true }).catch(() => {});
    },
  };
}

/** A toolgate command serving a console, started by {@linkcode spawnConsole}. */
export interface ConsoleProcess extends AsyncDisposable {
  readonly link: URL;
  readonly origin: string;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Its exit code, once it ended. */
  readonly exited: Promise<number>;
}

/**
 * Starts `toolgate ARGS` (which must give `--console 0`) in `cwd` and waits for the console's link on stderr;
 * stdin is a pipe left open (no terminal), so a call that needs approval waits for the console.
 */
export async function spawnConsole(
  args: readonly string[],
  options: { cwd: string; env: Record<string, string> },
): Promise<ConsoleProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: cliArgs(GRANTS.broadNet, args),
    cwd: options.cwd,
    env: options.env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stdout = "";
  let stderr = "";
  const decoder = new TextDecoder();
  const out = (async () => {
    const text = new TextDecoder();
    for await (const chunk of child.stdout) stdout += text.decode(chunk, { stream: true });
  })();
  const { promise: linked, resolve, reject } = Promise.withResolvers<URL>();
  const err = (async () => {
    for await (const chunk of child.stderr) {
      stderr += decoder.decode(chunk, { stream: true });
      const match = /console at (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(new URL(match[1]));
    }
    reject(new Error(`toolgate ended before its console started:\n${stderr}`));
  })();
  const timer = setTimeout(() => reject(new Error(`no console link within 30 s:\n${stderr}`)), 30_000);
  const exited = (async () => {
    const status = await child.status;
    await Promise.all([out, err]);
    return status.code;
  })();
  let link: URL;
  try {
    link = await linked;
  } catch (error) {
    child.kill("SIGKILL");
    await exited;
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return {
    link,
    origin: link.origin,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGTERM");
      } catch {
        // Ended already.
      }
      await child.stdin.close().catch(() => {});
      await exited;
    },
  };
}

/** The console's API as the page uses it: a session, its CSRF token, and the requests. */
export async function consoleApi(origin: string, link: URL) {
  const cookie = await sessionCookie(link);
  const html = await (await fetch(`${origin}/`, { headers: { cookie } })).text();
  const csrf = /name="csrf-token" content="([0-9a-f]+)"/.exec(html)![1];
  const get = async (path: string) => {
    const response = await fetch(`${origin}${path}`, { headers: { cookie } });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return await response.json();
  };
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${origin}${path}`, {
      method: "POST",
      headers: { cookie, origin, "x-csrf-token": csrf, "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    await response.body?.cancel();
    return response.status;
  };
  return { cookie, csrf, get, post };
}
