/**
 * A program on a real terminal through `script` (util-linux), which gives it a pty: what the test types reaches the
 * program as a person's keys, and what the terminal shows comes back. For the tests of what toolgate does on a
 * person's terminal (questions, the stop button, live lines). `tests/security/pty.ts` runs a program on a pty
 * through python3 instead, with exactly the environment it is given, for byte-exact output.
 *
 * @module
 */

/** Quotes one word for sh. */
const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/** The program on the terminal: what it showed so far, a way to type, and its end. */
export interface Terminal extends AsyncDisposable {
  /** Everything the terminal showed so far, as written (carriage returns and escape sequences included). */
  raw(): string;
  /** The same without carriage returns: the lines as a person reads them. */
  output(): string;
  /** Types `keys` on the terminal. */
  type(keys: string): Promise<void>;
  /** The program's end, once all it showed was read. */
  readonly status: Promise<Deno.CommandStatus>;
}

/** Options of {@linkcode openTerminal}. */
export interface TerminalOptions {
  readonly cwd: string;
  /** The whole environment (nothing else is inherited): see `hostEnv` in tests/support.ts. */
  readonly env: Record<string, string>;
  /** The program is killed after this long, so that a hung test ends (default 90 s). */
  readonly killAfterMs?: number;
  /** Called with all the terminal showed so far after each read: a string it returns is typed at once. */
  readonly respond?: (shown: string) => string | undefined;
}

/**
 * Starts `argv` on a terminal of its own. `exec`: the shell that `script` starts becomes the program, so that keys
 * such as Ctrl-C reach it with no shell in between.
 *
 * @example
 * ```ts ignore
 * await using terminal = openTerminal(cliArgv(["--prompt", "hi"]), { cwd: dir, env: hostEnv() });
 * await terminal.type("\x03");
 * const status = await terminal.status;
 * ```
 */
export function openTerminal(argv: readonly string[], options: TerminalOptions): Terminal {
  const child = new Deno.Command("script", {
    args: ["-q", "-e", "-c", `exec ${argv.map(quote).join(" ")}`, "/dev/null"],
    cwd: options.cwd,
    env: options.env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  const encoder = new TextEncoder();
  const type = (keys: string) => writer.write(encoder.encode(keys));
  let text = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) {
      text += decoder.decode(chunk, { stream: true });
      const keys = options.respond?.(text);
      if (keys !== undefined) await type(keys);
    }
  })();
  const timer = setTimeout(() => child.kill("SIGKILL"), options.killAfterMs ?? 90_000);
  return {
    raw: () => text,
    output: () => text.replaceAll("\r", ""),
    type,
    status: child.status.then(async (status) => {
      clearTimeout(timer);
      await reading;
      return status;
    }),
    async [Symbol.asyncDispose]() {
      clearTimeout(timer);
      try {
        child.kill("SIGKILL");
      } catch {
        // Ended already.
      }
      await writer.close().catch(() => {});
      await child.status;
      await reading.catch(() => {});
    },
  };
}
