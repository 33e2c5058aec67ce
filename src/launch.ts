/**
 * The `toolgate` command (and `deno task agent`): works out the least Deno permission set for this very run and
 * starts toolgate's main entry under exactly that set, from the folder the command was typed in. It passes the
 * exit code on, and a stop signal to the run.
 *
 * @module
 */
import { join } from "./base/paths.ts";
import { planLaunch } from "./launcher/launch_plan.ts";
import { toFlags } from "./launcher/own_grants.ts";
import { bundleEntry, packaging, TOOLGATE_CODE, TOOLGATE_ROOT } from "./manifest/tool_belt.ts";
import { recordLaunch, takeWarmRequest } from "./launcher/launch_record.ts";
import { traceReads } from "./launcher/read_trace.ts";
import { RESIDENT_ARGS_ENV, RESIDENT_ENV, RESIDENT_MAC_ENV } from "./launcher/resident_wire.ts";

/** The main entry and the options that make the runtime load it the same way from any folder. */
function entry(): string[] {
  if (packaging() === "source") {
    // toolgate's own configuration (its import map and lockfile), never one found in the user's folders.
    return ["--config", join(TOOLGATE_ROOT, "deno.json"), join(TOOLGATE_ROOT, "src", "main.ts")];
  }
  return ["--no-config", bundleEntry()];
}

if (import.meta.main) {
  // `deno task` runs in toolgate's folder and says where it was started in INIT_CWD; anywhere else, an INIT_CWD
  // is one inherited from some outer task, and the folder the command was typed in is the current one.
  const here = Deno.cwd();
  const cwd = here === TOOLGATE_ROOT.replace(/\/$/, "") ? Deno.env.get("INIT_CWD") || here : here;
  // Only a warm run, whose front end checked the record, may leave a resident server: never a planned one.
  for (const name of [RESIDENT_ENV, RESIDENT_ARGS_ENV, RESIDENT_MAC_ENV]) Deno.env.delete(name);
  const env = Deno.env.toObject();
  // The installed front end asks for the decision to be recorded (its warm path); never from source, whose code
  // may change under the same build.
  const warm = packaging() === "bundle" ? takeWarmRequest(env, true) : undefined;
  const tracer = warm === undefined ? undefined : traceReads(env);
  const plannedAt = Date.now();
  let plan;
  try {
    plan = await planLaunch(Deno.args, tracer?.env ?? env, cwd);
  } finally {
    tracer?.stop();
  }
  const prefix = [Deno.execPath(), "run", "--quiet", ...toFlags(plan.set), ...entry()];
  const child = new Deno.Command(prefix[0], {
    args: [...prefix.slice(1), ...Deno.args],
    cwd,
    env: { ...plan.env, INIT_CWD: "" },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  // Recorded while the run starts; a run that cannot be recorded stays cold (TOOLGATE_LAUNCH_WHY says why).
  const recorded = warm === undefined || tracer === undefined ? Promise.resolve(undefined) : recordLaunch(
    warm,
    {
      prefix,
      // The front end always empties INIT_CWD itself.
      env: plan.env,
      reads: tracer.reads,
      extraPaths: [Deno.execPath(), TOOLGATE_CODE, ...entry().slice(1)],
      plannedAt,
    },
    cwd,
    env,
    Deno.args,
  );
  // On a terminal, Ctrl-C reaches the whole foreground group, the run included: the run decides what it means.
  // Without one, a SIGINT was sent to this process (a script, a CI runner), and it goes on to the run as the
  // others do: the run stops its calls and writes their audit lines, which it cannot do if nobody tells it.
  const terminal = Deno.stdin.isTerminal() || Deno.stdout.isTerminal() || Deno.stderr.isTerminal();
  if (terminal) Deno.addSignalListener("SIGINT", () => {});
  for (const signal of terminal ? ["SIGTERM", "SIGHUP"] as const : ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    Deno.addSignalListener(signal, () => {
      try {
        child.kill(signal);
      } catch {
        // Already gone.
      }
    });
  }
  const why = await recorded;
  if (why !== undefined && env.TOOLGATE_LAUNCH_WHY) console.error(`toolgate: not recorded: ${why}`);
  Deno.exit((await child.status).code);
}
