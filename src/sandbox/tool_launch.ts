/**
 * How one tool call's process starts: inside bubblewrap (with the call's cgroups and, for a profile that names
 * hosts, the egress proxy), unconfined where the sandbox mode allows it, or not at all (a refusal envelope). The
 * sandbox mode is decided here and nowhere else; the executor asks for a launch and runs what it gets, and ends
 * the call's tree the way the launch says (its cgroup, its pid namespace).
 *
 * One piece: every decision about how a call is confined (the mode, the probe's findings, the program's needs,
 * the egress proxy and credentials, cgroups and gates, how its tree ends) has this one owner (house rule 4), so
 * that no other module can build a sandbox command line.
 *
 * @module
 */
import { dirname, isAbsolute, isWindowsAbsolute, join, resolve } from "../base/paths.ts";
import { isWithin } from "../contract/relative_path.ts";
import { CgroupSlots, type CgroupSupport, cgroupWrapper } from "./cgroups.ts";
import { cgroupTreeEnd, reapLeftCgroups } from "./cgroup_end.ts";
import { namespaceTreeEnd } from "./namespace_end.ts";
import { CgroupWatch } from "./cgroup_watch.ts";
import { findProgram } from "../base/find_program.ts";
import type { TreeEnd } from "../process/tree_end.ts";
import { GATE, gateWrapper } from "./gate.ts";
import { machineArch, seccompFilter } from "./seccomp_filter.ts";
import { filterRefusalNote } from "./seccomp_notes.ts";
import { egressDenials, filterDenials } from "./call_denials.ts";
import { SECCOMP_FD, seccompWrapper, writeSeccompFile } from "./seccomp_file.ts";
// The egress proxy and the run's CA load at the first call whose profile names hosts: other calls never pay.
import type { EgressProxy } from "./egress_proxy.ts";
import type { EgressDecision } from "./proxy_settings.ts";
import { proxySocketPath, socketPathProblem, UPSTREAM_CA_ENV } from "./proxy_settings.ts";
import { BRIDGE_PORT, BRIDGE_QUIET } from "./net_bridge.ts";
import { type Denial, failure, type FailureEnvelope } from "../contract.ts";
import { type ControlPlane } from "./control_plane.ts";
import { escapesBinDir } from "../manifest/bin_listing.ts";
import type { Manifest, ToolSpec } from "../manifest/manifest_types.ts";
import { type SandboxView, startFailure } from "../process/run_envelope.ts";
import { hasSideEffects } from "../manifest/profiles.ts";
import { startProblem } from "../process/start_problem.ts";
import { groupLauncher } from "../process/process_tree.ts";
import { SpawnPool } from "../process/spawn_pool.ts";
import { bwrapArgs } from "./bwrap_args.ts";
import {
  confinedStartLine,
  findSessionStart,
  gatedInside,
  sessionStartLine,
  STARTER_FD,
} from "./session_start.ts";
import {
  detectCgroupsCached,
  probeSandboxCached,
  type SandboxMode,
  type SandboxSupport,
  unconfinedWarning,
} from "./sandbox.ts";
import { stateRoot } from "../state/state.ts";
import { beltLaunch, BRIDGE_SOCKET, bridgeLaunch } from "../manifest/tool_belt.ts";
import { prepareDir } from "../state/private_dir.ts";
import { type NeedsContext, programNeeds, sandboxView } from "./program_needs.ts";
import { ProgramHeads } from "./program_heads.ts";
import { untrustedStart } from "../manifest/trust_check.ts";
import type { CallCredential } from "../manifest/credentials.ts";

/** Where a call with bound credentials finds the CA bundle it trusts (the system's CAs and the run's). */
export const CA_BUNDLE_INSIDE = "/tmp/.toolgate-ca.pem";

/** The PATH of a tool whose parent environment has none. */
export const FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin";

