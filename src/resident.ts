/**
 * The installed command's client of a resident toolgate (the bundle's `resident.js`): the front end starts it,
 * under grants to the record's socket alone, when a warm command finds that socket. It hands the server its
 * environment's digest, relays the command's stdout, stderr and stdin, and exits with the command's code. It
 * exits 75 only when the server said nothing ran (no server, a busy one, another environment, an end before its
 * `go`): the front end then starts the command as before. After `go`, a server that goes away is exit 1, never a
 * second run. A stop signal it receives goes on to the command (see `FRAME.signal`).
 *
 * @module
 */
import {
  CLIENT_MAC_FD,
  FRAME,
  frame,
  FrameReader,
  keyDigest,
  MISS_EXIT,
  RELAYED_SIGNALS,
} from "./launcher/resident_wire.ts";
import { writeAll } from "./base/write_all.ts";

const decoder = new TextDecoder();

/** Set once the server said `go`: from then on, whatever happens, the command must not run a second time. */
let started = false;

async function main(socket: string, mac: string): Promise<number> {
  let conn: Deno.Conn;
  try {
    conn = await Deno.connect({ transport: "unix", path: socket });
  } catch (error) {
    // Nobody listens: a server that died left it. Gone, it lets this run start the next server.
    if (error instanceof Deno.errors.ConnectionRefused) await Deno.remove(socket).catch(() => {});
    return MISS_EXIT;
  }
  // A stop signal to this client goes on to the command, which stops as it would on it and still answers (its
  // envelope, its audit line); before `go` nothing ran, and the client ends as the signal would end it.
  for (const name of Object.keys(RELAYED_SIGNALS) as (keyof typeof RELAYED_SIGNALS)[]) {
    Deno.addSignalListener(name, () => {
      if (!started) Deno.exit(RELAYED_SIGNALS[name]);
      conn.write(frame(FRAME.signal, name)).catch(() => 0);
    });
  }
  const reader = new FrameReader(conn);
  const hello = await reader.next();
  if (hello === null || hello.kind !== FRAME.hello) return MISS_EXIT;
  const names: string[] = JSON.parse(decoder.decode(hello.payload));
  try {
    await conn.write(frame(FRAME.key, await keyDigest(mac, names, (name) => Deno.env.get(name))));
  } catch {
    return MISS_EXIT;
  }
  for (let next = await reader.next(); next !== null; next = await reader.next()) {
    if (!started) {
      // Before `go`, nothing ran: anything but `go` is a miss.
      if (next.kind !== FRAME.go) return MISS_EXIT;
      started = true;
    } else if (next.kind === FRAME.out) await writeAll(Deno.stdout, next.payload);
    else if (next.kind === FRAME.err) await writeAll(Deno.stderr, next.payload);
    else if (next.kind === FRAME.stdinAsk) {
      const text = new Uint8Array(await new Response(Deno.stdin.readable).arrayBuffer());
      await conn.write(frame(FRAME.stdin, text)).catch(() => 0);
    } else if (next.kind === FRAME.exit) {
      const code = Number(decoder.decode(next.payload));
      // 75 is the front end's "nothing ran": a command's own code never says so.
      return Number.isInteger(code) && code !== MISS_EXIT ? code : 1;
    }
  }
  if (!started) return MISS_EXIT;
  await writeAll(
    Deno.stderr,
    new TextEncoder().encode("toolgate: the resident toolgate ended before the command did\n"),
  );
  return 1;
}

let code: number;
try {
  // The record's MAC comes on fd 3 (a pipe of the front end), never on the command line.
  code = await main(Deno.args[0], Deno.readTextFileSync(CLIENT_MAC_FD).trim());
} catch (error) {
  if (started) {
    await writeAll(Deno.stderr, new TextEncoder().encode(`toolgate: ${(error as Error).message}\n`));
  }
  code = started ? 1 : MISS_EXIT;
}
Deno.exit(code);
