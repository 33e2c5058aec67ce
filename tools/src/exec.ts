// exec: runs a program from an argv (no shell) in a workspace directory, with a timeout that kills its whole
// process group, only PATH, HOME and the listed variables in its environment, and optional stdin text; returns
// {exit_code, stdout, stderr, duration_ms} with long outputs cut head-and-tail.
import { readStdinArgs } from "../lib/args.ts";
import { errorMessage, fsFailure, invalidArgs, runTool, ToolFailure } from "../lib/envelope.ts";
import { HeadTail } from "../lib/truncate.ts";
import { Workspace } from "../lib/workspace.ts";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** After the group is killed, how long stray holders of the pipes get before the reads are abandoned. */
const DRAIN_GRACE_MS = 500;

function readArgv(value: unknown): string[] {
  const expected = 'a non-empty array of strings, e.g. ["ls", "-la"]';
  if (!Array.isArray(value) || value.length === 0) {
    throw invalidArgs("argv", "argv must be a non-empty array", expected);
  }
  for (const [i, item] of value.entries()) {
    if (typeof item !== "string") throw invalidArgs("argv", `argv[${i}] must be a string`, expected);
    if (item.includes("\0")) throw invalidArgs("argv", `argv[${i}] contains a NUL byte`, expected);
  }
  if (value[0] === "") throw invalidArgs("argv", "argv[0] (the program) must not be empty", expected);
  return value as string[];
}

function readEnv(value: unknown): Record<string, string> {
  const expected = 'an array of {name, value}, e.g. [{"name": "CI", "value": "1"}]';
  const env: Record<string, string> = {};
  if (value === undefined || value === null || value === "") return env;
  if (!Array.isArray(value)) throw invalidArgs("env", "env must be an array", expected);
  for (const [i, item] of value.entries()) {
    if (typeof item !== "object" || item === null || Array.isArray(item)) {
      throw invalidArgs("env", `env[${i}] must be an object`, expected);
    }
    const { name, value: text, ...rest } = item as Record<string, unknown>;
    if (Object.keys(rest).length > 0) throw invalidArgs("env", `env[${i}] has unknown keys`, expected);
    if (typeof name !== "string" || !ENV_NAME.test(name)) {
      throw invalidArgs("env", `env[${i}].name must be a variable name`, expected);
    }
    if (typeof text !== "string" || text.includes("\0")) {
      throw invalidArgs("env", `env[${i}].value must be a string`, expected);
    }
    env[name] = text;
  }
  return env;
}

async function collect(
  stream: ReadableStream<Uint8Array>,
  sink: HeadTail,
  stop: Promise<void>,
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
    sink.push(next.value);
  }
}

await runTool(async () => {
  const args = await readStdinArgs();
  const argv = readArgv(args.raw("argv"));
  const cwdArg = args.optionalString("cwd", ".");
  const timeoutMs = args.integer("timeout_ms", 30_000, { min: 1, max: 300_000 });
  const extraEnv = readEnv(args.raw("env"));
  const stdinText = args.optionalText("stdin", "");
  const maxOutputChars = args.integer("max_output_chars", 20_000, { min: 200, max: 1_000_000 });
  args.done();

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

  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, extraEnv);

  const started = performance.now();
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      cwd,
      clearEnv: true,
      env,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      // Its own process group, so the timeout can kill everything it started, not just the first process.
      detached: true,
    }).spawn();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new ToolFailure("not_found", `program not found: ${JSON.stringify(argv[0])}`, { field: "argv" });
    }
    if (error instanceof Deno.errors.PermissionDenied) {
      throw new ToolFailure("execution_error", `program is not executable: ${JSON.stringify(argv[0])}`, {
        field: "argv",
        retryable: false,
      });
    }
    throw new ToolFailure(
      "execution_error",
      `could not start ${JSON.stringify(argv[0])}: ${errorMessage(error)}`,
    );
  }

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

  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, timeoutMs);

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
    collect(child.stdout, stdout, drainStop),
    collect(child.stderr, stderr, drainStop),
  ]);

  const status = await child.status;
  clearTimeout(timer);
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
  if (timedOut) {
    throw new ToolFailure(
      "timeout",
      `${JSON.stringify(argv[0])} ran past its ${timeoutMs} ms timeout and was killed`,
      {
        metadata: output,
      },
    );
  }
  return output;
});
