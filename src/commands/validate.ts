/** The `validate` command: checks every rule of the manifest and compiles every schema; `--lint` lints it too. @module */
import { type Command, EXIT, expectPositionals, flag } from "./cli.ts";
import { reportLint, STRICT_OPTION } from "./lint.ts";
import { loadForCommand, manifestPath } from "./load.ts";
import type { Io } from "./cli.ts";
import type { ServerSpec } from "../manifest/server_spec.ts";

/** Checks the manifest's MCP servers (`server_checks.ts`): prints errors and warnings; whether none is an error. */
async function serversHold(servers: readonly ServerSpec[], io: Io): Promise<boolean> {
  const { serverOutlooks } = await import("./server_checks.ts");
  const seen = serverOutlooks(servers, { env: io.env, readEnv: io.readEnv, cwd: io.cwd });
  const lines = [
    ...seen.flatMap((s) => s.errors).map((e) => `${e.problem} (${e.fix})`),
    ...seen.flatMap((s) => s.warnings).map((w) => `warning: ${w.problem} (${w.fix})`),
  ];
  if (lines.length > 0) await io.stderr(lines.join("\n") + "\n");
  return seen.every((s) => s.errors.length === 0);
}

/** `toolgate validate` */
export const validateCommand: Command = {
  name: "validate",
  summary: "check the manifest: every rule, every schema compiled, every program there",
  usage: "toolgate validate [--lint [--strict]] [--tools PATH]",
  options: {
    lint: { type: "boolean", help: "also check the tools against the design rules (as `toolgate lint`)" },
    strict: { ...STRICT_OPTION, help: "exit 1 when the lint has any finding (implies --lint)" },
  },
  details: [
    "Prints one summary line when the manifest is valid; otherwise every error, one per line, on stderr.",
    "Each tool's program must exist and be a regular executable file (inside ./tools/bin unless absolute).",
    "Each MCP server's program must be found (on PATH, or at its path); a path its arguments name that does not",
    "exist, a secret it names that is neither stored nor in the environment, or an npx/uvx entry is a warning.",
    "With --lint, the lint's findings and its summary line follow the first line.",
  ].join("\n"),
  async run(parsed, io) {
    // A stray word is a mistake (a misspelled flag, a path without --tools), not something to ignore.
    expectPositionals(parsed, 0, "validate");
    const manifest = await loadForCommand(parsed, io, { compileSchemas: true, checkPrograms: true });
    if (!manifest) return EXIT.failure;
    const path = manifestPath(parsed, io);
    const servers = manifest.servers ?? [];
    if (servers.length > 0 && !await serversHold(servers, io)) return EXIT.failure;
    const count = manifest.tools.length;
    const serverCount = servers.length === 0
      ? ""
      : `, ${servers.length} MCP server${servers.length === 1 ? "" : "s"}`;
    await io.stdout(`${path}: valid, ${count} tool${count === 1 ? "" : "s"}${serverCount}\n`);
    const strict = flag(parsed, "strict");
    return flag(parsed, "lint") || strict ? await reportLint(manifest, path, io, strict) : EXIT.ok;
  },
};
