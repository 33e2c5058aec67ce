/**
 * What `toolgate doctor` finds out: the resolved setup (the manifest and why that one, the workspace, the model and
 * endpoint and where each came from, what confinement can do here and what each profile the manifest uses will
 * get, where state, audit log and secrets live) and one problem per thing that will not work, each with its fix.
 * Gathering only: the command prints it.
 *
 * @module
 */
import { join } from "../base/paths.ts";
import { BELT_MANIFEST, BELT_MANIFEST_PATH } from "../manifest/tool_belt.ts";
import { BASE_URL_VARIABLES, DEFAULT_BASE_URL } from "../agent/limits.ts";
import { detectCgroups } from "../sandbox/cgroups.ts";
import { findSessionStart } from "../sandbox/session_start.ts";
import type { PermissionProfile } from "../manifest/profiles.ts";
import { findProgram } from "../base/find_program.ts";
import { probeSandbox, SANDBOX_MODES, type SandboxMode, type SandboxSupport } from "../sandbox/sandbox.ts";
import { seccompSummary } from "../sandbox/seccomp_notes.ts";
import { describeProfile, outlook, userNamespacesAllowed } from "./profile_outlook.ts";
import { stateFacts } from "./state_facts.ts";

import { isOwnManifest, locateManifest, type ManifestLocation } from "../manifest/manifest_location.ts";
import { trustOf, type TrustState } from "./trust_state.ts";
import type { Manifest } from "../manifest/manifest_types.ts";
import type { ServerOutlook } from "./server_checks.ts";

/** One thing that will not work here, and how to make it work. `blocking`: the manifest needs it. */
export interface Problem {
  readonly problem: string;
  readonly fix: string;
  readonly blocking: boolean;
}

/** A setting and where its value came from (an option, a variable, toolgate's default). */
export interface Sourced<T> {
  readonly value: T;
  readonly from: string;
}

/** What one permission profile of the manifest gets here. */
export interface ProfileOutlook {
  readonly profile: string;
  readonly tools: readonly string[];
  /** `confined`, `unconfined` (runs as the user), or `refused` (will not run). */
  readonly runs: "confined" | "unconfined" | "refused";
  readonly detail: string;
}

/** The whole report. */
export interface SetupReport {
  readonly manifest: {
    readonly path: string;
    readonly why: string;
    readonly valid: boolean;
    readonly tools: number;
    readonly errors: readonly string[];
    readonly trust: TrustState;
  };
  readonly workspace: string;
  readonly agent: {
    readonly model: Sourced<string | null>;
    readonly endpoint: Sourced<string>;
    readonly apiKey: Sourced<boolean>;
  };
  readonly confinement: {
    readonly mode: Sourced<SandboxMode>;
    readonly bubblewrap: { readonly path: string | null; readonly works: boolean; readonly reason?: string };
    /** Whether bubblewrap loaded the seccomp filter in the probe (`null`: not tried, bubblewrap does not work). */
    readonly seccomp: { readonly loads: boolean; readonly reason?: string } | null;
    readonly userNamespaces: boolean | null;
    readonly cgroups: { readonly version: number; readonly pids: boolean; readonly memory: boolean } | null;
    readonly prlimit: string | null;
    /** The session starter unconfined calls start through, where it is built (src/sandbox/session_start.ts). */
    readonly sessionStart: string | null;
    readonly profiles: readonly ProfileOutlook[];
    /** Each MCP server of the manifest: its profile, how it runs here, and what stands in its way. */
    readonly servers: readonly ServerOutlook[];
  };
  readonly state: {
    readonly stateDir: string | null;
    readonly configDir: string | null;
    readonly auditDir: string | null;
    readonly auditFiles: number;
    readonly secretStore:
      | { readonly path: string; readonly backend: string; readonly secrets: number }
      | null;
  };
  readonly problems: readonly Problem[];
}

/**
 * Which manifest a run here would use, and why (the one resolver of `manifest_location.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { whichManifest } from "./setup_report.ts";
 * assert.equal(whichManifest("t.json", {}, "/srv/p").why, "--tools");
 * ```
 */
