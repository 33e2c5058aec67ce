/**
 * The sandbox side of the egress proxy (`net_bridge.ts SOCKET TOKEN PROGRAM ARGS...`), run inside a confined call whose
 * profile names hosts: the call has no network of its own, only its loopback. The bridge listens on
 * `127.0.0.1:3128` there, carries each connection to toolgate's filtering proxy through the Unix socket bound into
 * the sandbox, then starts the tool (stdin, stdout and stderr its own) with `HTTP_PROXY` and `HTTPS_PROXY`
 * pointing at it, and exits with the tool's status. It imports nothing: it is a self-contained program.
 *
 * @module
 */

/** Where the bridge listens inside the sandbox. */
export const BRIDGE_PORT = 3128;

/**
 * The bridge is a Deno program run with `deno run`, and Deno looks for a newer release of itself at start, through
 * the call's proxy variables: the launcher sets `DENO_NO_UPDATE_CHECK` to this value for the bridge alone (unless
 * the tool passes a value of its own), and the bridge takes it out of the environment before the tool starts. Else
 * every call that names hosts would have `dl.deno.land` refused on its audit line, and named as the likely fix.
 */
export const BRIDGE_QUIET = { name: "DENO_NO_UPDATE_CHECK", value: "toolgate-bridge" } as const;

/** Copies one stream into another until either ends. */
async function pipe(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  try {
    await from.readable.pipeTo(to.writable, { preventClose: false });
  } catch {
    // The other side went away.
  }
}

async function carry(client: Deno.Conn, socket: string, token: string): Promise<void> {
  let upstream: Deno.Conn;
  try {
    upstream = await Deno.connect({ transport: "unix", path: socket });
    // Which call this connection belongs to: the proxy applies that call's host list.
    await upstream.write(new TextEncoder().encode(`toolgate-call ${token}\r\n`));
  } catch {
    client.close();
    return;
  }
  await Promise.allSettled([pipe(client, upstream), pipe(upstream, client)]);
  for (const end of [client, upstream]) {
    try {
      end.close();
    } catch {
      // Closed by its pipe already.
    }
  }
}

/** Carries every connection to the proxy; a failed accept (out of file descriptors) loses one, not the bridge. */
async function accept(listener: Deno.Listener, socket: string, token: string): Promise<void> {
  for (;;) {
    let client: Deno.Conn;
    try {
      client = await listener.accept();
    } catch (error) {
      if (error instanceof Deno.errors.BadResource || error instanceof Deno.errors.Interrupted) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    void carry(client, socket, token);
  }
}

/**
 * Runs the bridge and the tool; resolves to the tool's exit code.
 *
 * @example Not run as a doc test: it ends the process.
 * ```ts ignore
 * import { runBridge } from "./net_bridge.ts";
 * Deno.exit(await runBridge(["/tmp/.toolgate-proxy.sock", token, "/usr/bin/curl", "https://example.com"]));
 * ```
 */
export async function runBridge(args: readonly string[]): Promise<number> {
  const [socket, token, program, ...rest] = args;
  if (socket === undefined || token === undefined || program === undefined) {
    console.error("toolgate: net bridge: usage: net_bridge SOCKET TOKEN PROGRAM [ARGS...]");
    return 2;
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: BRIDGE_PORT });
  void accept(listener, socket, token);
  // The tool inherits the call's environment as the launcher made it, less what was set for the bridge alone.
  try {
    if (Deno.env.get(BRIDGE_QUIET.name) === BRIDGE_QUIET.value) Deno.env.delete(BRIDGE_QUIET.name);
  } catch {
    // A compiled toolgate's bridge may not read its environment: it looks for no release either.
  }
  const status = await new Deno.Command(program, {
    args: rest,
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn().status;
  return status.code;
}

if (import.meta.main) Deno.exit(await runBridge(Deno.args));
