/**
 * A call the executor has prepared (looked up and preflighted), in a module of its own: the executor hands it
 * out and the approval policy judges it, and neither has to import the other for its type.
 *
 * @module
 */
import type { FailureEnvelope } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";

/**
 * A call that passed lookup and preflight: what the caller approves, then runs.
 *
 * @example
 * ```ts
 * import { Executor } from "../run/executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const prepared = await executor.prepare("fs_write_file", '{"path":"a.txt","content":"hi"}');
 * if (prepared.ok) console.log(prepared.call.tool.readOnly, prepared.call.args);
 * ```
 */
export interface PreparedCall {
  /** The tool the call names. */
  readonly tool: ToolSpec;
  /** The checked, coerced arguments. */
  readonly args: Readonly<Record<string, unknown>>;
  /** The arguments as the caller sent them (digested with the audit key for the log, never written). */
  readonly argsText: string;
}

/**
 * The verdict of {@linkcode Executor.prepare}.
 *
 * @example
 * ```ts
 * import { failure } from "../contract.ts";
 * import { Executor } from "../run/executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const prepared = await executor.prepare("fs_remove", '{"path":"build"}');
 * const envelope = !prepared.ok
 *   ? prepared.envelope
 *   : prepared.call.tool.readOnly
 *   ? await executor.run(prepared.call)
 *   : await executor.refuse(prepared.call, failure("user_denied", "The user said no."));
 * ```
 */
export type Prepared = { ok: true; call: PreparedCall } | { ok: false; envelope: FailureEnvelope };
