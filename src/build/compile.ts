/**
 * `deno task compile [--target TRIPLE]`: builds `dist/toolgate` (or `dist/toolgate-TRIPLE`) with a fixed least
 * permission set and `--no-prompt` baked in (see `flags.ts`).
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { parseArgs } from "node:util";
import { compileFlags, ROOT } from "./flags.ts";

/**
 * One line saying what `deno compile` lacked, when it failed for want of its runtime (`denort`, which it downloads
 * on first use): what that is, where it comes from, and how to hand it over (`DENORT_BIN`). Undefined for any other
 * failure, whose own message is the one to show.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { denortMissing } from "./compile.ts";
 * const stderr = "Download https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip\n" +
 *   "error: Writing deno compile executable\n  1: error sending request for url (https://dl.deno.land/...)";
 * assert.ok(denortMissing(stderr, "2.9.6", "x86_64-unknown-linux-gnu")?.startsWith("toolgate: deno compile needs"));
 * assert.equal(denortMissing("error: Module not found", "2.9.6", "x86_64-unknown-linux-gnu"), undefined);
 * ```
 */
export function denortMissing(colored: string, version: string, target: string): string | undefined {
  // deno colours its words (`error`, `Download`) unless NO_COLOR is set.
  // deno-lint-ignore no-control-regex
  const stderr = colored.replace(/\x1b\[[0-9;]*m/g, "");
  const url = /https:\/\/dl\.deno\.land\/\S*?denort-[\w-]+\.zip/.exec(stderr)?.[0];
  const failed = /error sending request|dns error|failed to lookup|connect|timed out|download/i;
  if (url === undefined && !/denort/i.test(stderr)) return undefined;
  if (!/^error:/m.test(stderr) || !failed.test(stderr.slice(stderr.search(/^error:/m)))) return undefined;
  const from = url ?? `https://dl.deno.land/release/v${version}/denort-${target}.zip`;
  return `toolgate: deno compile needs denort, the Deno runtime compiled programs run on (${version}, ${target}), ` +
    `and could not download it from ${from}: fetch that zip where the network allows, unzip it, and run ` +
    "DENORT_BIN=/path/to/denort deno task compile\n";
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { target: { type: "string" } } });
  const output = join(ROOT, "dist", values.target ? `toolgate-${values.target}` : "toolgate");
  const args = [
    "compile",
    ...compileFlags(output, Deno.env.toObject()),
    "--config",
    join(ROOT, "deno.json"),
    ...(values.target ? ["--target", values.target] : []),
    "--output",
    output,
    join(ROOT, "src", "main.ts"),
  ];
  console.error(`deno ${args.join(" ")}`);
  // deno compile's own output is shown as it comes, and kept: a failure to fetch its runtime is said in one line
  // instead of Deno's download error and its backtrace.
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { NO_COLOR: "1" },
    stdout: "inherit",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  let shown = 0;
  const decoder = new TextDecoder();
  for await (const chunk of child.stderr) {
    stderr += decoder.decode(chunk, { stream: true });
    // Progress lines pass through; from Deno's `error:` on, the text waits until it is known what to say.
    const end = stderr.search(/^error:/m);
    const upTo = end === -1 ? stderr.lastIndexOf("\n") + 1 : end;
    if (upTo > shown) {
      await Deno.stderr.write(new TextEncoder().encode(stderr.slice(shown, upTo)));
      shown = upTo;
    }
  }
  const status = await child.status;
  const hint = status.success
    ? undefined
    : denortMissing(stderr, Deno.version.deno, values.target ?? Deno.build.target);
  await Deno.stderr.write(new TextEncoder().encode(hint ?? stderr.slice(shown)));
  Deno.exit(status.code);
}
