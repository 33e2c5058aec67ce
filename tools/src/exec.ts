// exec: runs a program from an argv (no shell), or a command line through bash with pipefail, in a workspace
// directory, with a wall-clock and an idle timeout that kill its whole process group, only PATH, HOME, the
// sandbox's way out (proxy variables, a bound credential's placeholder and CA bundle) and the listed variables in
// its environment, and optional stdin text; returns {exit_code, stdout, stderr, duration_ms} with long
// outputs cut head-and-tail (an envelope with warnings when a pipeline ended by SIGPIPE or printed nothing).
// `background: true` is toolgate's own business (its job manager runs the command): here it is refused.
import { readStdinArgs } from "../lib/args.ts";
import { errorMessage, fsFailure, invalidArgs, runTool, ToolFailure, withWarnings } from "../lib/envelope.ts";
import {
  type ExecCommand,
  execEnv,
  FALLBACK_SHELL,
  finishedCommand,
  NO_PIPEFAIL_WARNING,
  PIPEFAIL_SHELLS,
  readCommand,
  readEnv,
  shellArgv,
  shHasPipefail,
} from "../lib/exec_args.ts";
import { HeadTail } from "../lib/truncate.ts";
import { Workspace } from "../lib/workspace.ts";
import { EXEC_ARGS } from "../schemas/exec.ts";

/** After the group is killed, how long stray holders of the pipes get before the reads are abandoned. */
const DRAIN_GRACE_MS = 500;

async function collect(
  stream: ReadableStream<Uint8Array>,
  sink: HeadTail,
  stop: Promise<void>,
  onData: () => void,
): Promise<void> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  const stopped = stop.then(() => "stop" as const);
  while (true) {
    const next = await Promise.race([reader.read(), stopped]);
    if (next === "stop") {
      await reader.cancel().catch(() => {});
      return;
    }
    if (next.done) return;
    onData();
    sink.push(next.value);
  }
}

interface Spawned {
  readonly child: Deno.ChildProcess;
  readonly warnings: string[];
}

function spawn(program: string, args: string[], cwd: string, env: Record<string, string>): Deno.ChildProcess {
  return new Deno.Command(program, {
    args,
    cwd,
    clearEnv: true,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    // Its own process group, so the timeout can kill everything it started, not just the first process.
    detached: true,
  }).spawn();
}

