/**
 * `deno task install [--bin DIR]`: puts a `toolgate` command on the PATH (default `~/.local/bin`): a small shell
 * script that starts toolgate's launcher with the runtime that installed it (or, if that one is gone, `deno` from
 * PATH, else Deno from npm through npx), from any folder.
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ROOT } from "./flags.ts";

/** A shell word in single quotes. */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'"'"'`)}'`;
}

/**
 * The text of the installed `toolgate` script.
 *
 * @example
 * ```ts
 * import { shimText } from "./install.ts";
 * shimText("/opt/deno", "/srv/toolgate", "2.9.6").startsWith("#!/bin/sh\n"); // true
 * ```
 */
export function shimText(runtime: string, root: string, version: string): string {
  const args = [
    "run",
    "--quiet",
    "--no-prompt",
    "--allow-read",
    "--allow-env",
    "--allow-run",
    "--config",
    quote(join(root, "deno.json")),
    quote(join(root, "src", "launch.ts")),
  ].join(" ");
  return [
    "#!/bin/sh",
    `# toolgate, installed from ${root} by \`deno task install\`.`,
    "# It works out the least Deno permissions for each run and starts toolgate under exactly those.",
    `deno=${quote(runtime)}`,
    '[ -x "$deno" ] || deno=$(command -v deno) || deno=""',
    `if [ -n "$deno" ]; then exec "$deno" ${args} "$@"; fi`,
    `exec npx -y deno@${version} ${args} "$@"`,
    "",
  ].join("\n");
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { bin: { type: "string" } } });
  const home = Deno.env.get("HOME");
  const bin = values.bin ?? (home ? join(home, ".local", "bin") : undefined);
  if (bin === undefined) {
    console.error("toolgate install: HOME is not set; pass --bin DIR");
    Deno.exit(2);
  }
  const target = join(bin, "toolgate");
  await Deno.mkdir(bin, { recursive: true });
  await Deno.writeTextFile(target, shimText(Deno.execPath(), ROOT.replace(/\/$/, ""), Deno.version.deno), {
    mode: 0o755,
  });
  await Deno.chmod(target, 0o755);
  console.log(`installed ${target}`);
  const onPath = (Deno.env.get("PATH") ?? "").split(":").includes(bin);
  if (!onPath) console.log(`${bin} is not on your PATH: add it, e.g. export PATH="${bin}:$PATH"`);
}
