/**
 * The `toolgate` command (and `deno task agent`): works out the least Deno permission set for this very run and
 * starts toolgate's main entry under exactly that set, from the folder the command was typed in. It passes the
 * exit code on, and a stop signal to the run.
 *
 * @module
 */
import { join } from "./paths.ts";
import { planLaunch } from "./launch_plan.ts";
import { toFlags } from "./own_grants.ts";
import { bundleEntry, packaging, TOOLGATE_ROOT } from "./tool_belt.ts";

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
  const env = Deno.env.toObject();
  const plan = await planLaunch(Deno.args, env, cwd);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", ...toFlags(plan.set), ...entry(), ...Deno.args],
    cwd,
    env: { ...plan.env, INIT_CWD: "" },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  // Ctrl-C reaches the whole foreground group, the run included: the run decides what it means.
  Deno.addSignalListener("SIGINT", () => {});
  for (const signal of ["SIGTERM", "SIGHUP"] as const) {
    Deno.addSignalListener(signal, () => {
      try {
        child.kill(signal);
      } catch {
        // Already gone.
      }
    });
  }
  Deno.exit((await child.status).code);
}
