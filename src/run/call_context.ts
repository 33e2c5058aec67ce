/**
 * What the steps of the executor's pipeline share: the executor's options, the workspace, the protected paths,
 * the launcher, the secrets, the audit trail, and the refusal of a prepared call. The executor makes one and hands
 * it to each step (foreground runs, background jobs, the gateway, the pool, the start notes); {@linkcode callContext}
 * wires it from the executor's options (the workspace, the paths tools may not touch, the launcher, the secrets,
 * the audit). Not here: the steps.
 *
 * @module
 */
import { isWithin } from "../contract/relative_path.ts";
import type { FailureEnvelope } from "../contract.ts";
import type { PreparedCall } from "../policy/prepared_call.ts";
import { type ControlPlane, controlPlane } from "../sandbox/control_plane.ts";
import { ToolLauncher } from "../sandbox/tool_launch.ts";
import { prepareDir } from "../state/private_dir.ts";
import { configRoot, stateRoot } from "../state/state.ts";
import { AuditTrail } from "./audit_trail.ts";
import { CallSecrets } from "./call_secrets.ts";
import type { ExecutorOptions } from "./call_options.ts";

/**
 * One executor's shared state, as its steps see it.
 *
 * @example
 * ```ts
 * import type { CallContext } from "./call_context.ts";
 * const workspaceOf = (context: CallContext) => context.workspace;
 * ```
 */
export interface CallContext {
  /** The executor's options, as given. */
  readonly options: ExecutorOptions;
  /** The tools' working directory, resolved. */
  readonly workspace: string;
  /** The paths no tool may change or see. */
  readonly controlPlane: ControlPlane;
  /** Confines and starts the tools' programs. */
  readonly launcher: ToolLauncher;
  /** The secrets, and the redactors of what leaves the executor. */
  readonly secrets: CallSecrets;
  /** The audit lines. */
  readonly trail: AuditTrail;
  /** Records that a prepared call was not run and returns its envelope, as a caller receives it. */
  refuse(call: PreparedCall, envelope: FailureEnvelope): Promise<FailureEnvelope>;
}

function realPathOrUndefined(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Wires one executor's shared state from its options: resolves the workspace, makes the folders the sandbox must
 * hide before any tool runs, protects the control plane (and a hand-given audit folder), and makes the launcher,
 * the secrets and the audit trail. Throws `Deno.errors.NotFound` when the working directory does not exist, and a
 * `SyntaxError` when `TOOLGATE_REDACT` holds a pattern that does not compile.
 *
 * @example
 * ```ts
 * import { callContext } from "./call_context.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const options = { manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null };
 * const context = callContext(options, (_call, envelope) => Promise.resolve(envelope));
 * context.workspace; // the working directory, resolved
 * ```
 */
export function callContext(
  options: ExecutorOptions,
  refuse: (call: PreparedCall, envelope: FailureEnvelope) => Promise<FailureEnvelope>,
): CallContext {
  const clock = options.clock ?? (() => new Date());
  const workspace = Deno.realPathSync(options.cwd);
  if (options.auditDir !== null) prepareDir(options.auditDir);
  if (options.controlPlane === undefined) {
    // The state and config folders (the audit, the secret store) inside the workspace must exist before any tool
    // runs: the sandbox masks what exists, and a tool must not be the one to make them.
    for (const root of [stateRoot, configRoot]) {
      try {
        const dir = root(options.env);
        if (isWithin(dir, workspace)) prepareDir(dir);
      } catch {
        // No HOME: nothing there to hide.
      }
    }
  }
  const plane = options.controlPlane ?? controlPlane(options.manifest, options.env);
  // An audit folder given by hand is hidden from tools as well, wherever it is.
  const audit = options.auditDir === null ? undefined : realPathOrUndefined(options.auditDir);
  const protectedPaths: ControlPlane =
    audit === undefined || plane.hidden.some((path) => isWithin(audit, path))
      ? plane
      : { readOnly: plane.readOnly, hidden: [...plane.hidden, audit] };
  const launcher = new ToolLauncher({
    manifest: options.manifest,
    env: options.env,
    workspace,
    controlPlane: protectedPaths,
    sandbox: options.sandbox,
    bwrap: options.bwrap,
    residentHelpers: options.residentHelpers,
    spawnThread: options.spawnThread,
  });
  const secrets = new CallSecrets(options.env, options.manifest, options.secrets ?? {});
  const trail = new AuditTrail({
    dir: options.auditDir,
    key: options.auditKey,
    env: options.env,
    // Through the secrets: a secret stored during the run is redacted from the next line on.
    redact: (text) => secrets.redact(text),
    onWarning: options.onWarning,
    onAudit: options.onAudit,
    holdOpen: options.keepAuditOpen,
    clock,
    workspace,
    cwd: options.cwd,
  });
  return { options, workspace, controlPlane: protectedPaths, launcher, secrets, trail, refuse };
}
