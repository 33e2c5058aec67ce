/** The `list` command: the manifest's tools as OpenAI, Anthropic or MCP definitions, or their names. @module */
import { choiceOption, type Command, EXIT, expectPositionals } from "./cli.ts";
import { EXPORT_FORMATS, type ExportFormat, exportTools } from "../manifest/tool_definitions.ts";
import { loadForCommand, manifestLocationOf, workspaceOf } from "./load.ts";
import { passGate, UntrustedManifest } from "./trust_gate.ts";
import { executorFromArgs, executorSettings } from "./executor_options.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import { visible } from "../base/text.ts";

/** `toolgate list` */
export const listCommand: Command = {
  name: "list",
  summary: "print the tool definitions",
  usage: "toolgate list [--format openai|anthropic|mcp|names]",
  options: {
    format: {
      type: "string",
      value: "FORMAT",
      help: "openai (default), anthropic, mcp, or names (one a line)",
    },
  },
  async run(parsed, io) {
    // A stray word is a mistake (a misspelled flag, a path without --tools), not something to ignore.
    expectPositionals(parsed, 0, "list");
    const format = choiceOption(parsed, "format", EXPORT_FORMATS, "openai", "list");
    let manifest = await loadForCommand(parsed, io);
    if (!manifest) return EXIT.failure;
    // The MCP servers' tools are listed by the servers themselves: they start (confined) only for a trusted manifest.
    let close: (() => Promise<void>) | undefined;
    if ((manifest.servers ?? []).length > 0) {
      let trusted = true;
      try {
        await passGate(manifestLocationOf(parsed, io), io, false, workspaceOf(parsed, io));
      } catch (error) {
        if (!(error instanceof UntrustedManifest)) throw error;
        trusted = false;
        await io.stderr(
          "toolgate: the MCP servers' tools are not listed: the manifest is not trusted (toolgate trust)\n",
        );
      }
      if (trusted) {
        const settings = { ...await executorSettings(parsed, io, "list"), auditDir: null };
        const { executor } = await executorFromArgs(parsed, io, manifest, "list", settings, { jobs: false });
        manifest = executor.manifest;
        close = () => executor.close();
        // stdout stays the definitions alone; the person reads on stderr where each gateway tool comes from.
        for (const line of serverLines(manifest)) await io.stderr(`toolgate: ${line}\n`);
      }
    }
    await close?.();
    const exported = exportTools(manifest, format as ExportFormat);
    const body = format === "names"
      ? exported.map((name) => `${name}\n`).join("")
      : JSON.stringify(exported, null, 2) + "\n";
    await io.stdout(body);
    return EXIT.ok;
  },
};

/**
 * One line per MCP server whose tools are listed: which tools come from it, and what it runs.
 *
 * @example
 * ```ts ignore
 * serverLines(executor.manifest);
 * // ['MCP server "fs" (node /srv/fs/index.js .): mcp__fs__read_text_file, mcp__fs__write_file']
 * ```
 */
export function serverLines(manifest: Manifest): string[] {
  return (manifest.servers ?? []).flatMap((server) => {
    const names = manifest.tools.filter((tool) => tool.upstream?.server === server.name).map((tool) =>
      tool.name
    );
    if (names.length === 0) return [];
    const runs = server.url ?? [server.command ?? "", ...server.args].join(" ");
    return [`MCP server ${JSON.stringify(server.name)} (${visible(runs)}): ${names.join(", ")}`];
  });
}
