/**
 * toolgate's command-line entry: picks the command, parses its options, runs it, and turns a user's mistake into
 * a message and exit code 2 instead of a stack trace.
 *
 * @module
 */
import denoJson from "../deno.json" with { type: "json" };
import {
  type Command,
  CommandFailure,
  commandHelp,
  EXIT,
  expectPositionals,
  GLOBAL_OPTIONS,
  type Io,
  normalizeDashes,
  parseCommandArgs,
  UsageError,
} from "./commands/cli.ts";
import { broadGrants } from "./launcher/own_grants.ts";
import { RESIDENT_ENV, RESIDENT_MODE } from "./launcher/resident_wire.ts";
import { StateDirError } from "./state/state.ts";
import { callCommand } from "./commands/call.ts";
import { doctorCommand } from "./commands/doctor.ts";
import { initCommand } from "./commands/init.ts";
import { importCommand } from "./commands/import.ts";
import { lintCommand } from "./commands/lint.ts";
import { listCommand } from "./commands/list.ts";
import { logCommand } from "./commands/log.ts";
import { permissionsCommand } from "./commands/permissions.ts";
import { runCommand } from "./commands/run.ts";
import { secretsCommand } from "./commands/secrets.ts";
import { serveCommand } from "./commands/serve.ts";
import { trustCommand } from "./commands/trust.ts";
import { validateCommand } from "./commands/validate.ts";
import { workerCommand } from "./commands/worker.ts";

/** toolgate's version, from `deno.json`. */
export const VERSION: string = denoJson.version;

/** `toolgate help [COMMAND]`, as git and npm spell it. */
const helpCommand: Command = {
  name: "help",
  summary: "this help, or a command's (toolgate help COMMAND)",
  usage: "toolgate help [COMMAND]",
  options: {},
  async run(parsed, io) {
    const [topic] = parsed.positionals;
    expectPositionals(parsed, 1, "help");
    const about = topic === undefined ? undefined : COMMANDS.find((c) => c.name === topic);
    if (topic !== undefined && !about) {
      throw new UsageError(`unknown command ${JSON.stringify(topic)}`, "help");
    }
    await io.stdout(about ? commandHelp(about) : globalHelp());
    return EXIT.ok;
  },
};

/** Every command, in the order help lists them. */
export const COMMANDS: readonly Command[] = [
  initCommand,
  importCommand,
  validateCommand,
  lintCommand,
  listCommand,
  callCommand,
  runCommand,
  serveCommand,
  secretsCommand,
  logCommand,
  doctorCommand,
  workerCommand,
  trustCommand,
  permissionsCommand,
  helpCommand,
];

/** Options that, given without a command, mean the agent loop. */
const AGENT_OPTIONS = new Set(["--prompt", "--prompt-file", "--load-messages"]);

/** Options (of any command) that take a value: their value is never the command's name. */
function valueOptions(): Set<string> {
  const names = new Set<string>();
  for (const options of [GLOBAL_OPTIONS, ...COMMANDS.map((c) => c.options)]) {
    for (const [name, spec] of Object.entries(options)) if (spec.type === "string") names.add(`--${name}`);
  }
  return names;
}

function globalHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return [
    `toolgate ${VERSION}: run local tools for LLM agents, sandboxed, with typed result envelopes.`,
    "",
    "Usage: toolgate <command> [options]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    "",
    "Global options:",
    "  --tools PATH               the manifest (default: env TOOLGATE_TOOLS, else the nearest tools.json)",
    "  --allow-absolute-commands  accept absolute command[0] paths (meant for tests)",
    "  --locked                   refuse to start with broader Deno permissions than needed",
    "  -h, --help                 show help (`toolgate <command> --help` for a command's own)",
    "  --version                  print the version",
    "",
    "Exit codes: 0 success, 1 failure, 2 usage error.",
    "",
  ].join("\n");
}

/**
 * Splits argv into the command and the rest: the command is the first token that is not an option. An agent-loop
 * option before any command (`toolgate --prompt TEXT`) means the agent loop.
 */
function findCommand(argv: readonly string[]): { command?: Command; name?: string; rest: string[] } {
  const known = new Set([GLOBAL_OPTIONS, ...COMMANDS.map((c) => c.options)].flatMap((o) => Object.keys(o)));
  const tokens = normalizeDashes(argv, known);
  const takesValue = valueOptions();
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token === "--") break;
    if (AGENT_OPTIONS.has(token.split("=")[0])) {
      return { command: runCommand, name: runCommand.name, rest: [...argv] };
    }
    if (takesValue.has(token)) {
      i++;
      continue;
    }
    if (token.startsWith("-") && token !== "-") continue;
    const command = COMMANDS.find((c) => c.name === token);
    return { command, name: token, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { rest: [...argv] };
}

