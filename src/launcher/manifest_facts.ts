/**
 * What the launch plan learns of the run's manifest without validating it: the programs its tools and servers
 * start, the variables they receive, the hosts they reach, and what their programs need inside the sandbox; none
 * of it for a manifest whose content the user has not trusted. Read by `launch_plan.ts`.
 *
 * @module
 */
import { dirname, isAbsolute, join, normalize } from "../base/paths.ts";
import { isWithin } from "../contract/relative_path.ts";
import { isRecord } from "../contract.ts";
import { readJsonc } from "../manifest/jsonc.ts";
import { declaredProfile, type ProfileResult, resolveProfile } from "../manifest/profiles.ts";
import { SYSTEM_PATHS } from "../sandbox/sandbox.ts";
import { findProgram } from "../base/find_program.ts";
import { programNeeds } from "../sandbox/program_needs.ts";
import { stateRoot } from "../state/state.ts";
import { beltToolOf } from "../manifest/tool_belt.ts";
import { type ManifestLocation, needsTrust } from "../manifest/manifest_location.ts";
import { readManifestContent } from "../manifest/trust.ts";
import { readTrustRecord } from "../manifest/trust_record.ts";

/** What a manifest's tools start and receive. */
export interface ManifestFacts {
  programs: string[];
  toolEnv: string[];
  egressHosts: string[];
  /** The absolute paths a stdio server's arguments name (`validate` and `doctor` check they exist). */
  serverPaths: string[];
}

/**
 * What a manifest's tools start and receive, read without validating it (the command validates it); `text` and
 * `profiles` when the trust check read them already.
 */
function manifestFacts(
  path: string,
  text?: string,
  profiles: Map<string, ProfileResult> = new Map(),
): ManifestFacts {
  const programs: string[] = [];
  const toolEnv: string[] = [];
  const egressHosts: string[] = [];
  const serverPaths: string[] = [];
  if (text === undefined) {
    try {
      text = Deno.readTextFileSync(path);
    } catch {
      return { programs, toolEnv, egressHosts, serverPaths };
    }
  }
  const parsed = readJsonc(text);
  const tools = isRecord(parsed) && Array.isArray(parsed.tools) ? parsed.tools : [];
  const dir = dirname(path);
  for (const tool of tools) {
    if (!isRecord(tool)) continue;
    const first = Array.isArray(tool.command) ? tool.command[0] : undefined;
    if (typeof first === "string" && first !== "") {
      programs.push(isAbsolute(first) ? first : join(dir, normalize(first.replaceAll("\\", "/"))));
    }
    // Declared secrets are read from toolgate's environment when the store has none, like passthrough names.
    for (const names of [tool.envPassthrough, tool.secrets]) {
      if (!Array.isArray(names)) continue;
      for (const name of names) if (typeof name === "string") toolEnv.push(name.trim().toUpperCase());
    }
    // So are the secrets of credentials bound to hosts (the tool itself gets only a placeholder).
    toolEnv.push(...boundSecrets(tool.credentials));
    const profile = resolveProfile(declaredProfile(tool), dir, profiles);
    if (profile.ok) {
      toolEnv.push(...profile.profile.env);
      if (Array.isArray(profile.profile.net)) egressHosts.push(...profile.profile.net);
    }
  }
  // The gateway's servers (mcpServers): a stdio one's program, found on PATH as its start finds it, its secrets;
  // an HTTP one's host, which toolgate's own client reaches.
  const servers = isRecord(parsed) && isRecord(parsed.mcpServers) ? Object.values(parsed.mcpServers) : [];
  for (const server of servers) {
    if (!isRecord(server)) continue;
    if (typeof server.command === "string" && server.command !== "") {
      const found = server.command.includes("/")
        ? (isAbsolute(server.command) ? server.command : undefined)
        : findProgram(server.command, Deno.env.get("PATH") ?? "/usr/local/bin:/usr/bin:/bin");
      if (found !== undefined) programs.push(found);
      if (Array.isArray(server.args)) {
        serverPaths.push(
          ...server.args.filter((arg): arg is string => typeof arg === "string" && isAbsolute(arg)),
        );
      }
    }
    if (Array.isArray(server.secrets)) {
      for (const name of server.secrets) {
        if (typeof name === "string") toolEnv.push(name.trim().toUpperCase());
      }
    }
    toolEnv.push(...boundSecrets(server.credentials));
    if (typeof server.url === "string" && URL.canParse(server.url)) {
      egressHosts.push(new URL(server.url).host);
    }
    // A stdio server's profile, as a tool's: its variables, and its hosts (reached through the egress proxy).
    if (server.command !== undefined && server.permissions !== undefined) {
      const profile = resolveProfile(server.permissions, dir, profiles);
      if (profile.ok) {
        toolEnv.push(...profile.profile.env);
        if (Array.isArray(profile.profile.net)) egressHosts.push(...profile.profile.net);
      }
    }
  }
  return { programs, toolEnv, egressHosts, serverPaths };
}

