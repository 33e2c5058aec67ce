/** The `permissions` command: the least Deno permission flags that let toolgate run this manifest. @module */
import {
  type Command,
  EXIT,
  expectPositionals,
  type Io,
  type ParsedArgs,
  stringOption,
  UsageError,
} from "../cli.ts";
import { DEFAULT_BASE_URL, derivePermissions, toDenoJson, toFlags } from "../permissions.ts";
import { loadForCommand } from "./load.ts";

const FORMATS = ["flags", "json", "deno-json"] as const;

function baseUrl(parsed: ParsedArgs, io: Io): string {
  const url = stringOption(parsed, "base-url") ?? io.env.OAI_BASE_URL ?? DEFAULT_BASE_URL;
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--base-url must be a URL (got ${JSON.stringify(url)})`, "permissions");
  }
  return url;
}

/** `toolgate permissions` */
export const permissionsCommand: Command = {
  name: "permissions",
  summary: "print the least Deno permission flags for running this manifest",
  usage: "toolgate permissions [--format flags|json|deno-json] [--base-url URL] [--absolute]",
  options: {
    format: {
      type: "string",
      value: "FORMAT",
      help: "flags (default), json, or deno-json (a `permissions` set)",
    },
    "base-url": { type: "string", value: "URL", help: "the LLM endpoint whose host:port the set allows" },
    absolute: { type: "boolean", help: "write paths absolute (for a binary run from anywhere)" },
  },
  details: [
    "The set: --allow-read of the manifest's folder, the cwd and toolgate's state folder ($XDG_STATE_HOME/toolgate,",
    "else ~/.local/state/toolgate, as this environment places it), --allow-write of the state folder only,",
    "--allow-run of bwrap, kill and each tool's program, --allow-env of the variables toolgate reads and the",
    "tools' passthrough names, --allow-net of the endpoint's host:port, and --no-prompt.",
    "Regenerate the kept set after changing tools.json: deno task permissions",
  ].join("\n"),
  async run(parsed, io) {
    expectPositionals(parsed, 0, "permissions");
    const format = stringOption(parsed, "format") ?? "flags";
    if (!(FORMATS as readonly string[]).includes(format)) {
      throw new UsageError(
        `--format must be one of ${FORMATS.join(", ")} (got ${JSON.stringify(format)})`,
        "permissions",
      );
    }
    const url = baseUrl(parsed, io);
    const manifest = await loadForCommand(parsed, io);
    if (!manifest) return EXIT.failure;
    const set = derivePermissions({
      manifest,
      baseUrl: url,
      relativeTo: parsed.values.absolute === true ? undefined : io.cwd,
      env: io.env,
    });
    const body = format === "flags"
      ? toFlags(set).join(" ")
      : JSON.stringify(format === "json" ? set : toDenoJson(set), null, 2);
    await io.stdout(body + "\n");
    return EXIT.ok;
  },
};
