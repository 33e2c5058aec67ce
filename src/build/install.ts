/**
 * `deno task install [--bin DIR] [--source]`: puts a `toolgate` command on the PATH (default `~/.local/bin`): a
 * small shell script that starts toolgate's launcher with the runtime that installed it (or, if that one is gone,
 * `deno` from PATH, else Deno from npm through npx), from any folder.
 *
 * The launcher it starts is a bundle built here (`deno bundle`, split so that each command loads only its own
 * code) into toolgate's data folder (`$XDG_DATA_HOME/toolgate/bundle`, else `~/.local/share/toolgate/bundle`):
 * a bundle starts in a fraction of the time of the source's 200 modules. `--source` installs a command that runs
 * the checkout's source files instead (for working on toolgate itself: edits take effect at once).
 *
 * @module
 */
import { buildSessionStart } from "./native.ts";
import { join } from "../base/paths.ts";
import { parseArgs } from "node:util";
import { dataRoot } from "../state/state.ts";
import { ROOT } from "./flags.ts";
import { TOOL_DENO_FLAGS } from "../../tools/deno_flags.ts";
import { tuneBundle } from "./tune_bundle.ts";
import {
  CLIENT_MAC_FD,
  MISS_EXIT,
  RESIDENT_ARGS_ENV,
  RESIDENT_ENV,
  RESIDENT_MAC_ENV,
} from "../launcher/resident_wire.ts";
import {
  IDENTITY_FORMAT,
  LAUNCH_FORMAT,
  LAUNCH_VARS,
  STAT_FORMAT,
  WARM_ENV,
} from "../launcher/launch_record.ts";

/** A shell word in single quotes. */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'"'"'`)}'`;
}

/** What the installed command starts: the bundled launcher (a folder), or the checkout's source. */
export type InstalledCode = { readonly bundle: string } | { readonly source: string };

/**
 * The runtime's arguments that start the launcher of `code` (the installed command adds the user's own after them).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { launcherArgs } from "./install.ts";
 * assert.equal(launcherArgs({ bundle: "/opt/toolgate" }).at(-1), "/opt/toolgate/launch.js");
 * ```
 */
export function launcherArgs(code: InstalledCode): string[] {
  const entry = "bundle" in code
    ? ["--no-config", join(code.bundle, "launch.js")]
    : ["--config", join(code.source, "deno.json"), join(code.source, "src", "launch.ts")];
  return ["run", "--quiet", "--no-prompt", "--allow-read", "--allow-env", "--allow-run", ...entry];
}

/**
 * The installed command's warm path (see `src/launcher/launch_record.ts`), as shell functions: `_tg_key` prints the key's
 * items, each followed by a NUL; `_tg_warm` finds the record for this command, checks its MAC (over the key, the
 * record and what `stat -L` says of its files now) and, when every check passes, starts the main runtime with the
 * recorded command line. It returns on anything else, and the command takes the cold path. Record content is never
 * evaluated: its lines are only split on newlines (with globbing off) into the command line and the files to stat.
 */
