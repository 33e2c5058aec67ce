/**
 * `deno task compile [--target TRIPLE]`: builds `dist/toolgate` (or `dist/toolgate-TRIPLE`) with a fixed least
 * permission set and `--no-prompt` baked in (see `flags.ts`).
 *
 * @module
 */
import { join } from "../paths.ts";
import { parseArgs } from "node:util";
import { compileFlags, ROOT } from "./flags.ts";

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
  const status = await new Deno.Command(Deno.execPath(), { args, stdout: "inherit", stderr: "inherit" })
    .spawn()
    .status;
  Deno.exit(status.code);
}
