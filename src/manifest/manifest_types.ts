/**
 * The manifest's types: one validated tool ({@linkcode ToolSpec}), the manifest ({@linkcode Manifest}), the outcome
 * of loading one and its options, and the name rules every tool is held to. Loading lives in `manifest.ts`, the
 * check of one tool in `tool_check.ts`.
 *
 * @module
 */
import type { PermissionProfile, ProfileResult } from "./profiles.ts";
import type { PinnedProgram } from "./file_pins.ts";
import type { Asked, ToolProtocol } from "./tool_messages.ts";
import type { CredentialBinding } from "./credentials.ts";
import type { ServerSpec } from "./server_spec.ts";

/**
 * One validated tool: what the runner needs to start it and what the exports need to describe it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadManifest } from "./manifest.ts";
 * import type { ToolSpec } from "./manifest_types.ts";
 * const loaded = await loadManifest("tools.json");
 * const tool: ToolSpec | undefined = loaded.ok ? loaded.manifest.byName.get("get_time") : undefined;
 * assert.equal(tool?.program, `${Deno.cwd()}/tools/bin/get_time`); // absolute
 * ```
 */
export interface ToolSpec {
  /** Position in the manifest's `tools` array. */
  readonly index: number;
  /** The tool's name, unique in the manifest (`^[A-Za-z0-9_-]{1,64}$`). */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description?: string;
  /** The JSON Schema of the arguments, as written. */
  readonly schema?: Readonly<Record<string, unknown>>;
  /**
   * The JSON Schema of the tool's success `result`, as written: always an object schema (`type: "object"`), as
   * MCP requires of an `outputSchema`.
   */
  readonly outputSchema?: Readonly<Record<string, unknown>>;
  /** The argv as written in the manifest. */
  readonly command: readonly string[];
  /** `command[0]` resolved to an absolute path (against the manifest's folder when relative). */
  readonly program: string;
  /** The fixed arguments after the program. */
  readonly args: readonly string[];
  /**
   * Per-call wall-clock timeout in seconds; the caller's default applies when absent; 0 (only beside
   * `idleTimeoutSec`) means no wall-clock limit.
   */
  readonly timeoutSec?: number;
  /** Stop the call when it printed nothing on stdout or stderr for this many seconds; absent: no idle limit. */
  readonly idleTimeoutSec?: number;
  /** Upper-cased, de-duplicated names of the variables passed from the parent. */
  readonly envPassthrough: readonly string[];
  /**
   * Upper-cased, de-duplicated names of the secrets the tool receives as variables: from toolgate's secret store
   * first, then from toolgate's environment. A call whose secret is in neither answers `unavailable` with
   * `credential` before the tool starts.
   */
  readonly secrets: readonly string[];
  /** Secrets bound to hosts: the tool gets a placeholder, the egress proxy puts the value in (`credentials.ts`). */
  readonly credentials: readonly CredentialBinding[];
  /** The tool has no side effects: it needs no approval. */
  readonly readOnly: boolean;
  /** The tool may run in parallel with other calls. */
  readonly concurrent: boolean;
  /** The tool is always sent in full, even when the tools are disclosed to the model on demand. */
  readonly alwaysLoad: boolean;
  /**
   * The protocol the tool speaks on stdout (`"toolgate/1"`: JSON messages, one a line, see `tool_protocol.ts`);
   * absent: one JSON answer, as always.
   */
  readonly protocol?: ToolProtocol;
  /**
   * Whom a `toolgate/1` tool may ask while it runs (`"user"`: elicitation, `"model"`: sampling); empty: nobody.
   * A tool that asks keeps its stdin open after the arguments line and reads the answers there.
   */
  readonly asks: readonly Asked[];
  /** What the tool may touch once confined (the `default` profile when the entry names none). */
  readonly profile: PermissionProfile;
  /**
   * The built-in tool this is (its program is one of toolgate's own launchers): it runs with toolgate's own
   * runtime, wherever `deno` is or is not on PATH.
   */
  readonly builtin?: string;
  /** Did the program exist when the manifest was loaded? One that appears later is not run. */
  readonly present: boolean;
  /** A tool of an MCP server of `mcpServers` (listed as `mcp__SERVER__TOOL`): the gateway runs it. */
  readonly upstream?: { readonly server: string; readonly tool: string };
  /**
   * Whether an MCP client may, or must, run the tool as a task (the manifest's `execution.taskSupport`, MCP's
   * word); absent: the manifest does not say, and `serve` lets a client run it either way.
   */
  readonly taskSupport?: TaskSupport;
}

/**
 * The values of a manifest's `execution.taskSupport`, as MCP names them: `"forbidden"` (never a task),
 * `"optional"` (the client chooses), `"required"` (only as a task).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TASK_SUPPORT } from "./manifest_types.ts";
 * assert.ok(TASK_SUPPORT.includes("required"));
 * ```
 */
