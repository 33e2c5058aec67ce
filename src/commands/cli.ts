/**
 * The command-line plumbing every command shares: option parsing with `node:util` `parseArgs`'s rules (and
 * agentcli's single-dash spellings), usage errors with exit code 2, help text, and the process facts a command may
 * read.
 *
 * @module
 */

import { STOP_SIGNALS, type StopSignal } from "../process/process_tree.ts";
import type { StartsAhead } from "../process/starts_ahead.ts";
import { PORT_VALUE, withOptionalValue } from "../base/optional_value.ts";

/** Exit codes for every command. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** The exit codes of a stop by signal, as the shell reports them (the long-running commands: serve, worker). */
export const SIGNAL_EXIT: typeof STOP_SIGNALS = STOP_SIGNALS;

export type { StopSignal };

/**
 * SIGINT, SIGTERM and SIGHUP (a closed terminal), one after the other, while a long-running command runs: `next()`
 * waits for the next one (a first stops the command gently, a second, for a worker, at once). Nothing on Windows,
 * where none is sent.
 */
export function stopSignals(): { next: () => Promise<StopSignal>; dispose: () => void } {
  const waiting: ((signal: StopSignal) => void)[] = [];
  const next = () => new Promise<StopSignal>((resolve) => waiting.push(resolve));
  if (Deno.build.os === "windows") return { next, dispose: () => {} };
  const listeners = (Object.keys(STOP_SIGNALS) as StopSignal[]).map((signal) => {
    const listener = () => waiting.splice(0).forEach((resolve) => resolve(signal));
    Deno.addSignalListener(signal, listener);
    return [signal, listener] as const;
  });
  return {
    next,
    dispose: () => listeners.forEach(([signal, listener]) => Deno.removeSignalListener(signal, listener)),
  };
}

/** A user's mistake on the command line: printed without a stack trace, exit code 2. */
export class UsageError extends Error {
  constructor(message: string, readonly command?: string) {
    super(message);
    this.name = "UsageError";
  }
}

/**
 * A failure a command reports in one line and exit code 1: not the user's mistake on the command line (that is a
 * {@linkcode UsageError}) and not a bug (a worker pool that cannot be reached, say).
 */
export class CommandFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CommandFailure";
  }
}

/** What a command may read and write of its process; tests and library callers pass their own. */
export interface Io {
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** The process's stdout: on a terminal, control characters are made visible (a pipe gets the bytes as they are). */
  readonly stdout: (text: string) => Promise<void>;
  /** The process's stderr, for people only: control characters are always made visible. */
  readonly stderr: (text: string) => Promise<void>;
  /**
   * Writes toolgate's own terminal control sequences to stderr unaltered (the progress line's redraws); its text
   * must come from toolgate or be made safe first. Absent: use `stderr`.
   */
  readonly stderrControl?: (text: string) => Promise<void>;
  readonly stdin: () => Promise<string>;
  /** True when stdin and stderr are a terminal (prompts, progress). */
  readonly interactive: boolean;
  /**
   * Reads more variables by name (a manifest's passthrough names) when `env` could not hold them all: under a
   * scoped `--allow-env`, only named variables can be read. Absent: `env` is the whole environment.
   */
  readonly readEnv?: (names: readonly string[]) => Record<string, string>;
  /**
   * The Deno grants broader than toolgate needs (a run in a host process reports none: the host chose its own).
   * Absent: this process's, as `broadGrants` reads them.
   */
  readonly broadGrants?: () => readonly { readonly flag: string; readonly why: string }[];
  /**
   * A resident server's store of processes started ahead, for a command that runs the same tool the same way
   * each time (`call`): its calls take them, and leave theirs to be made ahead of the next command.
   */
  readonly startsAhead?: StartsAhead;
}

/** One option of a command (the shapes `node:util` `parseArgs` takes), plus its help line. */
export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
  /** The value's placeholder in help, e.g. `SEC`. */
  value?: string;
  help: string;
}

/** A command: its name, its help, its options and what it does. */
export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Extra help text after the options. */
  readonly details?: string;
  run(parsed: ParsedArgs, io: Io): Promise<number>;
}