function warmPath(build: string, client: string): string[] {
  const vars = LAUNCH_VARS.map((name) => `"\${${name}+=}\${${name}-}"`).join(" ");
  return [
    `_tg_build=${quote(build)}`,
    "_tg_nl='",
    "'",
    "_tg_dir=",
    "case ${XDG_STATE_HOME-} in",
    "/*) _tg_dir=$XDG_STATE_HOME/toolgate/launch ;;",
    "*) case ${HOME-} in /*) _tg_dir=$HOME/.local/state/toolgate/launch ;; esac ;;",
    "esac",
    // Deno would read a comma as two grants.
    'case $_tg_dir in *,* | *"$_tg_nl"*) _tg_dir= ;; esac',
    "_tg_key() {",
    `  printf '%s\\0' ${LAUNCH_FORMAT} "$_tg_build" "$deno" "$_tg_cwd" ${vars} "$#"`,
    `  [ "$#" -eq 0 ] || printf '%s\\0' "$@"`,
    "}",
    "_tg_warm() {",
    '  [ -n "$_tg_dir" ] && [ -O "$_tg_dir" ] && [ -O "$_tg_dir/key" ] || return',
    "  _tg_cwd=$(pwd -P) || return",
    '  IFS= read -r _tg_secret < "$_tg_dir/key" || return',
    '  _tg_rec=$(_tg_key "$@" | sha256sum) || return',
    "  _tg_rec=$_tg_dir/${_tg_rec%% *}",
    '  [ -O "$_tg_rec" ] || return',
    "  _tg_args= _tg_vars= _tg_paths= _tg_looked= _tg_body=",
    "  {",
    "    IFS= read -r _tg_mac || return",
    "    while IFS= read -r _tg_line; do",
    "      _tg_body=$_tg_body$_tg_line$_tg_nl",
    "      case $_tg_line in",
    '      "A /"* | "A -"* | "A run") _tg_args=$_tg_args${_tg_line#A }$_tg_nl ;;',
    '      "E TOOLGATE_"*=*) _tg_vars=$_tg_vars${_tg_line#E }$_tg_nl ;;',
    '      "P /"*) _tg_paths=$_tg_paths${_tg_line#P }$_tg_nl ;;',
    '      "I /"*) _tg_looked=$_tg_looked${_tg_line#I }$_tg_nl ;;',
    "      *) return 1 ;;",
    "      esac",
    "    done",
    '  } < "$_tg_rec" || return',
    '  [ -n "$_tg_args" ] || return',
    "  _tg_sum=$({",
    '    _tg_key "$@"',
    `    printf '%s\\0' "$_tg_secret" "$_tg_body"`,
    "    IFS=$_tg_nl",
    "    set -f",
    `    [ -z "$_tg_paths" ] || LC_ALL=C stat -L -c ${quote(STAT_FORMAT)} -- $_tg_paths 2>/dev/null`,
    `    [ -z "$_tg_looked" ] || LC_ALL=C stat -L -c ${quote(IDENTITY_FORMAT)} -- $_tg_looked 2>/dev/null`,
    `    printf '%s\\0' "$_tg_secret"`,
    "  } | sha256sum) || return",
    '  [ "${_tg_sum%% *}" = "$_tg_mac" ] || return',
    "  IFS=$_tg_nl",
    "  set -f",
    '  for _tg_line in $_tg_vars; do export "$_tg_line"; done',
    "  INIT_CWD=",
    "  export INIT_CWD",
    // No terminal in sight: a resident server of this record answers (its client on the recorded runtime), or this
    // run leaves one (src/resident.ts).
    '  if [ -z "${TOOLGATE_NO_RESIDENT-}" ] && [ ! -t 0 ] && [ ! -t 1 ] && [ ! -t 2 ]; then',
    // Named by the MAC (its first 16 digits: a socket's path must fit in 108 bytes), and the client shows the
    // server the whole of it: a server runs only for the very decision (record and files as they are) it came from.
    // The client reads the MAC on its fd 3, a here-document (a pipe), never on its command line (anyone's to read).
    '    _tg_sock=$_tg_dir/${_tg_mac%"${_tg_mac#????????????????}"}.sock',
    '    if [ -S "$_tg_sock" ] && [ -O "$_tg_sock" ]; then',
    // The client runs beside this shell, which passes on a stop signal sent to it (the pid its caller knows) and
    // waits on: the command stops as it would on that signal and still answers (src/resident.ts). Without that,
    // the shell would die of it and leave the client and the command running. stdin goes to the client whole
    // (kept on fd 4, since a command started with & would otherwise read /dev/null).
    "      exec 4<&0",
    `      "\${_tg_args%%"$_tg_nl"*}" run --quiet --no-prompt --no-config "--allow-read=$_tg_sock,${CLIENT_MAC_FD}" "--allow-write=$_tg_sock" "--allow-net=unix:$_tg_sock" --allow-env ${
      quote(client)
    } "$_tg_sock" <&4 4<&- 3<<_tg_mac_end &`,
    "$_tg_mac",
    "_tg_mac_end",
    "      _tg_pid=$!",
    "      exec 4<&-",
    '      for _tg_sig in INT TERM HUP; do trap "kill -$_tg_sig \\$_tg_pid 2>/dev/null" $_tg_sig; done',
    "      _tg_rc=",
    '      while [ -z "$_tg_rc" ]; do',
    '        wait "$_tg_pid"',
    "        _tg_rc=$?",
    '        kill -0 "$_tg_pid" 2>/dev/null && _tg_rc=',
    "      done",
    "      trap - INT TERM HUP",
    `      [ "$_tg_rc" -eq ${MISS_EXIT} ] || exit "$_tg_rc"`,
    "    fi",
    `    ${RESIDENT_ENV}=$_tg_sock ${RESIDENT_MAC_ENV}=$_tg_mac ${RESIDENT_ARGS_ENV}=$_tg_args`,
    `    export ${RESIDENT_ENV} ${RESIDENT_MAC_ENV} ${RESIDENT_ARGS_ENV}`,
    "  fi",
    '  exec $_tg_args "$@"',
    "}",
    '_tg_warm "$@"',
    // A miss: the launcher plans the run and records its decision.
    'if [ -n "$_tg_dir" ]; then',
    `  ${WARM_ENV.build}=$_tg_build ${WARM_ENV.runtime}=$deno ${WARM_ENV.dir}=$_tg_dir`,
    `  export ${WARM_ENV.build} ${WARM_ENV.runtime} ${WARM_ENV.dir}`,
    "fi",
  ];
}