/** Starts the command: an argv as is, a command line in the first shell with pipefail that exists. */
function start(command: ExecCommand, cwd: string, env: Record<string, string>): Spawned {
  if (command.argv !== undefined) {
    return { child: spawn(command.argv[0], command.argv.slice(1), cwd, env), warnings: [] };
  }
  for (const shell of PIPEFAIL_SHELLS) {
    try {
      const [program, ...args] = shellArgv(shell, command.shell, true);
      return { child: spawn(program, args, cwd, env), warnings: [] };
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  const pipefail = shHasPipefail();
  const [program, ...args] = shellArgv(FALLBACK_SHELL, command.shell, pipefail);
  return { child: spawn(program, args, cwd, env), warnings: pipefail ? [] : [NO_PIPEFAIL_WARNING] };
}

await runTool(async () => {
  const args = await readStdinArgs(EXEC_ARGS);
  const command = readCommand(args.argv, args.shell);
  const { cwd: cwdArg, timeout_ms: timeoutMs, idle_timeout_ms: idleTimeoutMs, background } = args;
  const extraEnv = readEnv(args.env);
  const { stdin: stdinText, max_output_chars: maxOutputChars } = args;
  if (background) {
    throw new ToolFailure(
      "unavailable",
      "background jobs are started and owned by toolgate itself (its agent loop or its MCP server); this exec " +
        "runs outside it, so run the command in the foreground",
      { field: "background", retryable: false },
    );
  }

  // The cwd is entered and checked to be inside the workspace. The child is then started by that path (Deno has
  // no other way), so a racing swap could still move it elsewhere: that grants nothing, since the program itself
  // may change directory anywhere it can see. The sandbox, not this check, bounds what it reaches.
  const workspace = new Workspace(Deno.cwd());
  const located = workspace.locate(cwdArg, { field: "cwd", follow: true });
  if (located.info === undefined) throw fsFailure(new Deno.errors.NotFound(), located.rel, "cwd");
  if (!located.info.isDirectory) {
    throw invalidArgs(
      "cwd",
      `not a directory: ${JSON.stringify(located.rel)}`,
      "a directory inside the workspace",
    );
  }
  const cwd = workspace.enter(located);

  // PATH, HOME and the sandbox's way out (the proxy, a bound credential's placeholder and CA bundle); no secret.
  const env = execEnv(Deno.env.toObject());
  Object.assign(env, extraEnv);

  const started = performance.now();
  // How failures name what ran: the program, or the command line (cut, it can be long).
  const line = command.shell ?? "";
  const what = command.argv?.[0] ?? (line.length > 80 ? `${line.slice(0, 77)}...` : line);
  let spawned: Spawned;
  try {
    spawned = start(command, cwd, env);
  } catch (error) {
    const field = command.argv ? "argv" : "shell";
    if (error instanceof Deno.errors.NotFound) {
      throw new ToolFailure("not_found", `program not found: ${JSON.stringify(what)}`, { field });
    }
    if (error instanceof Deno.errors.PermissionDenied) {
      throw new ToolFailure("execution_error", `program is not executable: ${JSON.stringify(what)}`, {
        field,
        retryable: false,
      });
    }
    throw new ToolFailure(
      "execution_error",
      `could not start ${JSON.stringify(what)}: ${errorMessage(error)}`,
    );
  }
  const { child } = spawned;

  const killGroup = () => {
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  // If the runner stops this tool, the child's group goes with it.
  const onSignal = () => {
    killGroup();
    Deno.exit(143);
  };
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) Deno.addSignalListener(signal, onSignal);

  let timedOut: "wall" | "idle" | undefined;
  const timer = setTimeout(() => {
    timedOut ??= "wall";
    killGroup();
  }, timeoutMs);
  // The idle clock: every chunk on stdout or stderr resets it; one timer, moved on lazily.
  let lastOutput = performance.now();
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  const watchIdle = (delay: number) => {
    idleTimer = setTimeout(() => {
      const quiet = performance.now() - lastOutput;
      if (quiet < idleTimeoutMs) return watchIdle(idleTimeoutMs - quiet);
      timedOut ??= "idle";
      killGroup();
    }, delay);
  };
  if (idleTimeoutMs > 0) watchIdle(idleTimeoutMs);
  const onData = () => lastOutput = performance.now();

  const feed = (async () => {
    const writer = child.stdin.getWriter();
    try {
      if (stdinText !== "") await writer.write(new TextEncoder().encode(stdinText));
      await writer.close();
    } catch {
      // The program exited or closed its stdin without reading it all: not an error of ours.
    }
  })();

  const stdout = new HeadTail(maxOutputChars);
  const stderr = new HeadTail(maxOutputChars);
  let releaseDrain!: () => void;
  const drainStop = new Promise<void>((resolve) => (releaseDrain = resolve));
  const reading = Promise.all([
    collect(child.stdout, stdout, drainStop, onData),
    collect(child.stderr, stderr, drainStop, onData),
  ]);

  const status = await child.status;
  clearTimeout(timer);
  clearTimeout(idleTimer);
  // Whatever the program left behind in its group must not outlive it (and keep the pipes open).
  killGroup();
  const drainTimer = setTimeout(releaseDrain, DRAIN_GRACE_MS);
  await reading;
  clearTimeout(drainTimer);
  await feed;
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) Deno.removeSignalListener(signal, onSignal);

  const durationMs = Math.round(performance.now() - started);
  const output = {
    exit_code: status.code,
    signal: status.signal,
    stdout: stdout.text(),
    stderr: stderr.text(),
    stdout_truncated: stdout.truncated,
    stderr_truncated: stderr.truncated,
    duration_ms: durationMs,
  };
  if (timedOut === "idle") {
    throw new ToolFailure(
      "timeout",
      `${JSON.stringify(what)} printed nothing for ${idleTimeoutMs} ms (its idle timeout) and was killed`,
      { metadata: { ...output, idle: true, idle_timeout_ms: idleTimeoutMs, timeout_ms: timeoutMs } },
    );
  }
  if (timedOut === "wall") {
    throw new ToolFailure(
      "timeout",
      `${JSON.stringify(what)} ran past its ${timeoutMs} ms timeout and was killed`,
      { metadata: output },
    );
  }
  const finished = finishedCommand(
    command,
    status.signal === null ? status.code : null,
    output.stdout,
    output.stderr,
  );
  const warnings = [...spawned.warnings, ...finished.warnings];
  if (finished.sigpipe) Object.assign(output, { exit_code: finished.exitCode, sigpipe: true });
  // Warnings ride in an envelope (which toolgate honors); without any, the plain result stays as it always was.
  return withWarnings(output, warnings);
});
