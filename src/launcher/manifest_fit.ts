/**
 * Whether a manifest trusted again fits a running toolgate: what its own tools need of toolgate's own grants (the
 * programs it starts, what their interpreters need read, the hosts the egress proxy reaches, the code it checks)
 * against what this process was granted, and the variables and secrets they receive against those read at start
 * (the environment and the secret store are read once, for the names the start's manifest declared). `serve` takes
 * a re-trusted manifest in place only when nothing is beyond.
 *
 * Not here: the grants themselves (`own_grants.ts`, planned by `launch_plan.ts`), the trust check and the swap
 * (`commands/serve_reload.ts`).
 *
 * @module
 */
import type { Manifest, ToolSpec } from "../manifest/manifest_types.ts";
import { programReads } from "./manifest_facts.ts";

/** What a manifest is checked against: the running process and the manifest it started with. */
export interface FitContext {
  /** The manifest the process started with (its declared variables and secrets were read then). */
  readonly start: Manifest;
  /** toolgate's environment (its PATH and HOME find what a program's interpreter needs). */
  readonly env: Readonly<Record<string, string>>;
  /** The workspace (the tools' cwd), absolute. */
  readonly workspace: string;
  /** toolgate's state and config folders (never shown to a tool). */
  readonly stateDirs: readonly string[];
  /** Paths the new manifest's trust check looks at (the code its command lines name), absolute. */
  readonly reads?: readonly string[];
  /** Whether this process holds a grant (default: Deno's own answer for this process). */
  readonly granted?: (descriptor: Deno.PermissionDescriptor) => boolean;
}

/** Deno's answer for this process: a grant it holds, never one it would prompt for. */
function grantedHere(descriptor: Deno.PermissionDescriptor): boolean {
  try {
    return Deno.permissions.querySync(descriptor).state === "granted";
  } catch {
    // A host or path Deno cannot even take is one it was never granted.
    return false;
  }
}

/**
 * The variables a manifest's tools and MCP servers receive from toolgate's environment or its secret store: their
 * passthrough names (a profile's included), their secrets and their bound credentials' secrets. What a command
 * reads at start (`commands/executor_options.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { declaredVariables } from "./manifest_fit.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * assert.ok(declaredVariables(loaded.manifest).includes("TOOLGATE_FETCH_ALLOW_HOSTS")); // http_fetch passes it on
 * ```
 */
export function declaredVariables(manifest: Manifest): string[] {
  const names = [
    ...manifest.tools.flatMap((tool) => ownVariables(tool)),
    ...(manifest.servers ?? []).flatMap((server) => [
      ...server.profile.env,
      ...server.secrets,
      ...server.credentials.map((c) => c.secret),
    ]),
  ];
  return [...new Set(names)];
}

function ownVariables(tool: ToolSpec): string[] {
  return [...tool.envPassthrough, ...tool.secrets, ...tool.credentials.map((c) => c.secret)];
}

/**
 * What `next`'s own tools (not an MCP server's) need beyond what this process holds: each as a phrase for one line
 * (`the variable X, read only at start`, `running /p/tools/bin/new`, `the host api.example.com`); empty when the
 * manifest fits and can be served in place.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { beyondGrants } from "./manifest_fit.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const context = { start: loaded.manifest, env: {}, workspace: Deno.cwd(), stateDirs: [], granted: () => true };
 * assert.deepEqual(beyondGrants(loaded.manifest, context), []); // the manifest it started with fits
 * const none = { ...loaded.manifest, tools: [], byName: new Map(), servers: [] };
 * assert.deepEqual(beyondGrants(loaded.manifest, { ...context, start: none }), [
 *   "the variable TOOLGATE_FETCH_ALLOW_HOSTS, read only at start",
 * ]);
 * ```
 */
export function beyondGrants(next: Manifest, context: FitContext): string[] {
  const granted = context.granted ?? grantedHere;
  const beyond: string[] = [];
  const own = next.tools.filter((tool) => tool.upstream === undefined);
  const read = new Set(declaredVariables(context.start));
  for (const name of new Set(own.flatMap(ownVariables))) {
    if (!read.has(name)) beyond.push(`the variable ${name}, read only at start`);
  }
  // A built-in tool runs with toolgate's own runtime; any other program must be one this process may start.
  const programs = [...new Set(own.filter((tool) => tool.builtin === undefined).map((tool) => tool.program))];
  for (const program of programs) {
    if (!granted({ name: "run", command: program })) beyond.push(`running ${program}`);
  }
  const reads = [
    ...programs,
    ...programReads(programs, context.env, context.workspace, next.path, context.stateDirs),
    ...context.reads ?? [],
  ];
  for (const path of new Set(reads)) {
    if (!granted({ name: "read", path })) beyond.push(`reading ${path}`);
  }
  const hosts = own.flatMap((tool) => Array.isArray(tool.profile.net) ? tool.profile.net : []);
  for (const host of new Set(hosts)) {
    if (!granted({ name: "net", host })) beyond.push(`the host ${host}`);
  }
  return beyond;
}