/** Where a proxied tool finds the egress proxy: the bridge inside its sandbox. */
export const PROXY_ENV: Readonly<Record<string, string>> = {
  HTTP_PROXY: `http://127.0.0.1:${BRIDGE_PORT}`,
  HTTPS_PROXY: `http://127.0.0.1:${BRIDGE_PORT}`,
  http_proxy: `http://127.0.0.1:${BRIDGE_PORT}`,
  https_proxy: `http://127.0.0.1:${BRIDGE_PORT}`,
  ALL_PROXY: `http://127.0.0.1:${BRIDGE_PORT}`,
  // Node from 22.21 and 24.5 on: its fetch and https honour the variables above (older ones ignore them).
  NODE_USE_ENV_PROXY: "1",
};

/** A call's seccomp filter: the shell that opens it for bwrap, and bwrap's options that load it. */
interface Filter {
  readonly ok: true;
  readonly wrapper: readonly string[];
  readonly args: readonly string[];
  /** The program's file, which the session starter opens as bwrap's descriptor in the shell's stead. */
  readonly file?: string;
  /** Said in the envelope and the audit line: a call confined without the filter. */
  readonly said?: {
    readonly envelopeWarnings?: readonly string[];
    readonly auditWarnings?: readonly string[];
  };
}

/** What a call run under `--sandbox unfiltered` says, in its envelope and its audit line. */
const UNFILTERED_WARNING =
  "confined without the seccomp filter (--sandbox unfiltered): the kernel calls it refuses are open to the tool";

/** `--sandbox unfiltered`: confined as ever, without the seccomp filter, and said so. */
const UNFILTERED: Filter = {
  ok: true,
  wrapper: [],
  args: [],
  said: { envelopeWarnings: [UNFILTERED_WARNING], auditWarnings: [UNFILTERED_WARNING] },
};

/** How a tool's own program starts, before any confinement: a built-in one through toolgate's runtime. */
export interface Program {
  readonly program: string;
  readonly args: readonly string[];
  /** What the tool must see inside the sandbox: its program, or the runtime and code of a built-in tool. */
  readonly files: readonly string[];
}

/** How one call starts, when it may. */
export interface Launch {
  readonly ok: true;
  readonly program: string;
  readonly args: readonly string[];
  /** Inside bwrap: ending it ends the whole tree. */
  readonly confined: boolean;
  /**
   * How the call's whole tree ends (through its cgroup, else, confined, its pid namespace), and when nothing of it
   * is left; absent unconfined without a cgroup, where the process group is all toolgate has.
   */
  readonly tree?: TreeEnd;
  /** Warnings for the model (an unconfined run it should know of). */
  readonly envelopeWarnings: readonly string[];
  /** Warnings for the audit line (anything looser than the defaults). */
  readonly auditWarnings: readonly string[];
  /** Forgets the call at the egress proxy (a profile that names hosts) when it ends. */
  readonly unregister?: () => void;
  /**
   * A confined call's note for the model when its failure (`message` and stderr) reads like a refusal of the
   * seccomp filter; `undefined` when it does not.
   */
  readonly filterNote?: (failure: string) => string | undefined;
  /**
   * A confined call's denials, read once it ended (`call_denials.ts`): the egress proxy's refusals (exact), and,
   * under the seccomp filter, the filter's refusals its failure text (`message` and stderr) reports (`inferred`).
   */
  readonly denials?: (failure: string | undefined) => Denial[];
  /** The call's cgroup slot, given back when it ends. */
  readonly slot?: string;
  /**
   * An unconfined call's own start in front of its program, where it is not setsid(1): the session starter's
   * line (session_start.ts), which makes the session and joins the slot in one exec.
   */
  readonly groupStart?: readonly string[];
  /** What the proxy let through or refused, for the audit line. */
  readonly egress?: EgressDecision[];
  /** Variables the call's environment gets besides its own: credentials' placeholders, the CA bundle. */
  readonly env?: Readonly<Record<string, string>>;
  /** A gated start's gate (src/sandbox/gate.ts): the caller writes it before anything else on stdin. */
  readonly gate?: Uint8Array;
  /**
   * Nothing of the tool runs before its stdin speaks (gated, or a built-in tool, which reads its arguments first)
   * and nothing in the start is this call's alone (an egress token): it may be started ahead of its call.
   */
  readonly startsAhead?: boolean;
  /** A confined manifest tool's sandbox, to tell a path it did not find (`process/run_envelope.ts`). */
  readonly view?: SandboxView;
}

