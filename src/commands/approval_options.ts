/**
 * The approval options the agent loop and `serve` share (`--yes`, `--allow-tools`, `--approve-hosts`), checked
 * against the manifest, so that both commands hand the one policy the same settings.
 *
 * @module
 */
import { flag, type OptionSpec, type ParsedArgs, UsageError } from "./cli.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import { type HostEntry, parseHostList } from "../contract/host_list.ts";

/** The approval options of a command that runs calls a model or a client chose. */
export const APPROVAL_OPTIONS: Record<string, OptionSpec> = {
  yes: {
    type: "boolean",
    short: "y",
    help: "approve every call that needs approval (writes, programs, network)",
  },
  "allow-tools": {
    type: "string",
    multiple: true,
    value: "A,B",
    help: "approve every call of these tools (repeatable)",
  },
  "approve-hosts": {
    type: "string",
    multiple: true,
    value: "H,H",
    help: "approve http_fetch calls to these hosts (host or host:port; repeatable); " +
      "TOOLGATE_FETCH_ALLOW_HOSTS approves nothing",
  },
};

/** What a person approved on the command line. */
export interface ApprovalSettings {
  readonly yes: boolean;
  readonly allowTools: readonly string[];
  readonly approveHosts: readonly HostEntry[];
}

function values(parsed: ParsedArgs, name: string): string[] {
  const raw = parsed.values[name];
  return (Array.isArray(raw) ? raw : typeof raw === "string" ? [raw] : [])
    .flatMap((value) => value.split(","))
    .map((value) => value.trim())
    .filter((value) => value !== "");
}

/**
 * Reads and checks the approval options; throws {@linkcode UsageError}. A tool name the manifest does not have is
 * a mistake (a typo would deny silently), and so is a host that is not one.
 *
 * @example Not run as a doc test: a fragment of a command, with its parsed command line and manifest in scope.
 * ```ts ignore
 * import { approvalSettings } from "./approval_options.ts";
 * const approval = approvalSettings(parsed, manifest, "run"); // { yes: false, allowTools: ["fs_write_file"], approveHosts: [] }
 * ```
 */
export function approvalSettings(parsed: ParsedArgs, manifest: Manifest, command: string): ApprovalSettings {
  const allowTools = values(parsed, "allow-tools");
  for (const name of allowTools) {
    // A server's tools are known once it runs: `mcp__SERVER__TOOL` and `mcp__SERVER__*` need only the server.
    const server = /^mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__./.exec(name)?.[1];
    if (server !== undefined && (manifest.servers ?? []).some((s) => s.name === server)) continue;
    if (!manifest.byName.has(name)) {
      throw new UsageError(
        `--allow-tools names ${JSON.stringify(name)}, which the manifest does not have`,
        command,
      );
    }
  }
  let approveHosts: HostEntry[];
  try {
    approveHosts = parseHostList(values(parsed, "approve-hosts").join(","));
  } catch (error) {
    throw new UsageError(`--approve-hosts: ${(error as Error).message}`, command);
  }
  return { yes: flag(parsed, "yes"), allowTools, approveHosts };
}