/**
 * The text of the installed `toolgate` script. With a bundle and a `build` (a new one at each install), it has a
 * warm path: a command run before, none of whose inputs changed, starts one runtime, not two.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shimText } from "./install.ts";
 * assert.ok(shimText("/opt/deno", { bundle: "/home/me/.local/share/toolgate/bundle" }, "2.9.6").startsWith("#!/bin/sh\n"));
 * ```
 */
export function shimText(runtime: string, code: InstalledCode, version: string, build?: string): string {
  const args = launcherArgs(code).map((arg) => arg.startsWith("-") || arg === "run" ? arg : quote(arg)).join(
    " ",
  );
  const from = "bundle" in code ? `the bundle in ${code.bundle}` : `the source in ${code.source}`;
  const warm = "bundle" in code && build !== undefined;
  // The launcher may write only the records' folder.
  const coldArgs = warm
    ? args.replace("--allow-run", '--allow-run ${_tg_dir:+"--allow-write=$_tg_dir"}')
    : args;
  return [
    "#!/bin/sh",
    `# toolgate, installed by \`deno task install\`: it runs ${from}.`,
    "# It works out the least Deno permissions for each run and starts toolgate under exactly those.",
    // What its parent left open without close-on-exec (a host's extra pipe, a folder a wrapper script opened)
    // would reach every program toolgate starts, a confined tool too, which could open paths outside its binds
    // through a folder's descriptor (/proc/self/fd/N/...). Closed here: 3 to 9 by this shell (all that every POSIX
    // shell can name), from 10 up by bash, which then starts the command again (where bash is, and only when such
    // a descriptor is open). The session starter, where it is built, also closes every one before each start.
    // The shell's own descriptors (the script it reads, on 10 or above) close on exec: they pass to nobody, so they
    // are no reason for bash; and bash, finding nothing from 10 up, leaves its pattern unexpanded, which it skips.
    "exec 3<&- 4<&- 5<&- 6<&- 7<&- 8<&- 9<&-",
    'if [ -z "$_TOOLGATE_FDS_CLOSED" ]; then',
    "  for _tg_fd in /proc/self/fd/[1-9][0-9]*; do",
    '    [ -e "$_tg_fd" ] || continue',
    "    _tg_flags=",
    '    { read -r _tg_flags; read -r _tg_key _tg_flags; } 2>/dev/null < "/proc/self/fdinfo/${_tg_fd##*/}"',
    "    case $_tg_flags in 0*) [ $(( $_tg_flags & 02000000 )) -eq 0 ] || continue ;; esac",
    // Started again by its path only: a bare name would be looked up in PATH.
    "    case $0 in",
    "    */*) _tg_bash=$(command -v bash) && export _TOOLGATE_FDS_CLOSED=1 &&",
    '      exec "$_tg_bash" -c ' +
    `'for fd in /proc/self/fd/[1-9][0-9]*; do [ -e "$fd" ] && eval "exec \${fd##*/}>&-"; done; exec "$0" "$@"' "$0" "$@" ;;`,
    "    esac",
    "    break",
    "  done",
    "fi",
    "unset _TOOLGATE_FDS_CLOSED _tg_fd _tg_bash _tg_flags _tg_key",
    // Deno lets only --allow-all read /proc/self: the shell reads its cgroups (which the command keeps) with its own
    // builtins, so the launcher need not start a program for them.
    "TOOLGATE_CGROUP=",
    "if [ -r /proc/self/cgroup ]; then",
    '  while IFS= read -r line || [ -n "$line" ]; do TOOLGATE_CGROUP="$TOOLGATE_CGROUP$line',
    '"; done < /proc/self/cgroup',
    "fi",
    "export TOOLGATE_CGROUP",
    `deno=${quote(runtime)}`,
    '[ -x "$deno" ] || deno=$(command -v deno) || deno=""',
    `[ -n "$deno" ] || exec npx -y deno@${version} ${args} "$@"`,
    ...(warm ? warmPath(build, join(code.bundle, "resident.js")) : []),
    `exec "$deno" ${coldArgs} "$@"`,
    "",
  ].join("\n");
}

