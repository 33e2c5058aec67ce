/**
 * A program run in a real pseudo-terminal (python3's pty module: Deno opens none), for the tests of what reaches a
 * person's terminal: stdin, stdout and stderr are all the pty, and every byte the program wrote is returned.
 *
 * @module
 */
import { whyMissing } from "../requires.ts";

/** Why a pty cannot be had here (no python3), or `undefined`. */
export const NO_PTY: string | undefined = await whyMissing("pty");

/** Forks the program on a pty, reads the master until the program is gone (or killed at the deadline). */
const DRIVER = `
import json, os, pty, select, signal, sys, time
spec = json.loads(sys.stdin.read())
pid, fd = pty.fork()
if pid == 0:
    os.chdir(spec["cwd"])
    os.execve(spec["argv"][0], spec["argv"], spec["env"])
out = bytearray()
deadline = time.monotonic() + spec["timeout"]
while True:
    if time.monotonic() > deadline:
        os.kill(pid, signal.SIGKILL)
    ready, _, _ = select.select([fd], [], [], 0.05)
    if not ready:
        continue
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out += data
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(bytes(out))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
`;

/** What a program wrote to its terminal, and how it ended. */
export interface PtyResult {
  readonly code: number;
  /** Every byte written to the terminal, stdout and stderr alike. */
  readonly bytes: Uint8Array;
  /** The same, decoded. */
  readonly text: string;
}

/**
 * Runs `argv` on a pty with exactly `env`, in `cwd`; killed after `timeoutMs`.
 *
 * @example
 * ```ts
 * const run = await runInPty([Deno.execPath(), "--version"], { env: { PATH: "/usr/bin" }, cwd: "/tmp" });
 * ```
 */
export async function runInPty(
  argv: readonly string[],
  options: { env: Record<string, string>; cwd: string; timeoutMs?: number },
): Promise<PtyResult> {
  const child = new Deno.Command("python3", {
    args: ["-c", DRIVER],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify({
    argv,
    env: options.env,
    cwd: options.cwd,
    timeout: (options.timeoutMs ?? 60_000) / 1000,
  })));
  await writer.close();
  const { code, stdout, stderr } = await child.output();
  if (stderr.length > 0) throw new Error(`the pty driver failed: ${new TextDecoder().decode(stderr)}`);
  return { code, bytes: stdout, text: new TextDecoder().decode(stdout) };
}