export function whichManifest(
  tools: string | undefined,
  env: Readonly<Record<string, string>>,
  cwd: string,
): { path: string; why: string; location: ManifestLocation } {
  const location = locateManifest(tools, env, cwd);
  const why = {
    tools: "--tools",
    env: "TOOLGATE_TOOLS",
    found: location.path === join(cwd, "tools.json")
      ? "tools.json in the current folder"
      : "the nearest tools.json above the current folder, up to the project's root",
    belt: "no tools.json here or up to the project's root: toolgate's built-in tool belt",
  }[location.source];
  return { path: location.path, why, location };
}

function statOrUndefined(path: string): Deno.FileInfo | undefined {
  try {
    return Deno.statSync(path);
  } catch {
    return undefined;
  }
}

function isLocal(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === "localhost" || host === "[::1]" || /^127\./.test(host) || host.endsWith(".localhost");
  } catch {
    return false;
  }
}

/**
 * What each profile the tools use gets here, given what confinement can do and the sandbox mode: confined,
 * unconfined (runs as the user), or refused; with what it may write and reach, and its tools.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { profileOutlooks } from "./setup_report.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * assert.ok(loaded.ok);
 * // with bubblewrap: profileOutlooks(tools, await probeSandbox(PATH, "bwrap", env), "auto"), and "confined"
 * const outlooks = profileOutlooks(loaded.manifest.tools, { ok: false, reason: "no bwrap" }, "auto");
 * const none = outlooks.find((outlook) => outlook.profile === "none");
 * assert.equal(none?.runs, "unconfined");
 * assert.equal(none?.detail, "writes nothing; no network");
 * assert.ok(none?.tools.includes("get_time"));
 * ```
 */
export function profileOutlooks(
  tools: readonly { readonly name: string; readonly profile: PermissionProfile }[],
  support: SandboxSupport,
  mode: SandboxMode,
): ProfileOutlook[] {
  const byProfile = new Map<string, { profile: PermissionProfile; tools: string[] }>();
  for (const tool of tools) {
    const entry = byProfile.get(tool.profile.name) ?? { profile: tool.profile, tools: [] };
    entry.tools.push(tool.name);
    byProfile.set(tool.profile.name, entry);
  }
  return [...byProfile.values()].map(({ profile, tools }) => {
    const runs = outlook(profile, support, mode);
    // A confined profile's line says what its syscall filter refuses, too.
    const filter = runs !== "confined"
      ? ""
      : mode === "unfiltered"
      ? "; no seccomp filter (--sandbox unfiltered)"
      : support.ok && support.seccomp?.ok === false
      ? "; its seccomp filter cannot be loaded here: refused unless --sandbox unfiltered"
      : `; ${seccompSummary(profile.net !== false)}`;
    return { profile: profile.name, tools, runs, detail: describeProfile(profile) + filter };
  });
}

/** What doctor is told: the environment, the folder, and the options given. */
export interface ReportInput {
  readonly env: Readonly<Record<string, string>>;
  /** Reads named variables beyond `env` (a scoped grant: an MCP server's secrets), as `Io.readEnv`. */
  readonly readEnv?: (names: readonly string[]) => Record<string, string>;
  readonly cwd: string;
  readonly tools?: string;
  readonly sandbox?: SandboxMode;
  readonly allowAbsoluteCommands?: boolean;
}

/**
 * Finds out the setup and its problems (runs bwrap to see whether it works, as a call would).
 *
 * @example Not run as a doc test: it probes bubblewrap and the host (tests/doctor_test.ts runs it).
 * ```ts ignore
 * import { setupReport } from "./setup_report.ts";
 * const report = await setupReport({ env: Deno.env.toObject(), cwd: Deno.cwd() });
 * report.problems.filter((p) => p.blocking).length; // 0 when everything the manifest needs works here
 * ```
 */
