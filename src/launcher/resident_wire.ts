/**
 * The resident toolgate's wire: what the installed command's small client and a resident main process say to
 * each other over the record's Unix socket, as frames (a kind byte, a 32-bit length, the payload). The server
 * speaks first: `hello` names the variables its environment holds; the client answers `key`, the digest of the
 * record's MAC (which the front end checked) and of its own values of those; the server answers `go` and runs the command only when the two digests are the same,
 * else it answers `miss` (so that nothing ran). Then `out` and `err` carry the command's stdout and stderr, `stdin?` asks for the client's stdin (sent
 * as `stdin`), `signal` passes on a stop signal the client received (SIGINT, SIGTERM, SIGHUP: the command stops
 * as it would on that signal, and still answers), and `exit` ends it with the exit code. Not here: the server (src/commands/resident_server.ts), the
 * client (src/resident.ts), the start (src/launcher/resident_start.ts).
 *
 * @module
 */

import { sha256Hex } from "../base/sha256_hex.ts";

/** The kinds of frame. */
export const FRAME = {
  hello: 0x48,
  key: 0x4b,
  miss: 0x4d,
  go: 0x47,
  out: 0x4f,
  err: 0x45,
  stdinAsk: 0x49,
  stdin: 0x53,
  signal: 0x54,
  exit: 0x58,
} as const;

/** The signals a client passes on to the server (`FRAME.signal`), and the exit code each gives before `go`. */
export const RELAYED_SIGNALS = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;

/** The client's exit code when the server did not run the command: the front end then starts it as before. */
export const MISS_EXIT = 75;

/** The argument that makes the main entry a resident server. */
export const RESIDENT_MODE = "__resident";

/** The socket the front end names to a warm run: set, the run starts a resident server when it is done. */
export const RESIDENT_ENV = "TOOLGATE_RESIDENT";

/** The recorded command line of that warm run (one argument a line), the resident server's own. */
export const RESIDENT_ARGS_ENV = "TOOLGATE_RESIDENT_ARGS";

/** The MAC of that warm run's record: a client must show the same, besides its environment's digest. */
export const RESIDENT_MAC_ENV = "TOOLGATE_RESIDENT_MAC";

/**
 * Where the installed command's client reads the record's MAC: its fd 3, a here-document of the front end (a
 * pipe, read once), never its command line, which every local user can read in `/proc/PID/cmdline`.
 */
export const CLIENT_MAC_FD = "/dev/fd/3";

/** The most bytes one frame may carry (a larger one ends the connection). */
export const MAX_FRAME = 64 * 1024 * 1024;

const encoder = new TextEncoder();

/**
 * One frame's bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FRAME, frame } from "./resident_wire.ts";
 * assert.equal(frame(FRAME.exit, "0").length, 6);
 * ```
 */
export function frame(kind: number, payload: Uint8Array | string): Uint8Array {
  const bytes = typeof payload === "string" ? encoder.encode(payload) : payload;
  const out = new Uint8Array(5 + bytes.length);
  out[0] = kind;
  new DataView(out.buffer).setUint32(1, bytes.length);
  out.set(bytes, 5);
  return out;
}

/** One frame read. */
export interface Frame {
  readonly kind: number;
  readonly payload: Uint8Array;
}

/**
 * Reads frames from a connection, one at a time; `null` at its end (or at a frame over {@linkcode MAX_FRAME}).
 *
 * @example Not run as a doc test: it needs an open connection to a resident server.
 * ```ts ignore
 * const reader = new FrameReader(conn);
 * const hello = await reader.next();
 * ```
 */
export class FrameReader {
  #buffer = new Uint8Array(0);
  readonly #conn: Deno.Conn;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  async #fill(size: number): Promise<boolean> {
    while (this.#buffer.length < size) {
      const chunk = new Uint8Array(Math.max(65536, size - this.#buffer.length));
      let read: number | null;
      try {
        read = await this.#conn.read(chunk);
      } catch {
        return false;
      }
      if (read === null) return false;
      const joined = new Uint8Array(this.#buffer.length + read);
      joined.set(this.#buffer);
      joined.set(chunk.subarray(0, read), this.#buffer.length);
      this.#buffer = joined;
    }
    return true;
  }

  /** The next frame, or `null` when the connection ended. */
  async next(): Promise<Frame | null> {
    if (!(await this.#fill(5))) return null;
    const length = new DataView(this.#buffer.buffer, this.#buffer.byteOffset).getUint32(1);
    if (length > MAX_FRAME || !(await this.#fill(5 + length))) return null;
    const frame = { kind: this.#buffer[0], payload: this.#buffer.slice(5, 5 + length) };
    this.#buffer = this.#buffer.slice(5 + length);
    return frame;
  }
}

/**
 * The digest of a record's MAC and an environment's values of `names` (each set or not): what the client and the
 * server compare.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keyDigest } from "./resident_wire.ts";
 * assert.equal((await keyDigest("f00d", ["HOME"], () => "/home/me")).length, 64);
 * ```
 */
export async function keyDigest(
  mac: string,
  names: readonly string[],
  get: (name: string) => string | undefined,
): Promise<string> {
  const values = [mac, ...[...names].sort().map((name) => [name, get(name) ?? null])];
  return await sha256Hex(JSON.stringify(values));
}

/**
 * The variables a recorded command line may read: its `--allow-env` list, less the two the front end sets for
 * the warm run itself.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { grantedEnv } from "./resident_wire.ts";
 * assert.deepEqual(grantedEnv(["/usr/bin/deno", "run", "--allow-env=PATH,HOME", "main.js"]), ["PATH", "HOME"]);
 * ```
 */
export function grantedEnv(args: readonly string[]): string[] {
  const flag = args.find((arg) => arg.startsWith("--allow-env="));
  if (flag === undefined) return [];
  return flag.slice("--allow-env=".length).split(",").filter((name) =>
    name !== "" && name !== RESIDENT_ENV && name !== RESIDENT_ARGS_ENV && name !== RESIDENT_MAC_ENV
  );
}
