/** The real process behind the CLI's {@linkcode Io}: Deno's stdout, stderr, stdin, environment and cwd. @module */
import type { Io } from "./cli.ts";

const encoder = new TextEncoder();

async function writeAll(stream: typeof Deno.stdout | typeof Deno.stderr, text: string): Promise<void> {
  const bytes = encoder.encode(text);
  try {
    let written = 0;
    while (written < bytes.length) written += await stream.write(bytes.subarray(written));
  } catch (error) {
    // A reader that went away (`| head`) is not our failure.
    if (!(error instanceof Deno.errors.BrokenPipe)) throw error;
  }
}

/** The current process as an {@linkcode Io}. */
export function processIo(): Io {
  return {
    env: Deno.env.toObject(),
    cwd: Deno.cwd(),
    stdout: (text) => writeAll(Deno.stdout, text),
    stderr: (text) => writeAll(Deno.stderr, text),
    stdin: () => new Response(Deno.stdin.readable).text(),
    interactive: Deno.stdin.isTerminal() && Deno.stderr.isTerminal(),
  };
}