export async function setupReport(input: ReportInput): Promise<SetupReport> {
  const { env, cwd } = input;
  const problems: Problem[] = [];
  const { path, why, location } = whichManifest(input.tools, env, cwd);
  const manifest = await loadQuietly(path, input);
  if (!manifest.ok) {
    problems.push({
      problem: `the manifest ${path} is invalid (${manifest.errors.length} error${
        manifest.errors.length === 1 ? "" : "s"
      }, the first: ${manifest.errors[0]})`,
      fix: "run `toolgate validate` for every error and fix them",
      blocking: true,
    });
  }
  const tools = manifest.ok ? manifest.manifest.tools : [];
  for (const tool of tools) {
    if (tool.builtin !== undefined) continue;
    const info = tool.present ? statOrUndefined(tool.program) : undefined;
    if (info === undefined) {
      problems.push({
        problem: `tool "${tool.name}": its program ${tool.program} does not exist`,
        fix: "put the program there (and make it executable), or correct command[0]",
        blocking: true,
      });
    } else if (((info.mode ?? 0o111) & 0o111) === 0) {
      problems.push({
        problem: `tool "${tool.name}": its program ${tool.program} is not executable`,
        fix: `chmod +x ${tool.program}`,
        blocking: true,
      });
    }
  }

  // The model and the endpoint, as the agent loop reads them from the environment (options win at run time).
  const baseVariable = BASE_URL_VARIABLES.find((name) => env[name]);
  const endpoint: Sourced<string> = baseVariable
    ? { value: env[baseVariable], from: baseVariable }
    : { value: DEFAULT_BASE_URL, from: "toolgate's default" };
  const model: Sourced<string | null> = env.OAI_MODEL
    ? { value: env.OAI_MODEL, from: "OAI_MODEL" }
    : { value: null, from: "not set" };
  const keyVariable = ["OAI_API_KEY", "OPENAI_API_KEY"].find((name) => env[name]);
  const apiKey: Sourced<boolean> = { value: keyVariable !== undefined, from: keyVariable ?? "not set" };
  if (model.value === null) {
    problems.push({
      problem: "no model is configured: the agent loop will not start",
      fix: "set OAI_MODEL (or pass --model), e.g. the name your local server serves",
      blocking: false,
    });
  }
  if (!apiKey.value && !isLocal(endpoint.value)) {
    problems.push({
      problem: `no API key is set for ${endpoint.value}`,
      fix: "set OAI_API_KEY (or OPENAI_API_KEY), or point OAI_BASE_URL at a local server",
      blocking: false,
    });
  }

  // Confinement, as a call would find it (the launcher hands its bwrap over in TOOLGATE_BWRAP).
  const mode: Sourced<SandboxMode> = input.sandbox !== undefined
    ? { value: input.sandbox, from: "--sandbox" }
    : env.TOOLGATE_SANDBOX && (SANDBOX_MODES as readonly string[]).includes(env.TOOLGATE_SANDBOX)
    ? { value: env.TOOLGATE_SANDBOX as SandboxMode, from: "TOOLGATE_SANDBOX" }
    : { value: "auto", from: "toolgate's default" };
  if (input.sandbox === undefined && env.TOOLGATE_SANDBOX && mode.from !== "TOOLGATE_SANDBOX") {
    problems.push({
      problem: `TOOLGATE_SANDBOX is ${
        JSON.stringify(env.TOOLGATE_SANDBOX)
      }: every command that runs tools refuses it`,
      fix: `set it to one of ${SANDBOX_MODES.join(", ")}, or unset it`,
      blocking: true,
    });
  }
  const pathVariable = env.PATH ?? "/usr/local/bin:/usr/bin:/bin";
  const support = await probeSandbox(pathVariable, env.TOOLGATE_BWRAP || "bwrap", env);
  const bwrapPath = support.ok ? support.bwrap : findProgram(env.TOOLGATE_BWRAP || "bwrap", pathVariable);
  const cgroups = support.ok ? support.cgroups : detectCgroups(env);
  const profiles = profileOutlooks(tools, support, mode.value);
  const refused = profiles.filter((p) => p.runs === "refused");
  if (refused.length > 0) {
    const names = refused.flatMap((p) => p.tools);
    problems.push({
      problem: `${names.length} tool${names.length === 1 ? "" : "s"} cannot run here (${
        names.slice(0, 5).join(", ")
      }${names.length > 5 ? ", ..." : ""}): ${
        mode.value === "require"
          ? "--sandbox require is set and "
          : `${names.length === 1 ? "it" : "they"} can write or reach the network, and `
      }tools cannot be confined (${support.ok ? "" : support.reason})`,
      fix: "install bubblewrap (apt-get install bubblewrap) and allow user namespaces, or run with " +
        "--sandbox off to run them unconfined, as you",
      // The built-in belt (toolgate's own manifest) is toolgate's default, not a manifest the user wrote: its
      // read-only tools still work, so the ones that cannot are said, not a failure of the setup.
      blocking: location.source !== "belt" && !isOwnManifest(location.path),
    });
  } else if (!support.ok && mode.value === "auto" && profiles.some((p) => p.runs === "unconfined")) {
    problems.push({
      problem: `tools cannot be confined here (${support.reason}): the read-only ones run unconfined, as you`,
      fix: "install bubblewrap (apt-get install bubblewrap) and allow user namespaces",
      blocking: false,
    });
  }

  if (support.ok && support.seccomp?.ok === false && mode.value !== "unfiltered" && mode.value !== "off") {
    problems.push({
      problem: `the sandbox's seccomp filter cannot be loaded here (${support.seccomp.reason}): ` +
        "confined calls are refused before they start",
      fix:
        "run with --sandbox unfiltered (confined without the filter, said in each envelope), or use a kernel " +
        "with seccomp filters (CONFIG_SECCOMP_FILTER)",
      blocking: false,
    });
  }

  const servers = manifest.ok && (manifest.manifest.servers ?? []).length > 0
    ? (await import("./server_checks.ts")).serverOutlooks(manifest.manifest.servers, {
      ...input,
      sandbox: { support, mode: mode.value },
      manifest: await Deno.realPath(path).catch(() => undefined),
    })
    : [];
  for (const server of servers) {
    for (const { problem, fix } of server.errors) problems.push({ problem, fix, blocking: true });
    for (const { problem, fix } of server.warnings) problems.push({ problem, fix, blocking: false });
  }

  const trust = await trustOf(location, env, cwd);
  if (trust.state !== "trusted") {
    problems.push({
      problem:
        `the manifest ${path} is ${
          trust.state === "changed" ? "changed since you trusted it" : "not trusted"
        }: ` +
        "its tools run nothing until you trust it",
      fix: "read what it runs, then run `toolgate trust`",
      blocking: false,
    });
  }

  return {
    manifest: {
      path,
      why,
      valid: manifest.ok,
      tools: tools.length,
      errors: manifest.ok ? [] : manifest.errors,
      trust,
    },
    workspace: cwd,
    agent: { model, endpoint, apiKey },
    confinement: {
      mode,
      bubblewrap: {
        path: bwrapPath ?? null,
        works: support.ok,
        reason: support.ok ? undefined : support.reason,
      },
      seccomp: !support.ok || support.seccomp === undefined
        ? null
        : support.seccomp.ok
        ? { loads: true }
        : { loads: false, reason: support.seccomp.reason },
      userNamespaces: support.ok ? support.userns : userNamespacesAllowed(),
      cgroups: cgroups === undefined ? null : {
        version: cgroups.version,
        pids: cgroups.pids !== undefined,
        memory: cgroups.memory !== undefined,
      },
      prlimit: (support.ok ? support.prlimit : findProgram("prlimit", "/usr/bin:/bin")) ?? null,
      sessionStart: findSessionStart(env) ?? null,
      profiles,
      servers,
    },
    state: await stateFacts(env, cwd, problems),
    problems,
  };
}

/** Loads the manifest without printing: its errors go into the report. */
async function loadQuietly(
  path: string,
  input: ReportInput,
): Promise<{ ok: true; manifest: Manifest } | { ok: false; errors: readonly string[] }> {
  const { loadManifest, validateManifest } = await import("../manifest/manifest.ts");
  if (path === BELT_MANIFEST_PATH) return validateManifest(BELT_MANIFEST, path, { schemasChecked: true });
  const result = await loadManifest(path, { allowAbsoluteCommands: input.allowAbsoluteCommands });
  return result;
}
