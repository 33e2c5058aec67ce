/**
 * What a person should know before any tool runs, once, at start: tools that run unconfined (and why), limits
 * that cannot hold here, a workspace inside toolgate's own files where a tool could write. Not here: the sandbox's
 * probe (src/sandbox/sandbox.ts), the decision per call (src/sandbox/tool_launch.ts).
 *
 * @module
 */
import { isWithin } from "../contract/relative_path.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { hasSideEffects } from "../manifest/profiles.ts";
import { limitWarnings } from "../sandbox/sandbox.ts";
import { inProcess } from "./builtins.ts";
import type { CallContext } from "./call_context.ts";

/**
 * The notes for `tools` (the tools this run may call); empty when there is nothing to say.
 *
 * @example
 * ```ts ignore
 * // Ignored: a context is the executor's own (src/run/call_context.ts); Executor.startNotes is the public door.
 * for (const note of await startNotes(context, manifest.tools)) console.error(`toolgate: warning: ${note}`);
 * ```
 */
export async function startNotes(context: CallContext, tools: readonly ToolSpec[]): Promise<string[]> {
  const notes: string[] = [];
  // The pool's workers run the tools, under their own sandbox: there is nothing to say of this machine's.
  if (context.options.pool !== undefined) return notes;
  const inside = context.controlPlane.readOnly.find((path) => isWithin(context.workspace, path));
  // Only a tool that could write there loses anything: a read-only one (the README's first call) works as well.
  if (inside !== undefined && tools.some((tool) => tool.profile.write.length > 0)) {
    notes.push(
      `the workspace ${context.workspace} lies inside ${inside}, which belongs to toolgate: tools cannot change ` +
        `anything there; run toolgate from your project's folder (or give --cwd)`,
    );
  }
  const mode = context.options.sandbox ?? "auto";
  if (mode === "off") {
    notes.push("the sandbox is off (--sandbox off): every tool runs unconfined, as you");
    return notes;
  }
  if (mode === "unfiltered") {
    notes.push("the seccomp filter is off (--sandbox unfiltered): confined tools may make every kernel call");
  }
  // A tool answered in toolgate's own process is never confined or unconfined: it starts nothing.
  const processes = tools.filter((tool) => !inProcess(tool));
  if (processes.length === 0) return notes;
  const support = await context.launcher.support();
  if (support.ok && support.seccomp?.ok === false && mode !== "unfiltered") {
    notes.push(
      `the sandbox's seccomp filter cannot be loaded here (${support.seccomp.reason}): confined tools will not ` +
        "run; pass --sandbox unfiltered to run them confined without it",
    );
  }
  if (support.ok) return [...notes, ...limitWarnings(support)];
  if (mode === "require") return notes;
  const loose = processes.filter((tool) => !hasSideEffects(tool.profile)).map((tool) => tool.name);
  const strict = processes.length - loose.length;
  notes.push(
    `tools cannot be confined here (${support.reason}): ` +
      (loose.length > 0 ? `${loose.join(", ")} will run unconfined, as you; ` : "") +
      (strict > 0
        ? `${strict} tool${strict === 1 ? "" : "s"} that can write or reach the network will not run; `
        : "") +
      "pass --sandbox require to run nothing unconfined, or --sandbox off to run every tool unconfined",
  );
  return notes;
}
