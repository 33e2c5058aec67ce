/**
 * A `toolgate serve` on stdio spoken to in raw JSON lines, for the tests of what the SDK's clients do not send (a
 * 2026-07-28 client's `subscriptions/listen`): send a message, wait for one that matches, see all that came.
 *
 * Not here: the SDK's stdio client (./helpers.ts), the HTTP requests (./stateless_support.ts).
 *
 * @module
 */

/** One message of the server's stdout. */
export type Message = Record<string, unknown>;

/** A running server on stdio; disposing it closes its stdin and waits for it to exit. */
export interface StdioPeer extends AsyncDisposable {
  /** Every message read so far, in order. */
  readonly seen: Message[];
  /** Reads messages until one matches (all are kept in `seen`); fails past 30 s or once stdout ends. */
  until(match: (message: Message) => boolean): Promise<Message>;
  /** Writes `message` as one line. */
  send(message: unknown): Promise<void>;
}

/**
 * Starts `deno` with `args` (a launcher's `serve`) in `cwd` with exactly `env`, its stdin and stdout piped.
 *
 * @example
 * ```ts ignore
 * await using peer = stdioPeer(launcherArgs(["serve"]), dir, Deno.env.toObject());
 * await peer.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: META } });
 * const answer = await peer.until((m) => m.id === 1);
 * ```
 */
export function stdioPeer(args: readonly string[], cwd: string, env: Record<string, string>): StdioPeer {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...args],
    cwd,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const seen: Message[] = [];
  let buffered = "";
  const until = async (match: (message: Message) => boolean) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const found = seen.find(match);
      if (found !== undefined) return found;
      const end = buffered.indexOf("\n");
      if (end >= 0) {
        seen.push(JSON.parse(buffered.slice(0, end)));
        buffered = buffered.slice(end + 1);
        continue;
      }
      // A read that waits past the deadline fails the test rather than holding it.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) =>
        timer = setTimeout(
          () => reject(new Error(`not seen; seen: ${JSON.stringify(seen)}`)),
          Math.max(0, deadline - Date.now()),
        )
      );
      const { value, done } = await Promise.race([reader.read(), late]).finally(() => clearTimeout(timer));
      if (done) throw new Error(`stdout ended; seen: ${JSON.stringify(seen)}`);
      buffered += value;
    }
  };
  return {
    seen,
    until,
    send: (message) => writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n")),
    async [Symbol.asyncDispose]() {
      await writer.close();
      await reader.cancel();
      await child.status;
    },
  };
}
