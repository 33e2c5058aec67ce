/**
 * Starts a resident server after a warm run, when the front end asked for one (no terminal in sight: see
 * `src/build/install.ts`): the recorded command line again, in a session of its own (setsid(1), from the
 * recorded `--allow-run`), with no stdout or stderr, under the recorded grants plus the one to its socket, its
 * environment the values of the recorded `--allow-env` names. The record's MAC goes to it on its stdin (a pipe,
 * closed once written), never on its command line, which every local user can read in `/proc/PID/cmdline`. A lock
 * beside the socket keeps a second start out while one is on its way.
 *
 * Not here: the server (src/commands/resident_server.ts), the wire (src/launcher/resident_wire.ts).
 *
 * @module
 */
import { basename, isAbsolute } from "../base/paths.ts";
import { existsNoFollow } from "../base/lstat.ts";
import {
  grantedEnv,
  RESIDENT_ARGS_ENV,
  RESIDENT_ENV,
  RESIDENT_MAC_ENV,
  RESIDENT_MODE,
} from "./resident_wire.ts";

/** How long a start's lock keeps another start out (a server that died on its way leaves it behind). */
const LOCK_MS = 30_000;

/**
 * The server's command line (`__resident SOCKET NAMES ARGV...`: the MAC is not on it, it goes on stdin), or
 * `undefined` when the recorded one is not one the front end records or the MAC is not one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { residentCommand } from "./resident_start.ts";
 * const mac = "ab".repeat(32);
 * const recorded = ["/usr/bin/deno", "run", "--allow-run=/usr/bin/setsid", "--allow-env=HOME", "/b/main.js"];
 * const command = residentCommand("/s/a.sock", mac, recorded, ["call", "t"]);
 * assert.equal(command?.program, "/usr/bin/setsid");
 * assert.ok(!command?.args.includes(mac));
 * assert.equal(residentCommand("/s/a.sock", "not a mac", recorded, ["call", "t"]), undefined);
 * ```
 */
export function residentCommand(
  socket: string,
  mac: string,
  recorded: readonly string[],
  argv: readonly string[],
): { program: string; args: string[] } | undefined {
  const [runtime, run, ...rest] = recorded;
  const entry = rest.at(-1);
  const runs = recorded.find((arg) => arg.startsWith("--allow-run="))?.slice("--allow-run=".length).split(
    ",",
  );
  const setsid = runs?.find((path) => basename(path) === "setsid" && isAbsolute(path));
  if (
    run !== "run" || !isAbsolute(runtime) || entry === undefined || !isAbsolute(entry) ||
    setsid === undefined ||
    !isAbsolute(socket) || socket.includes(",") || !/^[0-9a-f]{64}$/.test(mac)
  ) return undefined;
  const grant = `unix:${socket}`;
  const flags = rest.slice(0, -1).map((arg) => arg.startsWith("--allow-net=") ? `${arg},${grant}` : arg);
  if (!flags.some((arg) => arg.startsWith("--allow-net="))) flags.push(`--allow-net=${grant}`);
  const names = grantedEnv(recorded).join(",");
  return {
    program: setsid,
    args: [runtime, "run", ...flags, entry, RESIDENT_MODE, socket, names, ...argv],
  };
}

/** Takes the start's lock; false when another start holds it. */
function lock(path: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      Deno.writeTextFileSync(path, String(Deno.pid), { createNew: true, mode: 0o600 });
      return true;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) return false;
      const mtime = Deno.lstatSync(path).mtime?.getTime() ?? 0;
      if (Date.now() - mtime < LOCK_MS) return false;
      Deno.removeSync(path);
    }
  }
  return false;
}

/**
 * Starts the resident server of this warm run's record, if its front end asked for one and none is on its way, and
 * hands it the record's MAC on its stdin. Whatever fails here only means no server: the run itself is done.
 *
 * @example Not run as a doc test: it starts a resident server in the background.
 * ```ts ignore
 * await startResident(Deno.args); // after the command, in the main entry
 * ```
 */
export async function startResident(argv: readonly string[]): Promise<void> {
  let socket: string | undefined;
  let mac: string | undefined;
  let recorded: string | undefined;
  try {
    socket = Deno.env.get(RESIDENT_ENV);
    mac = Deno.env.get(RESIDENT_MAC_ENV);
    recorded = Deno.env.get(RESIDENT_ARGS_ENV);
  } catch {
    return;
  }
  if (!socket || !mac || !recorded) return;
  const command = residentCommand(socket, mac, recorded.split("\n").filter((line) => line !== ""), argv);
  // A socket there: its server serves (a client removes one nobody listens on).
  if (command === undefined || existsNoFollow(socket) || !lock(`${socket}.lock`)) return;
  try {
    const env: Record<string, string> = {};
    for (const name of grantedEnv(command.args)) {
      const value = Deno.env.get(name);
      if (value !== undefined) env[name] = value;
    }
    const server = new Deno.Command(command.program, {
      args: command.args,
      env,
      clearEnv: true,
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn();
    server.unref();
    const writer = server.stdin.getWriter();
    await writer.write(new TextEncoder().encode(`${mac}\n`));
    await writer.close();
  } catch {
    Deno.removeSync(`${socket}.lock`);
  }
}