export const TASK_SUPPORT: readonly TaskSupport[] = ["forbidden", "optional", "required"];

/** A tool's task support, as a manifest's `execution.taskSupport` and MCP's `tools/list` name it. */
export type TaskSupport = "forbidden" | "optional" | "required";

/**
 * A validated manifest.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadManifest } from "./manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * assert.ok(loaded.ok);
 * assert.ok(loaded.manifest.tools.map((tool) => tool.name).includes("get_time"));
 * ```
 */
export interface Manifest {
  /** Absolute path of the manifest file. */
  readonly path: string;
  /** The folder relative commands resolve against. */
  readonly dir: string;
  /** `<dir>/tools/bin`, the only place relative commands may point into. */
  readonly binDir: string;
  /** The tools, in manifest order. */
  readonly tools: readonly ToolSpec[];
  /** The tools by name. */
  readonly byName: ReadonlyMap<string, ToolSpec>;
  /** Non-fatal findings (unknown fields). */
  readonly warnings: readonly string[];
  /** The MCP servers of `mcpServers` (a disabled one left out), whose tools the gateway adds. */
  readonly servers: readonly ServerSpec[];
  /**
   * A trusted manifest's programs as they were trusted, by resolved path (see `trust.ts`): a program that is not
   * among them, or no longer what it was, is not run. Absent: a manifest the user named, or toolgate's own.
   */
  readonly pinned?: ReadonlyMap<string, PinnedProgram>;
  /**
   * The files of the code a trusted manifest's tools' and servers' command lines name, as they were trusted, by
   * absolute path (see `trust.ts`): a tool or server whose code is no longer what it was is not started.
   */
  readonly pinnedCode?: ReadonlyMap<string, PinnedProgram>;
}

/**
 * The outcome of loading: a manifest, or every error found (warnings either way).
 *
 * @example
 * ```ts
 * import { loadManifest } from "./manifest.ts";
 * const result = await loadManifest("tools.json");
 * if (!result.ok) for (const error of result.errors) console.error(error); // tool[3] "fetch": duplicate name
 * for (const warning of result.warnings) console.error(`warning: ${warning}`);
 * ```
 */
export type ManifestResult =
  | { ok: true; manifest: Manifest; warnings: readonly string[] }
  | { ok: false; errors: readonly string[]; warnings: readonly string[] };

/**
 * Options of {@linkcode loadManifest}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadManifest } from "./manifest.ts";
 * const loaded = await loadManifest("tools.json", { allowAbsoluteCommands: true, compileSchemas: true });
 * assert.ok(loaded.ok);
 * ```
 */
export interface ManifestOptions {
  /** Accept absolute `command[0]` paths (meant for tests). */
  allowAbsoluteCommands?: boolean;
  /** Compile every schema now, so that a schema ajv cannot compile is a manifest error (the `validate` command). */
  compileSchemas?: boolean;
  /**
   * Check that every tool's program is there, a regular executable file, so that one that is not is a manifest
   * error naming the tool (the `validate` command). Other loads leave it to the call, which answers `unavailable`:
   * one missing program must not take every other tool down with it.
   */
  checkPrograms?: boolean;
  /**
   * Where {@linkcode loadManifest} remembers manifests whose schemas passed (toolgate's state folder): an unchanged
   * manifest is then loaded without the schema engine. Absent: no cache.
   */
  cacheDir?: string;
  /**
   * The schemas were checked already (a cache says so): skip the meta-schema check, the compile and the pattern
   * warnings. Set by {@linkcode loadManifest}; a caller of {@linkcode validateManifest} leaves it out.
   */
  schemasChecked?: boolean;
  /**
   * Digests of single schemas that passed every check and compiled before (with `compileSchemas`): they are not
   * checked again, so that a changed manifest compiles only its new schemas. Set by {@linkcode loadManifest}.
   */
  knownSchemas?: ReadonlySet<string>;
  /** Receives the digest of each schema that passes every check and compiles, with no warning (see above). */
  passedSchemas?: string[];
  /** The manifest's text, read already (the trust gate digested these bytes): the file is not read again. */
  text?: string;
  /** Profiles resolved already (by the trust gate), by name: a profile file is not read again. */
  profiles?: Map<string, ProfileResult>;
}

/**
 * The OpenAI function-name rule.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TOOL_NAME_PATTERN } from "./manifest_types.ts";
 * assert.ok(TOOL_NAME_PATTERN.test("get_time"));
 * assert.equal(TOOL_NAME_PATTERN.test("get time"), false);
 * ```
 */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * The name of the in-process tool toolgate offers beside a manifest's (src/run/store_secret.ts): reserved, no
 * manifest tool may take it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { STORE_SECRET } from "./manifest_types.ts";
 * assert.equal(STORE_SECRET, "store_secret");
 * ```
 */
export const STORE_SECRET = "store_secret";