/** Warns about grants broader than toolgate needs; with `--locked`, refuses to go on. */
async function grantsAcceptable(locked: boolean, io: Io): Promise<boolean> {
  const broad = (io.broadGrants ?? broadGrants)();
  if (broad.length === 0) return true;
  const lines = broad.map((grant) => `  ${grant.flag} (unscoped): ${grant.why}`);
  const hint = "`toolgate permissions` prints the least set.";
  if (locked) {
    await io.stderr(
      `toolgate: refusing to start (--locked): broader permissions than needed:\n${
        lines.join("\n")
      }\n${hint}\n`,
    );
    return false;
  }
  await io.stderr(`toolgate: warning: broader permissions than needed:\n${lines.join("\n")}\n${hint}\n`);
  return true;
}

/**
 * Runs the CLI with `argv` and returns the exit code.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { run } from "./main.ts";
 * import { processIo } from "./commands/process_io.ts";
 * assert.equal(await run(["validate", "--tools", "tools.json"], processIo()), 0);
 * ```
 */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  const { command, name, rest } = findCommand(argv);
  // Only what comes before `--` can ask for help or the version: after it, every word is an argument.
  const end = rest.indexOf("--");
  const asks = (...flags: string[]) =>
    (end === -1 ? rest : rest.slice(0, end)).some((t) => flags.includes(t));
  try {
    if (asks("--version", "-version")) {
      await io.stdout(`toolgate ${VERSION}\n`);
      return EXIT.ok;
    }
    if (!command) {
      if (name !== undefined) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
      if (asks("--help", "-h", "-help")) {
        await io.stdout(globalHelp());
        return EXIT.ok;
      }
      throw new UsageError("no command given");
    }
    if (asks("--help", "-h", "-help")) {
      await io.stdout(commandHelp(command));
      return EXIT.ok;
    }
    const parsed = parseCommandArgs(rest, command);
    if (!(await grantsAcceptable(parsed.values.locked === true, io))) return EXIT.failure;
    return await command.run(parsed, io);
  } catch (error) {
    if (error instanceof StateDirError || error instanceof CommandFailure) {
      // Not a usage mistake and not a bug: a state folder or file toolgate refuses, named with its fix.
      await io.stderr(`toolgate: ${error.message}\n`);
      return EXIT.failure;
    }
    if (!(error instanceof UsageError)) throw error;
    const where = error.command ?? command?.name;
    const help = where ? `toolgate ${where} --help` : "toolgate --help";
    await io.stderr(`toolgate: ${error.message}\nSee \`${help}\`.\n`);
    return EXIT.usage;
  }
}

/** The commands a resident server may run again: one command line in, one answer out, nothing interactive. */
const RESIDENT_COMMANDS = ["call", "run"];

/** How long a finished command's process may take to end on its own before it is ended. */
const EXIT_GRACE_MS = 2_000;

if (import.meta.main) {
  const { BRIDGE_MODE, TOOL_MODE } = await import("./manifest/tool_belt.ts");
  if (Deno.args[0] === TOOL_MODE) {
    await (await import("./commands/tool_mode.ts")).runToolMode(Deno.args[1]);
  } else if (Deno.args[0] === BRIDGE_MODE) {
    Deno.exit(await (await import("./sandbox/net_bridge.ts")).runBridge(Deno.args.slice(1)));
  } else if (Deno.args[0] === RESIDENT_MODE) {
    // `__resident SOCKET NAMES ARGV...`, the record's MAC on stdin: a record's resident server
    // (src/launcher/resident_start.ts starts it; a command line is every local user's to read).
    const [, socket, names, ...argv] = Deno.args;
    const mac = (await new Response(Deno.stdin.readable).text()).trim();
    if (!/^[0-9a-f]{64}$/.test(mac)) Deno.exit(1);
    const { serveResident } = await import("./commands/resident_server.ts");
    await serveResident({ socket, mac, argv, envNames: names.split(",").filter((n) => n !== ""), run });
    Deno.exit(0);
  } else {
    const { processIo } = await import("./commands/process_io.ts");
    const io = processIo();
    // A compiled binary runs under the grants baked into it: a run that needs more is told so before it starts.
    const found = Deno.build.standalone || io.env.TOOLGATE_CHECK_GRANTS === "1"
      ? await (await import("./launcher/fixed_grants.ts")).fixedGrantsProblem(Deno.args, io.env, io.cwd)
      : undefined;
    if (found !== undefined) await io.stderr(found.line);
    Deno.exitCode = found?.fatal ? EXIT.usage : await run(Deno.args, io);
    // A warm `call` or agent run whose front end asked for it leaves a resident server for the next same one.
    if (io.env[RESIDENT_ENV] && RESIDENT_COMMANDS.includes(findCommand(Deno.args).name ?? "")) {
      await (await import("./launcher/resident_start.ts")).startResident(Deno.args);
    }
    // The command is done and has closed what it opened; a handle some library left open (an HTTP client's
    // standing stream, say) must not hold the process: a moment for the last writes, then it ends.
    const { after } = await import("./base/timer.ts");
    after(EXIT_GRACE_MS, () => Deno.exit(), { keepAlive: false });
  }
}
