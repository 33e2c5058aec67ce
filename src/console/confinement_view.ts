/**
 * The console's confinement view: what each tool's permission profile gets here (confined, unconfined, refused),
 * what it may write and reach, as `toolgate doctor` computes it (`setup_report.ts`), for the run's own sandbox mode.
 *
 * @module
 */
import { probeSandbox, type SandboxMode } from "../sandbox/sandbox.ts";
import type { PermissionProfile } from "../manifest/profiles.ts";
import { type ProfileOutlook, profileOutlooks } from "../commands/setup_report.ts";

/** What the confinement view shows. */
export interface ConfinementView {
  /** The run's `--sandbox` mode. */
  readonly mode: SandboxMode;
  /** Whether bubblewrap works here, and why not. */
  readonly sandbox: { readonly works: boolean; readonly detail: string };
  readonly profiles: readonly ProfileOutlook[];
}

/**
 * The confinement view of a run's tools (bwrap is probed once, on the first read).
 *
 * @example
 * ```ts ignore
 * import { confinementSource } from "./confinement_view.ts";
 * const view = await confinementSource({ tools: manifest.tools, mode: "auto", env: Deno.env.toObject() })();
 * ```
 */
export function confinementSource(inputs: {
  readonly tools: readonly { readonly name: string; readonly profile: PermissionProfile }[];
  readonly mode: SandboxMode;
  readonly env: Readonly<Record<string, string>>;
}): () => Promise<ConfinementView> {
  let found: Promise<ConfinementView> | undefined;
  return () =>
    found ??= (async () => {
      const { env, mode } = inputs;
      // As the executor finds it: the launcher hands its bwrap over in TOOLGATE_BWRAP.
      const support = await probeSandbox(
        env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
        env.TOOLGATE_BWRAP || "bwrap",
        env,
      );
      const sandbox = support.ok
        ? { works: true, detail: `bubblewrap ${support.bwrap} works` }
        : { works: false, detail: support.reason };
      return { mode, sandbox, profiles: profileOutlooks(inputs.tools, support, mode) };
    })();
}