/** A launch, or the envelope that says why the call does not start. */
export type LaunchVerdict = Launch | { readonly ok: false; readonly envelope: FailureEnvelope };

/** What a {@linkcode ToolLauncher} confines tools to. */
export interface ToolLauncherOptions {
  /** The manifest the tools come from (its folder, its `tools/bin`). */
  readonly manifest: Manifest;
  /** The parent environment: its PATH finds bwrap, its HOME the state folder. */
  readonly env: Readonly<Record<string, string>>;
  /** The workspace (a real path): the tools' working directory, and what a profile may write. */
  readonly workspace: string;
  /** The protected paths, laid read-only or hidden over whatever a profile allows. */
  readonly controlPlane: ControlPlane;
  /** `auto` (the default), `require` or `off`. */
  readonly sandbox?: SandboxMode;
  /** The bubblewrap program (default `bwrap`). */
  readonly bwrap?: string;
  /**
   * Keep one helper shell that tells, at a call's end, whether its cgroup is empty (cgroup_watch.ts), instead
   * of a shell per call; for a caller that closes the launcher ({@linkcode ToolLauncher.close}).
   */
  readonly residentHelpers?: boolean;
  /**
   * Start the tools from threads of their own (`src/process/spawn_pool.ts`: two, one on a machine of one core),
   * made now and ended by {@linkcode ToolLauncher.close}: for a long-lived command that runs calls at once
   * (`serve`, a pool's `worker`).
   */
  readonly spawnThread?: boolean;
}

/**
 * Starts tools the way their profile and the sandbox mode say, holding what lives longer than one call: the probe
 * of bubblewrap, the egress proxy, the cgroup slots.
 *
 * @example
 * ```ts ignore
 * const launcher = new ToolLauncher({ manifest, env, workspace, controlPlane, sandbox: "auto" });
 * const launch = await launcher.launch(tool);
 * if (launch.ok) {
 *   // run launch.program with launch.args, then:
 *   launcher.release(launch);
 * }
 * ```
 */
export class ToolLauncher {
  readonly #options: ToolLauncherOptions;
  /** The manifest whose pins hold at the next launch ({@linkcode ToolLauncher.useManifest}). */
  #manifest: Manifest;
  #support?: Promise<SandboxSupport>;
  #proxy?: EgressProxy;
  #proxyStart?: Promise<EgressProxy>;
  #bundle?: Promise<string>;
  /** The seccomp filter of each network kind (without, with), written once per launcher. */
  readonly #filters = new Map<boolean, Promise<Filter | { readonly ok: false; readonly reason: string }>>();
  readonly #slots = new CgroupSlots();
  #groupLauncher?: readonly string[];
  /** The real path of the manifest's `tools/bin`, resolved once per folder. */
  #binReal?: { readonly dir: string; readonly real: string };
  /** The session starter (session_start.ts), once looked for. */
  #starter?: { readonly path?: string };
  /** The shell that ends a confined call's pid namespace, looked up once. */
  #shell?: string;
  /** What toolgates that are gone left in their call cgroups, ended once, at this launcher's first cgroup. */
  #reaped = false;
  /** Where unconfined calls' cgroups go (`undefined` inside: nowhere), once looked for. */
  #tracking?: { readonly cgroups?: CgroupSupport };
  /** The first lines of the programs its calls start, read again only when a file changed. */
  readonly #heads = new ProgramHeads();
  /** Each tool's own files ({@linkcode ToolLauncher.program}), by tool. */
  readonly #files = new WeakMap<ToolSpec, string[]>();
  /** The helper shell that tells whether a call's cgroup is empty ({@linkcode ToolLauncherOptions.residentHelpers}). */
  #watch?: CgroupWatch;

  constructor(options: ToolLauncherOptions) {
    this.#options = options;
    this.#manifest = options.manifest;
    if (options.spawnThread) this.spawner = new SpawnPool();
  }

  /** Where the calls' processes start ({@linkcode ToolLauncherOptions.spawnThread}); absent: on the caller's thread. */
  readonly spawner?: SpawnPool;

