/**
 * The console's confinement view: what each tool's permission profile gets here (confined, unconfined, refused),
 * what it may write and reach, as `toolgate doctor` computes it (`setup_report.ts`), for the run's own sandbox mode;
 * an MCP server's tools on a row of their own, beside that server's own profile (what it reads besides).
 *
 * Not here: the page that draws it (`page.ts`), the probe (`sandbox/sandbox.ts`).
 *
 * @module
 */
import { probeSandbox, type SandboxMode, type SandboxSupport } from "../sandbox/sandbox.ts";
import type { PermissionProfile } from "../manifest/profiles.ts";
import { type ProfileOutlook, profileOutlooks } from "../commands/setup_report.ts";
import { describeProfile, outlook } from "../commands/profile_outlook.ts";

/** One row: a profile and the tools it holds; an MCP server's own profile names the server. */
export interface ConfinementRow extends ProfileOutlook {
  /** The MCP server whose profile this is (its tools are `mcp__SERVER__...`); absent: the manifest's tools. */
  readonly server?: string;
}

/** What the confinement view shows. */
export interface ConfinementView {
  /** The run's `--sandbox` mode. */
  readonly mode: SandboxMode;
  /** Whether bubblewrap works here, and why not. */
  readonly sandbox: { readonly works: boolean; readonly detail: string };
  readonly profiles: readonly ConfinementRow[];
}

/** A tool as the view reads it: its profile, and its server when an MCP server serves it. */
export interface ConfinedTool {
  readonly name: string;
  readonly profile: PermissionProfile;
  readonly upstream?: { readonly server: string };
}

/**
 * The rows of `tools`: the manifest's own by profile (as `toolgate doctor` groups them), then one per MCP server,
 * with that server's profile, whatever its name (two servers' inline profiles are two rows, never one).
 *
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { confinementRows } from "./confinement_view.ts";
 * const none = { name: "none", read: [], write: [], net: false, env: [], limits: {} } as never;
 * const fsProfile = { name: "inline", read: ["/opt/srv"], write: ["."], net: false, env: [], limits: {} } as never;
 * const rows = confinementRows([
 *   { name: "get_time", profile: none },
 *   { name: "mcp__fs__read_text_file", profile: fsProfile, upstream: { server: "fs" } },
 * ], { ok: false, reason: "no bwrap" }, "auto");
 * deepEqual(rows.map((r) => [r.profile, r.server, r.runs, r.tools]), [
 *   ["none", undefined, "unconfined", ["get_time"]],
 *   ["inline", "fs", "refused", ["mcp__fs__read_text_file"]],
 * ]);
 * ```
 */
export function confinementRows(
  tools: readonly ConfinedTool[],
  support: SandboxSupport,
  mode: SandboxMode,
): ConfinementRow[] {
  const own = tools.filter((tool) => tool.upstream === undefined);
  const byServer = new Map<string, { profile: PermissionProfile; tools: string[] }>();
  for (const tool of tools) {
    if (tool.upstream === undefined) continue;
    const entry = byServer.get(tool.upstream.server) ?? { profile: tool.profile, tools: [] };
    entry.tools.push(tool.name);
    byServer.set(tool.upstream.server, entry);
  }
  const servers = [...byServer].map(([server, { profile, tools }]): ConfinementRow => ({
    profile: profile.name,
    server,
    tools,
    runs: outlook(profile, support, mode),
    detail: describeProfile(profile) +
      (profile.read.length === 0 ? "" : `; reads ${profile.read.join(", ")}`),
  }));
  return [...profileOutlooks(own, support, mode), ...servers];
}

/**
 * The confinement view of a run's tools, as they are at each read (an MCP server's join once the gateway listed
 * them); bwrap is probed once, on the first read.
 *
 * @example Not run as a doc test: it needs a loaded executor and the host's environment.
 * ```ts ignore
 * import { confinementSource } from "./confinement_view.ts";
 * const view = await confinementSource({ tools: () => executor.manifest.tools, mode: "auto", env })();
 * ```
 */
export function confinementSource(inputs: {
  readonly tools: () => readonly ConfinedTool[];
  readonly mode: SandboxMode;
  readonly env: Readonly<Record<string, string>>;
}): () => Promise<ConfinementView> {
  let probed: Promise<SandboxSupport> | undefined;
  return async () => {
    const { env, mode } = inputs;
    // As the executor finds it: the launcher hands its bwrap over in TOOLGATE_BWRAP.
    const support = await (probed ??= probeSandbox(
      env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      env.TOOLGATE_BWRAP || "bwrap",
      env,
    ));
    const sandbox = support.ok
      ? { works: true, detail: `bubblewrap ${support.bwrap} works` }
      : { works: false, detail: support.reason };
    return { mode, sandbox, profiles: confinementRows(inputs.tools(), support, mode) };
  };
}
