/** The `call` command: runs one tool and prints its envelope. @module */
import { type Command, EXIT, expectPositionals, UsageError } from "../cli.ts";
import { serialize } from "../contract.ts";
import { OWN_COMMAND } from "../policy.ts";
import { Progress, terminalColumns } from "../progress.ts";
import { EXECUTOR_OPTIONS, executorFromArgs, executorSettings } from "./executor_options.ts";
import { loadForCommand } from "./load.ts";

/** `toolgate call NAME [ARGS]` */
export const callCommand: Command = {
  name: "call",
  summary: "run one tool and print its result envelope",
  usage: "toolgate call NAME [ARGS | -] [options]",
  options: EXECUTOR_OPTIONS,
  details: [
    "ARGS is the JSON arguments object as text; `-` reads it from stdin; absent means {}.",
    "Prints exactly one envelope line on stdout: exit 0 when it is ok, 1 when not.",
    "The call is your own command, so it needs no further approval (the agent loop and serve ask for it).",
    'Example: toolgate call get_time \'{"timezone":"Europe/Helsinki"}\'',
  ].join("\n"),
  async run(parsed, io) {
    const [name, argsText] = parsed.positionals;
    if (name === undefined) throw new UsageError("call needs a tool name", "call");
    expectPositionals(parsed, 2, "call");
    const settings = await executorSettings(parsed, io, "call");
    const manifest = await loadForCommand(parsed, io);
    if (!manifest) return EXIT.failure;
    const { executor } = await executorFromArgs(parsed, io, manifest, "call", settings);
    const args = argsText === "-" ? await io.stdin() : argsText ?? "{}";
    // On a terminal, a slow tool shows that it runs and for how long (on stderr; stdout stays one envelope).
    const progress = new Progress({
      enabled: io.interactive,
      write: io.stderrControl ?? io.stderr,
      columns: terminalColumns(),
    });
    progress.start("call", name);
    // The person typed this very call: the policy approves it by definition.
    const envelope = await executor.call(name, args, { policy: OWN_COMMAND });
    progress.end("call", envelope);
    await progress.close();
    await io.stdout(serialize(envelope) + "\n");
    return envelope.ok ? EXIT.ok : EXIT.failure;
  },
};
