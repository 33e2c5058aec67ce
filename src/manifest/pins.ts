/**
 * Pinned definitions of upstream MCP tools: what the user trusted of each exposed tool (its name, title,
 * description, schemas and annotations), per server, kept beside the manifest's trust record; a tool whose
 * definition differs from its pin, or that has none, is withheld until `toolgate trust`.
 *
 * @module
 */
import { dirname, join } from "../base/paths.ts";
import { isRecord } from "../contract.ts";
import { canonical } from "../base/canonical_json.ts";
import { showInvisible } from "../base/invisible.ts";
import { ensurePrivateDir } from "../state/private_dir.ts";
import { readPrivateText, writePrivateText } from "../state/private_file.ts";
import { fnv1a64 } from "../state/state.ts";
import { trustDir } from "./trust_record.ts";

/** The parts of a tool's definition that are pinned, as the server gave them. */
export interface ToolDefinition {
  /** The tool's name on its server. */
  readonly name: string;
  /** Its title, as the server gave it. */
  readonly title?: unknown;
  /** Its description, as the server gave it. */
  readonly description?: unknown;
  /** Its input schema, as the server gave it. */
  readonly inputSchema?: unknown;
  /** Its output schema, as the server gave it. */
  readonly outputSchema?: unknown;
  /** Its annotations (the server's claims, never the user's word). */
  readonly annotations?: unknown;
}

/** The fields of a definition that are compared, in the order a change is shown. */
export const PINNED_FIELDS = ["title", "description", "inputSchema", "outputSchema", "annotations"] as const;

/** The pins of one manifest: by server, by tool name, the definition as trusted. */
export type PinSet = Record<string, Record<string, ToolDefinition>>;

/** Why a tool of a server is not exposed: it has no pin, or its definition is not the pinned one. */
export type WithheldReason = "new" | "changed";

const PIN_VERSION = 1;

/**
 * Only the pinned fields of a tool as an MCP server lists it (anything else it sends is not part of the pin).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { definitionOf } from "./pins.ts";
 * assert.deepEqual(definitionOf({ name: "t", description: "d", inputSchema: { type: "object" }, _meta: { x: 1 } }), { name: "t", description: "d", inputSchema: { type: "object" } });
 * ```
 */
export function definitionOf(tool: Record<string, unknown>): ToolDefinition {
  const out: Record<string, unknown> = { name: String(tool.name) };
  for (const field of PINNED_FIELDS) if (tool[field] !== undefined) out[field] = tool[field];
  return out as unknown as ToolDefinition;
}

/**
 * Is `current` the definition that was pinned?
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { samePin } from "./pins.ts";
 * assert.ok(samePin({ name: "t", description: "a" }, { name: "t", description: "a" }));
 * ```
 */
export function samePin(current: ToolDefinition, pinned: ToolDefinition | undefined): boolean {
  return pinned !== undefined && canonical(current) === canonical(pinned);
}

/**
 * What changed between a pinned definition and the current one, one line per field.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pinChanges } from "./pins.ts";
 * assert.deepEqual(pinChanges({ name: "t", description: "a" }, { name: "t", description: "b" }), ['description: "a" -> "b"']);
 * ```
 */
export function pinChanges(pinned: ToolDefinition, current: ToolDefinition): string[] {
  const lines: string[] = [];
  // A prompt's or a resource's definition pins fields of its own (offer_names.ts): they are shown after these.
  const own = (definition: ToolDefinition) => Object.keys(definition).filter((key) => key !== "name");
  const extra = [...new Set([...own(pinned), ...own(current)])]
    .filter((key) => !(PINNED_FIELDS as readonly string[]).includes(key)).sort();
  for (const field of [...PINNED_FIELDS, ...extra]) {
    const before = (pinned as unknown as Record<string, unknown>)[field];
    const after = (current as unknown as Record<string, unknown>)[field];
    if (canonical(before) === canonical(after)) continue;
    const show = (value: unknown) => value === undefined ? "(none)" : shorten(canonical(value));
    lines.push(`${field}: ${show(before)} -> ${show(after)}`);
  }
  return lines;
}

function shorten(text: string): string {
  const visible = showInvisible(text);
  return visible.length > 300 ? `${visible.slice(0, 300)}...` : visible;
}

function pinFile(stateDir: string, manifestRealPath: string): string {
  return join(trustDir(stateDir), `mcp-${fnv1a64(manifestRealPath)}.json`);
}

/**
 * The pins of the manifest at `manifestRealPath` (none yet: `{}`). Read strictly: the file must be this user's
 * and nobody else's (a `StateDirError` says what is wrong).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readPins } from "./pins.ts";
 * assert.deepEqual(readPins(await Deno.makeTempDir(), "/srv/project/tools.json"), {});
 * ```
 */
export function readPins(stateDir: string, manifestRealPath: string): PinSet {
  const text = readPrivateText(pinFile(stateDir, manifestRealPath), "the pinned MCP tool definitions");
  if (text === undefined) return {};
  try {
    const value = JSON.parse(text);
    if (!isRecord(value) || value.version !== PIN_VERSION || value.manifest !== manifestRealPath) return {};
    return isRecord(value.servers) ? value.servers as PinSet : {};
  } catch {
    return {};
  }
}

/**
 * Records `pins` as what the user trusts of the manifest's servers, replacing the earlier record.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readPins, writePins } from "./pins.ts";
 * const state = await Deno.makeTempDir();
 * writePins(state, "/srv/project/tools.json", { fs: { read: { name: "read" } } });
 * assert.equal(readPins(state, "/srv/project/tools.json").fs.read.name, "read");
 * ```
 */
export function writePins(stateDir: string, manifestRealPath: string, pins: PinSet): void {
  ensurePrivateDir(trustDir(stateDir), dirname(stateDir));
  writePrivateText(
    pinFile(stateDir, manifestRealPath),
    JSON.stringify({ version: PIN_VERSION, manifest: manifestRealPath, servers: pins }, null, 2) + "\n",
  );
}
