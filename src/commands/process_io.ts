/** The real process behind the CLI's {@linkcode Io}: Deno's stdout, stderr, stdin, environment and cwd. @module */
import type { Io } from "./cli.ts";
import { OWN_ENV } from "../launcher/own_grants.ts";
import { neutralizeControls } from "../base/terminal.ts";
import { writeAll } from "../base/write_all.ts";

const encoder = new TextEncoder();

/** Writes `text` whole; a reader that went away (`| head`) is not our failure. */
async function write(stream: typeof Deno.stdout | typeof Deno.stderr, text: string): Promise<void> {
  await writeAll(stream, encoder.encode(text));
}

/** Reads the named variables that are set and that this process may read. */
function readNamed(names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    try {
      const value = Deno.env.get(name);
      if (value !== undefined) out[name] = value;
    } catch {
      // Not granted: a variable toolgate may not read is one it cannot pass on or leak.
    }
  }
  return out;
}

/** The environment as far as this process may read it: all of it, or (scoped --allow-env) toolgate's own names. */
function readableEnv(): { env: Record<string, string>; scoped: boolean } {
  if (Deno.permissions.querySync({ name: "env" }).state === "granted") {
    return { env: Deno.env.toObject(), scoped: false };
  }
  return { env: readNamed(OWN_ENV), scoped: true };
}

/**
 * The current process as an {@linkcode Io}. What toolgate writes carries text others supplied (the endpoint's
 * answers and error bodies, tools' messages, MCP clients' requests), so every write goes through
 * {@linkcode neutralizeControls}: on stdout when it is a terminal (a pipe gets the answer's bytes as they are, for
 * the script that reads them), on stderr always (it is for people, and a log file is read on a terminal too).
 */
export function processIo(): Io {
  const { env, scoped } = readableEnv();
  const stdoutTerminal = Deno.stdout.isTerminal();
  return {
    env,
    readEnv: scoped ? readNamed : undefined,
    cwd: Deno.cwd(),
    stdout: (text) => write(Deno.stdout, stdoutTerminal ? neutralizeControls(text) : text),
    stderr: (text) => write(Deno.stderr, neutralizeControls(text)),
    stderrControl: (text) => write(Deno.stderr, text),
    stdin: () => new Response(Deno.stdin.readable).text(),
    interactive: Deno.stdin.isTerminal() && Deno.stderr.isTerminal(),
  };
}
