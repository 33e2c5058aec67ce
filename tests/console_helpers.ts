/**
 * `toolgate serve --http 0 --console 0` over the built-in belt, in a scratch workspace with its own state folder
 * (the audit log on), for the console's browser and security tests.
 */
import { join } from "node:path";
import { cliArgs, GRANTS, REPO } from "./support.ts";
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

/** Waits until `check` holds (a live view: the test waits for what it expects, within `ms`). */
export async function until(
  check: () => Promise<boolean> | boolean,
  what: string,
  ms = 20_000,
): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