  /**
   * The manifest a re-trust put in place of this launcher's (the same file, its content trusted again): its
   * programs and code run as that trust pinned them, from the next launch on; a launch already made keeps its own.
   */
  useManifest(manifest: Manifest): void {
    this.#manifest = manifest;
  }

  /** Whether tools can be confined here; probed once per launcher, with the very bwrap that will run them. */
  support(): Promise<SandboxSupport> {
    return this.#support ??= probeSandboxCached(
      this.#options.env.PATH ?? FALLBACK_PATH,
      this.#options.bwrap ?? "bwrap",
      this.#options.env,
      this.#stateDir(),
    );
  }

  /**
   * How an unconfined launch starts a process-group leader (none inside bwrap): its own start where it has one
   * (the session starter), else setsid(1), looked up once.
   */
  groupLauncher(launch: Launch): readonly string[] {
    if (launch.confined) return [];
    return launch.groupStart ?? (this.#groupLauncher ??= groupLauncher());
  }

  /** A cgroup slot for a call, the first one ending first what toolgates that are gone left behind. */
  async #slot(cgroups: CgroupSupport): Promise<string> {
    if (!this.#reaped) {
      this.#reaped = true;
      // One small shell, once per launcher: a slot this run takes is never one a dead run left populated.
      await reapLeftCgroups(cgroups);
    }
    return this.#slots.take();
  }

  /** The resident helper of `cgroups`' tree ends, where the options keep one. */
  #watchOf(cgroups: CgroupSupport): CgroupWatch | undefined {
    if (!this.#options.residentHelpers) return undefined;
    return this.#watch ??= new CgroupWatch(cgroups.shell);
  }

  /** Ends the resident helper, if one was started (the next call would start it again). */
  async close(): Promise<void> {
    await this.#watch?.close();
    await this.spawner?.close();
  }

  /** The call's tree is gone: its egress token and its cgroup slot are free for the next call. */
  release(launch: Launch): void {
    launch.unregister?.();
    if (launch.slot !== undefined) this.#slots.give(launch.slot);
  }

  /** The tool's own program: a built-in tool through toolgate's runtime, any other as the manifest says. */
  program(tool: ToolSpec): Program {
    if (tool.builtin !== undefined) return beltLaunch(tool.builtin);
    return { program: tool.program, args: tool.args, files: this.#toolFiles(tool) };
  }

  /**
   * What a manifest tool must see of its own: the manifest's `tools/` folder, or an absolute program itself. Worked
   * out once per tool: both come from the loaded manifest, which a change replaces whole (new tools, a new launcher).
   */
  #toolFiles(tool: ToolSpec): string[] {
    let files = this.#files.get(tool);
    if (files === undefined) {
      const toolsDir = join(this.#manifest.dir, "tools");
      files = isWithin(tool.program, toolsDir) ? [toolsDir] : [tool.program];
      this.#files.set(tool, files);
    }
    return files;
  }

  /**
   * How to start a tool (or, for a background job, `own`: what the job runs under the tool's profile): inside
   * bwrap, unconfined (a tool without side effects, or `--sandbox off`), or not. `gated`: the caller writes the
   * launch's `gate`, if it has one, before the tool's stdin.
   */
  async launch(
    tool: ToolSpec,
    own: Program = this.program(tool),
    credentials: readonly CallCredential[] = [],
    gated = false,
  ): Promise<LaunchVerdict> {
    const refused = (kind: "rejected" | "unavailable", message: string) => ({
      ok: false as const,
      envelope: failure(kind, message, { tool: tool.name, retryable: false }),
    });
    if (tool.builtin === undefined && !tool.present) {
      // A program that appeared after the manifest was loaded may have been planted by a tool: not run.
      return refused(
        "unavailable",
        `The tool cannot start: the program ${tool.program} did not exist when toolgate loaded the manifest ` +
          `(\`toolgate validate\` names every such program); one put in place later runs once toolgate ` +
          `starts again.`,
      );
    }
    // A trusted manifest's program and the code its command line names run only as the user trusted them.
    const untrusted = await untrustedStart(this.#manifest, tool, this.#options.workspace);
    if (untrusted !== undefined) return refused("rejected", untrusted);
    const outside = this.#escapedBin(tool);
    if (outside !== undefined) {
      return refused(
        "rejected",
        `The tool's program now resolves outside ./tools/bin (-> ${outside}); it was not run.`,
      );
    }
    const mode = this.#options.sandbox ?? "auto";
    if (mode === "off") return await this.#unconfined(tool, own, [], [unconfinedWarning("off")], gated);
    const support = await this.support();
    if (!support.ok) {
      if (mode === "require") {
        return refused(
          "unavailable",
          `The tool cannot be confined here and --sandbox require is set: ${support.reason}.`,
        );
      }
      if (hasSideEffects(tool.profile)) {
        return refused(
          "unavailable",
          `The tool cannot be confined here (${support.reason}), and its profile "${tool.profile.name}" lets ` +
            `it write or reach the network, so it does not run unconfined. The user can rerun toolgate with ` +
            `--sandbox off to run it unconfined, as themselves.`,
        );
      }
      const warning = unconfinedWarning("auto", support.reason);
      return await this.#unconfined(tool, own, [warning], [warning], gated);
    }
    // The probe tried the filter: where bwrap cannot load it, a confined call is refused before anything starts
    // (fail closed), unless the person named the degraded mode.
    if (mode !== "unfiltered" && support.seccomp?.ok === false) {
      return refused(
        "unavailable",
        `The tool cannot start: the sandbox's seccomp filter cannot be loaded on this machine ` +
          `(${support.seccomp.reason}), and a confined call does not run without it. The user can rerun toolgate ` +
          `with --sandbox unfiltered (confined, without the filter) or --sandbox off.`,
      );
    }
    // bwrap reports a missing program as its own failure; say it the way an unconfined start would.
    const problem = tool.builtin === undefined ? startProblem(own.program) : undefined;
    if (problem !== undefined) return { ok: false, envelope: startFailure(problem, tool.name, own.program) };
    if (tool.builtin === undefined && !tool.profile.read.includes("/")) {
      // A program run by an interpreter or runtime outside the system folders (pyenv, nvm, ~/.deno): shown too.
      const needs = programNeeds(own.program, this.#needsContext(tool, own, support), this.#heads);
      if (!needs.ok) {
        return refused(
          "unavailable",
          `The tool's program needs ${needs.program}, which is not visible inside its sandbox (${needs.reason}); ` +
            `it was not run. To run it confined, add the folder that holds it to the "read" list of the tool's ` +
            `permission profile "${tool.profile.name}" (it is then shown read-only).`,
        );
      }
      // A file inside a folder now shown is shown with it (bwrap cannot bind a file into a read-only bind).
      const files = own.files.filter((file) =>
        !needs.binds.some((bind) => bind !== file && isWithin(file, bind))
      );
      own = { ...own, files: [...files, ...needs.binds] };
    }
    const cgroups = support.cgroups;
    // A profile that names hosts reaches them through a filtering proxy, the call's only way out.
    let unregister: (() => void) | undefined;
    const egress: EgressDecision[] = [];
    let inner = own;
    let caFile: string | undefined;
    let extraEnv: Record<string, string> | undefined;
    if (Array.isArray(tool.profile.net)) {
      let proxy: EgressProxy;
      try {
        proxy = this.#proxy ??= await (this.#proxyStart ??= this.#startProxy());
      } catch (error) {
        this.#proxyStart = undefined;
        return refused("unavailable", `The tool's egress proxy cannot start: ${(error as Error).message}.`);
      }
      if (credentials.length > 0) {
        try {
          caFile = await this.#caBundle(proxy);
        } catch (error) {
          return refused(
            "unavailable",
            `The tool's credentials cannot be set up: ${(error as Error).message}.`,
          );
        }
        const { CA_BUNDLE_VARIABLES } = await import("./run_ca.ts");
        extraEnv = Object.fromEntries([
          ...credentials.map((c) => [c.binding.env, c.placeholder]),
          ...CA_BUNDLE_VARIABLES.map((name) => [name, CA_BUNDLE_INSIDE]),
        ]);
      }
      if (!tool.envPassthrough.includes(BRIDGE_QUIET.name)) {
        extraEnv = { ...extraEnv, [BRIDGE_QUIET.name]: BRIDGE_QUIET.value };
      }
      const registered = proxy.register(tool.profile.net, (decision) => egress.push(decision), credentials);
      unregister = registered.unregister;
      const bridge = bridgeLaunch();
      inner = {
        program: bridge.program,
        args: [...bridge.args, registered.token, own.program, ...own.args],
        files: [...own.files, ...bridge.files],
      };
    }
    // A second wall under the namespaces: the seccomp filter, for the profile's network kind (none where the
    // person named the degraded mode, and the envelope says so).
    const filter = mode === "unfiltered" ? UNFILTERED : await this.#filter(tool.profile.net !== false);
    if (!filter.ok) {
      return refused(
        "unavailable",
        `The tool cannot start: its seccomp filter cannot be set up (${filter.reason}), and a confined call ` +
          "does not run without it.",
      );
    }
    // A built-in tool reads its arguments before anything else: it needs no gate.
    const gate = gated && tool.builtin === undefined;
    // The session starter, where it is built, is the one program in front of bwrap (no shell: it sets up the
    // cgroups and rlimits and opens the filter's file; the cgroup's shell and the seccomp shell took two shells'
    // starts, about 0.65 ms of CPU each under load), and the call's gate is inside the sandbox: bwrap gets the
    // starter on a descriptor and runs it there, at the gate, so that the sandbox is set up before the go.
    const starter = this.#starterPath();
    const inside = gate && starter !== undefined ? gatedInside(inner.program, inner.args) : inner;
    const args = bwrapArgs(support, {
      program: inside.program,
      args: inside.args,
      cwd: this.#options.workspace,
      profile: tool.profile,
      files: inner.files,
      controlPlane: this.#options.controlPlane,
      cgroupLimits: cgroups &&
        { processes: cgroups.pids !== undefined, memory: cgroups.memory !== undefined },
      proxy: unregister && this.#proxy && { socket: this.#proxy.socket, inside: BRIDGE_SOCKET },
      caBundle: caFile === undefined ? undefined : { file: caFile, inside: CA_BUNDLE_INSIDE },
    });
    // With cgroups, the first process sets up and joins the call's cgroups, then becomes bwrap.
    const slot = cgroups ? await this.#slot(cgroups) : undefined;
    const front = starter !== undefined
      ? confinedStartLine(
        starter,
        cgroups && slot ? { support: cgroups, limits: tool.profile.limits, slot } : undefined,
        [
          ...filter.file === undefined ? [] : [{ fd: SECCOMP_FD, file: filter.file }],
          ...gate ? [{ fd: STARTER_FD, file: starter }] : [],
        ],
      )
      : cgroups && slot
      ? [...cgroupWrapper(cgroups, tool.profile.limits, slot, gate), ...filter.wrapper]
      : [...(gate ? gateWrapper() : []), ...filter.wrapper];
    // The starter stays in front of bwrap until the sandbox's namespace is gone: its exit is the tree's end.
    const stays = starter !== undefined;
    const tree = cgroups && slot
      ? cgroupTreeEnd(cgroups, slot, this.#watchOf(cgroups), stays)
      : namespaceTreeEnd(this.#shell ??= findProgram("sh", "/bin:/usr/bin") ?? "/bin/sh", stays);
    return {
      ok: true,
      program: [...front, support.bwrap][0],
      args: [...front, support.bwrap].slice(1).concat(filter.args, args),
      confined: true,
      tree,
      envelopeWarnings: [],
      auditWarnings: [],
      filterNote: filterRefusalNote,
      denials: (failure: string | undefined) => [
        ...egressDenials(egress),
        ...(failure === undefined || mode === "unfiltered"
          ? []
          : filterDenials(failure, tool.profile.net !== false)),
      ],
      unregister,
      egress,
      slot,
      env: extraEnv,
      // The degraded mode's warnings, for the model and the audit line.
      ...filter.said,
      gate: gate ? GATE : undefined,
      startsAhead: unregister === undefined && (gate || tool.builtin !== undefined),
      view: tool.builtin === undefined
        ? sandboxView(this.#needsContext(tool, own, support), tool.profile.read)
        : undefined,
    };
  }

  /**
   * An unconfined start (the user's `--sandbox off`, or a tool without side effects where bwrap cannot run): as
   * the tool's command says, inside a cgroup of its own where toolgate may make one. The cgroup sets no limit; it
   * holds the call's tree, so that a process that left the call's process group or session (setsid) ends with it.
   * The session starter, where it is built, does the same with a cgroup or without one: it stays as the tool's
   * parent and kills what the tool left (`-s -x`). `gated`: the start waits at the call's gate where it has a
   * start of its own in front of the tool (the session starter, or the cgroup's shell).
   */
  async #unconfined(
    tool: ToolSpec,
    own: Program,
    envelopeWarnings: readonly string[],
    auditWarnings: readonly string[],
    gated: boolean,
  ): Promise<LaunchVerdict> {
    const plain = { ok: true as const, program: own.program, args: own.args, confined: false };
    const cgroups = this.#trackingCgroups();
    // One exec in front of the tool where the session starter is built, else setsid(1) and the cgroup's shell.
    const starter = this.#starterPath();
    // A built-in tool reads its arguments before anything else: it needs no gate.
    const gate = gated && tool.builtin === undefined ? GATE : undefined;
    if (cgroups === undefined) {
      if (starter === undefined) return { ...plain, envelopeWarnings, auditWarnings };
      const groupStart = sessionStartLine(starter, undefined, gate !== undefined);
      return { ...plain, groupStart, gate, envelopeWarnings, auditWarnings };
    }
    // The shell in front would report a missing program its own way: say it the way a direct start would. The
    // runner looks at the program behind the starter, as it does behind setsid(1).
    const problem = tool.builtin === undefined && starter === undefined
      ? startProblem(own.program)
      : undefined;
    if (problem !== undefined) return { ok: false, envelope: startFailure(problem, tool.name, own.program) };
    const slot = await this.#slot(cgroups);
    // Behind the starter, its own exit is the tree's end (it stays until the tool's leftovers are killed).
    const tree = cgroupTreeEnd(cgroups, slot, this.#watchOf(cgroups), starter !== undefined);
    if (starter !== undefined) {
      const groupStart = sessionStartLine(starter, { support: cgroups, slot }, gate !== undefined);
      return { ...plain, groupStart, tree, slot, gate, envelopeWarnings, auditWarnings };
    }
    const prefix = cgroupWrapper(
      cgroups,
      undefined,
      slot,
      gate !== undefined,
      tool.envPassthrough.includes("PWD"),
    );
    return {
      ...plain,
      program: prefix[0],
      args: [...prefix.slice(1), own.program, ...own.args],
      tree,
      slot,
      gate,
      envelopeWarnings,
      auditWarnings,
    };
  }

  /** The session starter this process may start, looked for once; `undefined` where it is not built or granted. */
  #starterPath(): string | undefined {
    return (this.#starter ??= { path: findSessionStart(this.#options.env) }).path;
  }

  /** Where unconfined calls' cgroups go: the probe's finding when bwrap was probed, else looked for once. */
  #trackingCgroups(): CgroupSupport | undefined {
    if (this.#tracking === undefined) {
      this.#tracking = {
        cgroups: Deno.build.os === "linux"
          ? detectCgroupsCached(this.#options.env, this.#stateDir())
          : undefined,
      };
    }
    return this.#tracking.cgroups;
  }

  /** What a manifest tool's sandbox shows (its program's needs aside), and what it must never show. */
  #needsContext(tool: ToolSpec, own: Program, support: Extract<SandboxSupport, { ok: true }>): NeedsContext {
    const cwd = this.#options.workspace;
    const place = (path: string) => isAbsolute(path) ? resolve(path) : resolve(cwd, path);
    const home = this.#options.env.HOME;
    const homes = home === undefined || !isAbsolute(home) ? [] : [...new Set([resolve(home), realOr(home)])];
    return {
      path: this.#options.env.PATH ?? FALLBACK_PATH,
      cwd,
      shown: [
        ...support.system.map((entry) => entry.path),
        ...own.files,
        ...tool.profile.read.map(place),
        ...tool.profile.write.map(place),
        cwd,
      ],
      homes,
      hidden: this.#options.controlPlane.hidden,
    };
  }

  /** toolgate's state folder, or `undefined` without HOME (nothing is cached then). */
  #stateDir(): string | undefined {
    try {
      return stateRoot(this.#options.env);
    } catch {
      return undefined;
    }
  }

  /** The egress proxy of this launcher, started at the first call whose profile names hosts. */
  async #startProxy(): Promise<EgressProxy> {
    const { EgressProxy } = await import("./egress_proxy.ts");
    const socket = proxySocketPath(this.#options.env, stateRoot(this.#options.env));
    // Said with its fix, before a folder is made for it (the runtime's own word is `SUN_LEN`).
    const tooLong = socketPathProblem(socket);
    if (tooLong !== undefined) throw new Error(tooLong);
    prepareDir(dirname(socket));
    const extra = this.#options.env[UPSTREAM_CA_ENV];
    return EgressProxy.start(socket, extra ? { upstreamCa: [Deno.readTextFileSync(extra)] } : {});
  }

  /**
   * The CA bundle of this run's calls with credentials, written once beside the proxy's socket: certificates
   * only (the run CA's key never leaves toolgate's memory), bound read-only into each such sandbox.
   */
  #caBundle(proxy: EgressProxy): Promise<string> {
    return this.#bundle ??= (async () => {
      const [authority, { caBundle }] = await Promise.all([proxy.authority(), import("./run_ca.ts")]);
      const file = `${proxy.socket}.ca.pem`;
      // Public certificates: readable by the sandbox whatever user it maps to.
      Deno.writeTextFileSync(file, caBundle(authority.cert), { mode: 0o644 });
      return file;
    })();
  }

  /**
   * The seccomp filter for a profile with or without network: generated for this machine's architecture, written
   * once (content-addressed, read-only) into toolgate's state, opened as bwrap's fd by a shell in front of it.
   */
  #filter(network: boolean): Promise<Filter | { readonly ok: false; readonly reason: string }> {
    let filter = this.#filters.get(network);
    if (filter === undefined) {
      filter = (async () => {
        const arch = machineArch();
        if (arch === undefined) {
          return { ok: false as const, reason: `no filter is known for ${Deno.build.arch}` };
        }
        try {
          const file = await writeSeccompFile(this.#seccompDir(), seccompFilter(arch, { network }));
          return {
            ok: true as const,
            wrapper: seccompWrapper(file),
            args: ["--seccomp", String(SECCOMP_FD)],
            file,
          };
        } catch (error) {
          return { ok: false as const, reason: (error as Error).message };
        }
      })();
      this.#filters.set(network, filter);
    }
    return filter;
  }

  /**
   * Where the filter's file goes: toolgate's state, or, for a caller with neither HOME nor XDG_STATE_HOME (a
   * library caller's bare environment), a private folder of its own under the host's temporary folder, which no
   * confined tool sees (its /tmp is its own).
   */
  #seccompDir(): string {
    try {
      return join(stateRoot(this.#options.env), "seccomp");
    } catch {
      return Deno.makeTempDirSync({ prefix: "toolgate-seccomp-" });
    }
  }

  /** A relative command whose real path left tools/bin since validation (a symlink swapped in). */
  #escapedBin(tool: ToolSpec): string | undefined {
    const relative = !isAbsolute(tool.command[0]) && !isWindowsAbsolute(tool.command[0]);
    if (!relative) return undefined;
    // The folder's real path once per manifest: it is the control plane's (no tool may change it). A program
    // found outside it is looked at again against the folder's real path now (the user may have moved it).
    const binDir = this.#manifest.binDir;
    if (this.#binReal?.dir !== binDir) this.#binReal = { dir: binDir, real: realOr(binDir) };
    if (escapesBinDir(tool.program, binDir, this.#binReal.real) === undefined) return undefined;
    this.#binReal = { dir: binDir, real: realOr(binDir) };
    return escapesBinDir(tool.program, binDir, this.#binReal.real);
  }
}

/** The real path of `path`, or `path` itself when it does not resolve. */
function realOr(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}