/** The built-in tools' bundle entries, `src/belt/NAME.ts`, one for each tool of `tools/deno_flags.ts`. */
export function beltEntries(): string[] {
  return Object.keys(TOOL_DENO_FLAGS).map((name) => join(ROOT, "src", "belt", `${name}.ts`));
}

/**
 * Builds the split bundle of the launcher and the main entry into `target`: into a fresh folder beside it first,
 * which then takes the old one's place, so that a command running during the install never sees half a bundle.
 */
export async function buildBundle(target: string): Promise<{ ok: true } | { ok: false; reason: string }> {
  const parent = join(target, "..");
  await Deno.mkdir(parent, { recursive: true, mode: 0o755 });
  const fresh = await Deno.makeTempDir({ dir: parent, prefix: ".bundle-" });
  const built = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--config",
      join(ROOT, "deno.json"),
      "--code-splitting",
      "--outdir",
      fresh,
      join(ROOT, "src", "launch.ts"),
      join(ROOT, "src", "main.ts"),
      // The installed command's client of a resident server: a few kilobytes, nothing of toolgate's own work.
      join(ROOT, "src", "resident.ts"),
      // Each built-in tool's own entry (`belt/NAME.js`): a tool loads its code and nothing of toolgate's.
      ...beltEntries(),
    ],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!built.success) {
    await Deno.remove(fresh, { recursive: true });
    return { ok: false, reason: new TextDecoder().decode(built.stderr).trim() };
  }
  await tuneBundle(fresh);
  await Deno.chmod(fresh, 0o755);
  const old = `${fresh}.old`;
  try {
    await Deno.rename(target, old);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  await Deno.rename(fresh, target);
  await Deno.remove(old, { recursive: true }).catch(() => {});
  return { ok: true };
}

/**
 * What `install` says last: the command to run next, with the line that puts `bin` on PATH first when this
 * shell's PATH lacks it (a fresh Debian user's PATH has no `~/.local/bin` until the next login).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nextSteps } from "./install.ts";
 * assert.deepEqual(nextSteps("/home/me/.local/bin", "/home/me/.local/bin:/usr/bin"), ["next: toolgate doctor"]);
 * assert.equal(nextSteps("/home/me/.local/bin", "/usr/bin:/bin").at(-1), 'next: export PATH="/home/me/.local/bin:$PATH" && toolgate doctor');
 * ```
 */
export function nextSteps(bin: string, path: string): string[] {
  if (path.split(":").includes(bin)) return ["next: toolgate doctor"];
  return [
    `${bin} is not on your PATH (add the export line to ~/.profile to keep it there)`,
    `next: export PATH="${bin}:$PATH" && toolgate doctor`,
  ];
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { bin: { type: "string" }, source: { type: "boolean" } },
  });
  const env = Deno.env.toObject();
  const bin = values.bin ?? (env.HOME ? join(env.HOME, ".local", "bin") : undefined);
  if (bin === undefined) {
    console.error("toolgate install: HOME is not set; pass --bin DIR");
    Deno.exit(2);
  }
  let code: InstalledCode = { source: ROOT.replace(/\/$/, "") };
  if (!values.source) {
    const bundle = join(dataRoot(env), "bundle");
    const built = await buildBundle(bundle);
    if (built.ok) code = { bundle };
    else {console.error(
        `toolgate install: cannot build the bundle, the command runs the source:\n${built.reason}`,
      );}
  }
  // Optional: unconfined calls start through setsid(1) and a shell without it, one exec slower each. Built before
  // the command is written, so that no run of the new command records its grants without it.
  const starter = await buildSessionStart(env);
  const starterLine = starter.ok
    ? `session starter: ${starter.path}${
      starter.built === "before" ? " (built before)" : ` (built, ${starter.built})`
    }`
    : `session starter not built (${starter.reason}): unconfined calls start through setsid(1) and a shell`;
  const target = join(bin, "toolgate");
  await Deno.mkdir(bin, { recursive: true });
  await Deno.writeTextFile(target, shimText(Deno.execPath(), code, Deno.version.deno, crypto.randomUUID()), {
    mode: 0o755,
  });
  await Deno.chmod(target, 0o755);
  console.log(`installed ${target}`);
  console.log(starterLine);
  console.log(nextSteps(bin, env.PATH ?? "").join("\n"));
}
