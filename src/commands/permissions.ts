/** The `permissions` command: the least Deno permission flags toolgate runs a command line under. @module */
import { choiceOption, type Command, EXIT } from "./cli.ts";
import { toFlags } from "../launcher/own_grants.ts";

const FORMATS = ["flags", "json"] as const;

/** `toolgate permissions [--format flags|json] [--] COMMAND LINE` */
export const permissionsCommand: Command = {
  name: "permissions",
  summary: "print the least Deno permission flags toolgate runs a command line under",
  usage: "toolgate permissions [--format flags|json] [--] [COMMAND [OPTIONS...]]",
  options: {
    format: { type: "string", value: "FORMAT", help: "flags (default) or json" },
  },
  details: [
    "The `toolgate` command works this set out at every start, for that very run, and runs toolgate under it:",
    "--allow-read of the manifest's folder, the workspace, toolgate's code and state and the system folders the",
    "sandbox probe looks at; --allow-write of toolgate's state and config folders and a transcript only;",
    "--allow-run of bwrap, sh, kill, setsid, secret-tool, the runtime and each tool's program; --allow-env of the",
    "variables toolgate reads and the tools' passthrough and secret names; --allow-net of the endpoint (the agent",
    "loop) and of the address `serve --http` listens on; --allow-sys=uid. Paths are absolute. Put the command",
    "line after `--`.",
    'Example: toolgate permissions -- run --base-url http://127.0.0.1:8080/v1 --prompt "hi"',
  ].join("\n"),
  async run(parsed, io) {
    const format = choiceOption(parsed, "format", FORMATS, "flags", "permissions");
    // The planner loads here: every other command's start would pay for it.
    const { planLaunch } = await import("../launcher/launch_plan.ts");
    const plan = await planLaunch(parsed.positionals, io.env, io.cwd);
    const body = format === "flags" ? toFlags(plan.set).join(" ") : JSON.stringify(plan.set, null, 2);
    await io.stdout(body + "\n");
    return EXIT.ok;
  },
};