/** Parsed options and positionals. */
export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** Options every command takes. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  tools: {
    type: "string",
    value: "PATH",
    help:
      "the manifest (default: env TOOLGATE_TOOLS, else the nearest tools.json from --cwd, or here, up to the project's root)",
  },
  "allow-absolute-commands": { type: "boolean", help: "accept absolute command[0] paths (meant for tests)" },
  locked: { type: "boolean", help: "refuse to start with broader Deno permissions than needed" },
  help: { type: "boolean", short: "h", help: "show this help" },
  version: { type: "boolean", help: "print the version" },
};

/** agentcli spells long flags with one dash (`-tools x`); rewrite those that name a known long option. */
export function normalizeDashes(argv: readonly string[], known: ReadonlySet<string>): string[] {
  const out: string[] = [];
  let rest = false;
  for (const token of argv) {
    if (rest || token === "--") {
      rest = true;
      out.push(token);
      continue;
    }
    const match = /^-([A-Za-z][A-Za-z0-9-]+)(=.*)?$/.exec(token);
    out.push(match && known.has(match[1]) ? `-${token}` : token);
  }
  return out;
}

/** An option's value that looks like another option: most often the value was forgotten. */
function looksLikeOption(token: string): boolean {
  return token.length > 1 && token.startsWith("-");
}

/**
 * Reads `args` against `specs` the way `node:util` `parseArgs` does in strict mode with positionals allowed
 * (`--name value`, `--name=value`, `-x`, grouped short flags, `-xVALUE`, `--` ending the options), and says each
 * mistake in a user's words. Written here because loading `node:util` alone costs a run more start-up time than
 * all of its argument reading.
 */
