/**
 * What `exec` runs, read from its arguments, shared by the tool itself and by toolgate's background jobs so that
 * the two cannot drift: an argv or a shell command line (exactly one), the extra environment, the shell a command
 * line runs in (bash with `pipefail`; sh, which on Debian has no `pipefail`, only without bash), and the warnings
 * a finished command earns (a pipeline ended by SIGPIPE, a pipeline that printed nothing).
 *
 * @module
 */
import { invalidArgs } from "./tool_output.ts";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ARGV_EXPECTED = 'a non-empty array of strings, e.g. ["ls", "-la"], or a shell command line in `shell`';
const SHELL_EXPECTED = 'a shell command line, e.g. "git log --oneline | head -n 5", or an argv in `argv`';

/**
 * What to run: a program and its arguments (no shell), or a command line for the shell.
 *
 * @example
 * ```ts
 * import type { ExecCommand } from "./exec_args.ts";
 * const command: ExecCommand = { shell: "ls | wc -l" };
 * ```
 */
export type ExecCommand =
  | { readonly argv: readonly string[]; readonly shell?: undefined }
  | { readonly shell: string; readonly argv?: undefined };

function absent(value: unknown): boolean {
  return value === undefined || value === null || value === "" ||
    (Array.isArray(value) && value.length === 0);
}

function readArgv(value: unknown): string[] {
  if (!Array.isArray(value)) throw invalidArgs("argv", "argv must be a non-empty array", ARGV_EXPECTED);
  for (const [i, item] of value.entries()) {
    if (typeof item !== "string") throw invalidArgs("argv", `argv[${i}] must be a string`, ARGV_EXPECTED);
    if (item.includes("\0")) throw invalidArgs("argv", `argv[${i}] contains a NUL byte`, ARGV_EXPECTED);
  }
  if (value[0] === "") throw invalidArgs("argv", "argv[0] (the program) must not be empty", ARGV_EXPECTED);
  return value as string[];
}

/**
 * Reads `argv` and `shell` (an empty array or string counts as absent, the schema's defaults): exactly one must
 * be given. Throws an `invalid_args` failure naming the field.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readCommand } from "./exec_args.ts";
 * assert.deepEqual(readCommand(["git", "status"], undefined), { argv: ["git", "status"] });
 * assert.deepEqual(readCommand([], "ls | wc -l"), { shell: "ls | wc -l" });
 * ```
 */
export function readCommand(argv: unknown, shell: unknown): ExecCommand {
  if (!absent(argv) && !absent(shell)) {
    throw invalidArgs("shell", "give argv or shell, not both", "argv (no shell) or shell, one of them");
  }
  if (!absent(shell)) {
    if (typeof shell !== "string") throw invalidArgs("shell", "shell must be a string", SHELL_EXPECTED);
    if (shell.includes("\0")) throw invalidArgs("shell", "shell contains a NUL byte", SHELL_EXPECTED);
    if (shell.trim() === "") throw invalidArgs("shell", "shell must not be blank", SHELL_EXPECTED);
    return { shell };
  }
  if (absent(argv)) {
    throw invalidArgs("argv", "missing argv (or shell): say what to run", ARGV_EXPECTED);
  }
  return { argv: readArgv(argv) };
}

/**
 * Reads `env`, an array of `{name, value}`; absent is none. Throws an `invalid_args` failure naming `env`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readEnv } from "./exec_args.ts";
 * assert.deepEqual(readEnv([{ name: "CI", value: "1" }]), { CI: "1" });
 * ```
 */
export function readEnv(value: unknown): Record<string, string> {
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

/**
 * What `exec` passes on to the programs it runs besides `PATH` and `HOME`: the way out of its sandbox that
 * toolgate set up (the proxy variables, the CA bundle of a call with bound credentials), never its secrets or
 * passthrough variables. The names match what `src/sandbox/tool_launch.ts` and `src/sandbox/run_ca.ts` set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EXEC_NETWORK_VARIABLES } from "./exec_args.ts";
 * assert.ok(EXEC_NETWORK_VARIABLES.includes("HTTPS_PROXY"));
 * ```
 */
export const EXEC_NETWORK_VARIABLES: readonly string[] = [
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "http_proxy",
  "https_proxy",
  "ALL_PROXY",
  "NODE_USE_ENV_PROXY",
  "SSL_CERT_FILE",
  "NODE_EXTRA_CA_CERTS",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
  "DENO_CERT",
];

/** A bound credential's placeholder (the form of `src/manifest/credentials.ts`): not a secret, passed on. */
const PLACEHOLDER = /^toolgate-cred-[0-9a-f]{32}$/;

/**
 * The environment `exec` gives the programs it runs, from its own: `PATH`, `HOME`, the network variables
 * ({@linkcode EXEC_NETWORK_VARIABLES}) and every variable that holds a bound credential's placeholder (the secret
 * itself never enters the sandbox: the egress proxy puts it in). Nothing else: not the tool's secrets, not its
 * passthrough variables.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { execEnv } from "./exec_args.ts";
 * const placeholder = `toolgate-cred-${"0".repeat(32)}`;
 * assert.deepEqual(execEnv({ PATH: "/usr/bin", API_KEY: "s3cret", GH_TOKEN: placeholder }), {
 *   PATH: "/usr/bin",
 *   GH_TOKEN: placeholder,
 * });
 * ```
 */
export function execEnv(own: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(own)) {
    if (
      name === "PATH" || name === "HOME" || EXEC_NETWORK_VARIABLES.includes(name) || PLACEHOLDER.test(value)
    ) {
      env[name] = value;
    }
  }
  return env;
}

