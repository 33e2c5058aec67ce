/**
 * The resident server: a main process that stays after a warm run, keeps toolgate's code loaded and warm, and
 * runs the very same command line again each time the installed command's client asks on the record's socket.
 * It runs one command at a time (another client is answered `miss`, and its front end starts the command as
 * before), only for a client whose environment has the same values of every variable the server's grants let it
 * read, under the server's own grants (the launcher's for that command line). A client that goes away while its
 * command runs ends the server as SIGTERM would, and a stop signal the client passes on (or the server's own) as
 * that signal would: the command stops its calls (their audit lines written) and answers, and the server leaves. It leaves when it
 * has been idle for a while, or when its socket is no longer its own. Not here: the wire
 * (src/launcher/resident_wire.ts), its start (src/launcher/resident_start.ts), the client (src/resident.ts).
 *
 * @module
 */
import type { Io } from "./cli.ts";
import { processIo } from "./process_io.ts";
import { neutralizeControls } from "../base/terminal.ts";
import { lstatOrUndefined } from "../base/lstat.ts";
import { writeAll } from "../base/write_all.ts";
import { FRAME, frame, FrameReader, keyDigest, RELAYED_SIGNALS } from "../launcher/resident_wire.ts";
import { StartsAhead } from "../process/starts_ahead.ts";

/** How long a resident server waits for its next command before it leaves. */
export const RESIDENT_IDLE_MS = 60_000;

/** What a resident server runs, where, and for how long it waits. */
export interface ResidentOptions {
  /** The record's socket. */
  readonly socket: string;
  /** The command line it runs for each client (its own, as recorded). */
  readonly argv: readonly string[];
  /** The MAC of the record it was started from: a client must show the same. */
  readonly mac: string;
  /** The variables its grants let it read: a client's values of these must be its own. */
  readonly envNames: readonly string[];
  /** Runs the command line (the main entry's `run`). */
  readonly run: (argv: readonly string[], io: Io) => Promise<number>;
  /** Idle time before it leaves (default {@linkcode RESIDENT_IDLE_MS}). */
  readonly idleMs?: number;
}

const decoder = new TextDecoder();

/** The inode at `path` now (`undefined`: nothing there): whether the socket is still this server's. */
function inode(path: string): number | null | undefined {
  return lstatOrUndefined(path)?.ino;
}

/**
 * Serves the socket until idle; resolves when the server has closed it (and removed it, if still its own).
 *
 * @example Not run as a doc test: it serves a resident run on a socket until it ends.
 * ```ts ignore
 * await serveResident({ socket, argv: ["call", "get_time"], envNames: ["PATH"], run });
 * ```
 */
export async function serveResident(options: ResidentOptions): Promise<void> {
  const own = await keyDigest(options.mac, options.envNames, (name) => {
    try {
      return Deno.env.get(name);
    } catch {
      return undefined;
    }
  });
  // Another server's socket: it serves (a client removes a socket nobody listens on before a start).
  if (inode(options.socket) !== undefined) return;
  const listener = Deno.listen({ transport: "unix", path: options.socket });
  Deno.chmodSync(options.socket, 0o600);
  const mine = inode(options.socket);
  // Listening: the next warm run may start another server once this one is gone.
  try {
    Deno.removeSync(`${options.socket}.lock`);
  } catch {
    // A start by hand, or a lock already cleared.
  }
  const idleMs = options.idleMs ?? RESIDENT_IDLE_MS;
  let busy = false;
  let inFlight: Promise<void> = Promise.resolve();
  // `call` runs the same tool the same way each time: its next process waits, started, between commands (a
  // server that dies another way leaves it an end of stdin, and it leaves).
  const ahead = options.argv[0] === "call" ? new StartsAhead() : undefined;
  let last = Date.now();
  // A stop signal (its own, or one a client passed on) ends the server: the command under way stops as it would
  // on that signal (its calls' lines written, its answer sent), and no other starts. Idle, it just leaves.
  let open = true;
  const leave = () => {
    if (open) listener.close();
    open = false;
  };
  const signals = Object.keys(RELAYED_SIGNALS) as (keyof typeof RELAYED_SIGNALS)[];
  for (const name of signals) Deno.addSignalListener(name, leave);
  const watch = setInterval(() => {
    if (inode(options.socket) !== mine || (!busy && Date.now() - last > idleMs)) leave();
  }, 1000);
  try {
    for await (const conn of listener) {
      if (busy) {
        await conn.write(frame(FRAME.miss, "")).catch(() => {});
        conn.close();
        continue;
      }
      busy = true;
      // Not awaited: the next client meanwhile is answered `miss` at once, not kept waiting.
      inFlight = serveOne(conn, own, options, ahead).catch(() => {}).finally(() => {
        busy = false;
        last = Date.now();
        // Once the command has answered: the start is no part of its time.
        ahead?.refill();
      });
    }
  } catch {
    // The listener closed under the loop: the server is leaving.
  } finally {
    clearInterval(watch);
    for (const name of signals) Deno.removeSignalListener(name, leave);
    if (inode(options.socket) === mine) Deno.removeSync(options.socket);
  }
  // A command under way when the socket went ends first.
  await inFlight;
  await ahead?.close();
}

/** One client: hello, its key, then its command, or `miss`. */
async function serveOne(
  conn: Deno.Conn,
  own: string,
  options: ResidentOptions,
  startsAhead: StartsAhead | undefined,
): Promise<void> {
  let writing = Promise.resolve();
  let gone = false;
  const send = (kind: number, payload: Uint8Array | string): Promise<void> =>
    writing = writing.then(async () => {
      if (gone) return;
      gone = !(await writeAll(conn, frame(kind, payload)).catch(() => false));
    });
  const reader = new FrameReader(conn);
  await send(FRAME.hello, JSON.stringify(options.envNames));
  const key = await reader.next();
  if (key === null || key.kind !== FRAME.key || decoder.decode(key.payload) !== own) {
    await send(FRAME.miss, "");
    conn.close();
    return;
  }
  // What the client sends from now on: its stdin when asked. Its end while the command runs ends the server.
  let answerStdin: ((text: string) => void) | undefined;
  let done = false;
  void (async () => {
    for (let next = await reader.next(); next !== null; next = await reader.next()) {
      if (next.kind === FRAME.stdin) answerStdin?.(decoder.decode(next.payload));
      // The client's signal, as if it were this process's own: the command stops and answers, and the server leaves.
      const name = next.kind === FRAME.signal ? decoder.decode(next.payload) : undefined;
      if (!done && name !== undefined && Object.hasOwn(RELAYED_SIGNALS, name)) {
        Deno.kill(Deno.pid, name as keyof typeof RELAYED_SIGNALS);
      }
    }
    if (!done) Deno.kill(Deno.pid, "SIGTERM");
  })();
  const base = processIo();
  const io: Io = {
    env: base.env,
    readEnv: base.readEnv,
    cwd: base.cwd,
    stdout: (text) => send(FRAME.out, text),
    stderr: (text) => send(FRAME.err, neutralizeControls(text)),
    stderrControl: (text) => send(FRAME.err, text),
    stdin: () => {
      const text = new Promise<string>((resolve) => answerStdin = resolve);
      void send(FRAME.stdinAsk, "");
      return text;
    },
    interactive: false,
    startsAhead,
  };
  // From here on the command runs: a client that loses the server now must not run it again.
  await send(FRAME.go, "");
  let code: number;
  try {
    code = await options.run(options.argv, io);
  } catch (error) {
    await io.stderr(`toolgate: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
    code = 1;
  }
  done = true;
  await send(FRAME.exit, String(code));
  conn.close();
}