function readArgs(
  args: readonly string[],
  specs: Readonly<Record<string, OptionSpec>>,
  command: string,
): ParsedArgs {
  const values: ParsedArgs["values"] = {};
  const positionals: string[] = [];
  const shorts = new Map(
    Object.entries(specs).flatMap(([name, spec]) => spec.short ? [[spec.short, name] as const] : []),
  );
  const store = (name: string, value: string | boolean) => {
    if (specs[name].multiple) values[name] = [...(values[name] as string[] | undefined ?? []), String(value)];
    else values[name] = value;
  };
  /** The value of string option `name` from the next token, which must be there and not look like an option. */
  const nextValue = (name: string, index: number): string => {
    const next = args[index + 1];
    if (next === undefined) throw new UsageError(`option --${name} needs a value`, command);
    if (looksLikeOption(next)) {
      throw new UsageError(
        `option --${name} needs a value (a value that starts with a dash is written --${name}=-VALUE)`,
        command,
      );
    }
    return next;
  };
  for (let i = 0; i < args.length; i++) {
    const token = args[i];
    if (token === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (token.startsWith("--")) {
      const equals = token.indexOf("=");
      const name = token.slice(2, equals === -1 ? undefined : equals);
      const spec = Object.hasOwn(specs, name) ? specs[name] : undefined;
      if (!spec) throw new UsageError(`unknown option --${name}`, command);
      if (spec.type === "boolean") {
        if (equals !== -1) throw new UsageError(`option --${name} takes no value`, command);
        store(name, true);
      } else if (equals !== -1) {
        store(name, token.slice(equals + 1));
      } else {
        store(name, nextValue(name, i++));
      }
      continue;
    }
    if (!looksLikeOption(token)) {
      positionals.push(token);
      continue;
    }
    // Short options: -h, -qy (grouped flags), -tVALUE or -t VALUE.
    for (let at = 1; at < token.length; at++) {
      const name = shorts.get(token[at]);
      if (name === undefined) throw new UsageError(`unknown option ${token.replace(/=.*$/, "")}`, command);
      if (specs[name].type === "boolean") {
        store(name, true);
        continue;
      }
      store(name, at + 1 < token.length ? token.slice(at + 1) : nextValue(name, i++));
      break;
    }
  }
  return { values, positionals };
}

/** Parses a command's arguments (global options included); throws {@linkcode UsageError}. */
export function parseCommandArgs(argv: readonly string[], command: Command): ParsedArgs {
  const specs = { ...GLOBAL_OPTIONS, ...command.options };
  const written = "console" in specs ? withOptionalValue(argv, "console", "0", PORT_VALUE) : argv;
  return readArgs(normalizeDashes(written, new Set(Object.keys(specs))), specs, command.name);
}

function optionLines(options: Readonly<Record<string, OptionSpec>>): string[] {
  const rows = Object.entries(options).map(([name, spec]) => {
    const flag = `${spec.short ? `-${spec.short}, ` : "    "}--${name}${spec.value ? ` ${spec.value}` : ""}`;
    return [flag, spec.help] as const;
  });
  const width = Math.max(0, ...rows.map(([flag]) => flag.length)) + 2;
  return rows.map(([flag, help]) => `  ${flag.padEnd(width)}${help}`);
}

/** The `--help` text of a command. */
export function commandHelp(command: Command): string {
  const lines = [`toolgate ${command.name}: ${command.summary}`, "", `Usage: ${command.usage}`, ""];
  if (Object.keys(command.options).length > 0) lines.push("Options:", ...optionLines(command.options), "");
  lines.push("Global options:", ...optionLines(GLOBAL_OPTIONS), "");
  if (command.details) lines.push(command.details.trimEnd(), "");
  lines.push("Exit codes: 0 success, 1 failure, 2 usage error.");
  return lines.join("\n") + "\n";
}

/**
 * A string option whose value is one of `choices` (else `fallback`); any other value is a usage error naming them.
 *
 * @example Not run as a doc test: a fragment of a command, with its parsed command line in scope.
 * ```ts ignore
 * const format = choiceOption(parsed, "format", ["openai", "anthropic", "mcp"], "openai", "list");
 * ```
 */
export function choiceOption<T extends string>(
  parsed: ParsedArgs,
  name: string,
  choices: readonly T[],
  fallback: string,
  command: string,
): T {
  const value = stringOption(parsed, name) ?? fallback;
  if (!(choices as readonly string[]).includes(value)) {
    throw new UsageError(
      `--${name} must be one of ${choices.join(", ")} (got ${JSON.stringify(value)})`,
      command,
    );
  }
  return value as T;
}

/** A string option's value, or `undefined`. */
export function stringOption(parsed: ParsedArgs, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : undefined;
}

/** A boolean option's value. */
export function flag(parsed: ParsedArgs, name: string): boolean {
  return parsed.values[name] === true;
}

/** A positive number option (seconds, bytes, counts), or the fallback; anything else is a usage error. */
export function numberOption(
  parsed: ParsedArgs,
  name: string,
  fallback: number,
  command: string,
  { integer = false, min = 0, exclusive = true }: { integer?: boolean; min?: number; exclusive?: boolean } =
    {},
): number {
  const raw = stringOption(parsed, name);
  if (raw === undefined) return fallback;
  return parseNumber(raw, `--${name}`, command, { integer, min, exclusive });
}

/** Parses a number given on the command line or in the environment; throws {@linkcode UsageError}. */
export function parseNumber(
  raw: string,
  label: string,
  command: string,
  { integer = false, min = 0, exclusive = true }: { integer?: boolean; min?: number; exclusive?: boolean } =
    {},
): number {
  const value = Number(raw.trim());
  const ok = raw.trim() !== "" && Number.isFinite(value) && (!integer || Number.isInteger(value)) &&
    (exclusive ? value > min : value >= min);
  if (!ok) {
    const what = integer ? "an integer" : "a number";
    throw new UsageError(
      `${label} must be ${what} ${exclusive ? ">" : ">="} ${min} (got ${JSON.stringify(raw)})`,
      command,
    );
  }
  return value;
}

/** Refuses positional arguments past the first `allowed` ones: a stray word is a usage error, never ignored. */
export function expectPositionals(parsed: ParsedArgs, allowed: number, command: string): void {
  const extra = parsed.positionals[allowed];
  if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`, command);
}