/**
 * What toolgate reads to find what the tools' programs need inside the sandbox (`program_needs.ts`): their
 * interpreters and the install folders it shows; nothing it would refuse to show.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { programReads } from "./manifest_facts.ts";
 * assert.deepEqual(programReads(["/bin/sh"], { PATH: "/usr/bin:/bin" }, "/tmp", "/tmp/tools.json", []), []); // /bin is shown anyway
 * ```
 */
export function programReads(
  programs: readonly string[],
  env: Readonly<Record<string, string>>,
  workspace: string,
  manifestPath: string,
  hidden: readonly string[],
): string[] {
  const home = env.HOME;
  const context = {
    path: env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    cwd: workspace,
    shown: [...SYSTEM_PATHS, join(dirname(manifestPath), "tools"), workspace],
    homes: home === undefined || !isAbsolute(home) ? [] : [...new Set([home, realOr(home)])],
    hidden,
  };
  // A built-in tool (its launcher included) runs with toolgate's runtime, never through its program.
  return programs.filter((program) => beltToolOf(program) === undefined).flatMap((program) => {
    const needs = programNeeds(program, context);
    return needs.ok
      ? needs.reads.filter((path) => !context.shown.some((folder) => isWithin(path, folder)))
      : [];
  });
}

/**
 * The real path of `path`, or `path` itself where it cannot be resolved.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { realOr } from "./manifest_facts.ts";
 * assert.equal(realOr("/no/such/folder"), "/no/such/folder");
 * ```
 */
export function realOr(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}

/**
 * The facts of the run's manifest, and the files the run reads to check its trust. A manifest that needs trust and
 * whose content the user has not trusted gives none: toolgate may read its folder (to say what it holds) but
 * starts none of its programs, passes none of its variables and reaches none of its hosts. Its programs are
 * readable (toolgate digests them, to say whether they changed), never runnable. `trusting`: the command is
 * `toolgate trust`, which trusts the content as it is and then starts its MCP servers to pin their tools.
 *
 * @example Not run as a doc test: it needs a trusted manifest, and starts its MCP servers.
 * ```ts ignore
 * import { trustedFacts } from "./manifest_facts.ts";
 * const { facts, readable } = await trustedFacts(location, Deno.env.toObject());
 * ```
 */
export async function trustedFacts(
  location: ManifestLocation,
  env: Readonly<Record<string, string>>,
  trusting = false,
  workspace?: string,
): Promise<{ facts: ManifestFacts; readable: string[] }> {
  if (!needsTrust(location)) return { facts: manifestFacts(location.path), readable: [] };
  const none = { programs: [], toolEnv: [], egressHosts: [], serverPaths: [] };
  // Every file read afresh (the digests the run keeps are not used here): the warm record then depends on the
  // files themselves, never on the run's own bookkeeping.
  const content = await readManifestContent(location.path, undefined, { workspace });
  if (content === undefined) return { facts: none, readable: [] };
  // A comma would split Deno's list into two grants: such a program is not read (and so never trusted).
  const programs = content.summary.tools.flatMap((tool) =>
    tool.program === undefined || tool.program.includes(",") ? [] : [tool.program]
  );
  // Where the code the command lines name may lie, outside the folders the run reads anyway: the run looks there
  // to tell whether it changed or appeared, as here (a path with a comma cannot be granted, and reads as missing).
  const folders = [dirname(content.realPath), ...(workspace === undefined ? [] : [workspace])];
  const code = content.codePaths.filter((path) =>
    !path.includes(",") && !folders.some((folder) => isWithin(path, folder))
  );
  const readable = [...programs, ...code];
  let record;
  try {
    // Read as it is: a forged record could widen only these grants, and the run checks it again, strictly.
    record = readTrustRecord(stateRoot(env), content.realPath, { strict: false });
  } catch {
    record = undefined;
  }
  if (record?.digest !== content.digest && !trusting) return { facts: none, readable };
  return { facts: manifestFacts(location.path, content.text, content.profiles), readable };
}

/** The secret names of a manifest entry's `credentials` (bound to hosts), as written. */
function boundSecrets(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((credential) =>
    isRecord(credential) && typeof credential.secret === "string"
      ? [credential.secret.trim().toUpperCase()]
      : []
  );
}