/**
 * The shells that have `pipefail`, in the order they are tried. Debian's /bin/sh is dash, which has none (dash
 * 0.5.12 answers `set -o pipefail` with "Illegal option").
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PIPEFAIL_SHELLS } from "./exec_args.ts";
 * assert.equal(PIPEFAIL_SHELLS[0], "/bin/bash");
 * ```
 */
export const PIPEFAIL_SHELLS: readonly string[] = ["/bin/bash", "/usr/bin/bash"];

/**
 * The shell used when there is no bash: POSIX sh, with `pipefail` only where it has one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FALLBACK_SHELL } from "./exec_args.ts";
 * assert.equal(FALLBACK_SHELL, "/bin/sh");
 * ```
 */
export const FALLBACK_SHELL = "/bin/sh";

/** What {@linkcode shHasPipefail} found, once per process: the answer does not change while it runs. */
let shPipefail: boolean | undefined;

/**
 * Does {@linkcode FALLBACK_SHELL} know `set -o pipefail`? (dash before 0.5.13 does not.) Asks it once per process.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FALLBACK_SHELL, shellArgv, shHasPipefail } from "./exec_args.ts";
 * const argv = shellArgv(FALLBACK_SHELL, "false | true", shHasPipefail());
 * assert.deepEqual([argv[0], argv.at(-1)], ["/bin/sh", "false | true"]);
 * ```
 */
export function shHasPipefail(): boolean {
  if (shPipefail !== undefined) return shPipefail;
  try {
    const probe = new Deno.Command(FALLBACK_SHELL, {
      args: ["-o", "pipefail", "-c", ":"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      clearEnv: true,
    });
    return shPipefail = probe.outputSync().success;
  } catch {
    return shPipefail = false;
  }
}

/**
 * The warning of a command line run without `pipefail` (no bash, and an sh without it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NO_PIPEFAIL_WARNING } from "./exec_args.ts";
 * assert.ok(NO_PIPEFAIL_WARNING.includes("pipefail"));
 * ```
 */
export const NO_PIPEFAIL_WARNING =
  "the command line ran without pipefail (there is no bash here, and /bin/sh " +
  "has no pipefail): a failure early in a pipeline is hidden behind the exit status of its last command";

/**
 * The argv that runs a command line in `shell`, with `pipefail` when it has it: a failure anywhere in a pipeline
 * then surfaces as its rightmost non-zero exit instead of being masked by `head` or `tee`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shellArgv } from "./exec_args.ts";
 * assert.deepEqual(shellArgv("/bin/bash", "false | true", true), ["/bin/bash", "-o", "pipefail", "-c", "false | true"]);
 * ```
 */
export function shellArgv(shell: string, command: string, pipefail: boolean): string[] {
  return pipefail ? [shell, "-o", "pipefail", "-c", command] : [shell, "-c", command];
}

/**
 * The exit status of a pipeline whose writer was killed by SIGPIPE (128 + 13): its reader stopped early, as `head`
 * does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SIGPIPE_EXIT } from "./exec_args.ts";
 * assert.equal(SIGPIPE_EXIT, 141);
 * ```
 */
export const SIGPIPE_EXIT = 141;

/** The text a command's warnings look at: the command line, or the argv joined. */
function commandText(command: ExecCommand): string {
  return command.shell ?? command.argv.join(" ");
}

/**
 * What a finished command means for the model: a pipeline that ended with SIGPIPE's 141 is a success (exit code
 * 0, `sigpipe: true`, a warning saying so); a zero exit with no output at all from a command with a pipe or
 * `2>/dev/null` earns a warning that a failure or an empty result may be hidden.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { finishedCommand } from "./exec_args.ts";
 * assert.equal(finishedCommand({ shell: "yes | head -n 1" }, 141, "y\n", "").exitCode, 0);
 * assert.equal(finishedCommand({ shell: "grep x f 2>/dev/null" }, 0, "", "").warnings.length, 1);
 * ```
 */
export function finishedCommand(
  command: ExecCommand,
  exitCode: number | null,
  stdout: string,
  stderr: string,
): { exitCode: number | null; sigpipe: boolean; warnings: string[] } {
  const text = commandText(command);
  const warnings: string[] = [];
  let code = exitCode;
  let sigpipe = false;
  if (command.shell !== undefined && code === SIGPIPE_EXIT && text.includes("|")) {
    code = 0;
    sigpipe = true;
    warnings.push(
      "the pipeline exited 141 (SIGPIPE): a command in it stopped reading early, as head does, and the one " +
        "writing to it was ended; that is normal for `cmd | head`, so it is reported as exit_code 0",
    );
  }
  if (code === 0 && stdout === "" && stderr === "" && (text.includes("|") || text.includes("2>/dev/null"))) {
    warnings.push(
      "the command exited 0 and printed nothing; a pipe or 2>/dev/null in it may hide a failure or an empty " +
        "result: check each stage on its own",
    );
  }
  return { exitCode: code, sigpipe, warnings };
}
