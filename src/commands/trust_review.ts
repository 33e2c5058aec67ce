/**
 * What trusting a manifest's MCP servers pins, and how it reads: each server's tools as they are listed now
 * against their pins (new, changed field by field, pinned), a description with invisible characters flagged.
 * `toolgate trust` prints it and the web console shows it; both pin what it found, the same way.
 *
 * @module
 */
import { pinChanges, type PinSet, type ToolDefinition } from "../manifest/pins.ts";
import { invisibleCharacters } from "../base/invisible.ts";
import { offerLabel } from "../manifest/offer_names.ts";
import { allowsNetwork, type PermissionProfile } from "../manifest/profiles.ts";

/** One upstream tool against its pin. */
export interface ToolReview {
  /** Its name as toolgate exposes it, `mcp__SERVER__TOOL`. */
  readonly name: string;
  readonly state: "new" | "changed" | "pinned";
  /** What changed, a line per field (`description: "a" -> "b"`). */
  readonly changes: readonly string[];
  /** Its title or description carries invisible or control characters. */
  readonly warnings: readonly string[];
}

/** One server of the manifest: its tools, or why they cannot be listed. */
export interface ServerReview {
  readonly server: string;
  /** Why it cannot be used (its pins are kept as they were). */
  readonly error?: string;
  readonly tools: readonly ToolReview[];
}

/**
 * Lists each server's tools through `definitions` and holds them against `before`: the review, and the pins to
 * record (a server that cannot be listed keeps its earlier pins).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { reviewServers } from "./trust_review.ts";
 * const { servers } = await reviewServers(["fs"], {}, () => Promise.resolve([{ name: "read" }]));
 * assert.equal(servers[0].tools[0].state, "new");
 * ```
 */
export async function reviewServers(
  names: readonly string[],
  before: PinSet,
  definitions: (server: string) => Promise<ToolDefinition[]>,
): Promise<{ pins: PinSet; servers: ServerReview[] }> {
  const pins: PinSet = {};
  const servers: ServerReview[] = [];
  for (const server of names) {
    let listed;
    try {
      listed = await definitions(server);
    } catch (error) {
      servers.push({ server, error: (error as Error).message, tools: [] });
      if (before[server] !== undefined) pins[server] = before[server];
      continue;
    }
    pins[server] = {};
    const tools: ToolReview[] = [];
    for (const definition of listed) {
      pins[server][definition.name] = definition;
      const old = before[server]?.[definition.name];
      const changes = old === undefined ? [] : pinChanges(old, definition);
      const warnings: string[] = [];
      for (const field of ["title", "description"] as const) {
        const text = definition[field];
        const found = typeof text === "string" ? invisibleCharacters(text) : [];
        if (found.length > 0) {
          warnings.push(`its ${field} carries invisible or control characters (${found.join(", ")})`);
        }
      }
      tools.push({
        // A prompt, resource or template (pinned beside the tools): shown by the name or URI `serve` gives it.
        name: offerLabel(server, definition.name) ?? `mcp__${server}__${definition.name}`,
        state: old === undefined ? "new" : changes.length === 0 ? "pinned" : "changed",
        changes,
        warnings,
      });
    }
    servers.push({ server, tools });
  }
  return { pins, servers };
}

/**
 * The review as `toolgate trust` prints it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { reviewLines } from "./trust_review.ts";
 * assert.deepEqual(reviewLines([{ server: "fs", tools: [{ name: "mcp__fs__read", state: "new", changes: [], warnings: [] }] }]), ['MCP server "fs": 1 tool:', "  mcp__fs__read (new)"]);
 * ```
 */
export function reviewLines(servers: readonly ServerReview[]): string[] {
  const lines: string[] = [];
  for (const review of servers) {
    if (review.error !== undefined) {
      lines.push(`MCP server "${review.server}": not pinned, it cannot be used: ${review.error}`);
      continue;
    }
    // Prompts, resources and templates are labelled `prompt mcp__...`, `resource toolgate+...`: counted apart.
    const count = review.tools.filter((tool) => !tool.name.includes(" ")).length;
    const offers = review.tools.length - count;
    const besides = offers === 0
      ? ""
      : ` and ${offers} prompt${offers === 1 ? "" : "s"} or resource${offers === 1 ? "" : "s"}`;
    lines.push(`MCP server "${review.server}": ${count} tool${count === 1 ? "" : "s"}${besides}:`);
    for (const tool of review.tools) {
      lines.push(
        `  ${tool.name}${tool.state === "new" ? " (new)" : tool.state === "changed" ? " (changed)" : ""}`,
      );
      for (const change of tool.changes) lines.push(`    ${change}`);
      for (const warning of tool.warnings) lines.push(`    warning: ${warning}`);
    }
  }
  return lines;
}

/** What {@linkcode readOnlyAdvice} reads of a manifest's server. */
export interface AdvisedServer {
  readonly name: string;
  /** The tools the manifest lists as read-only. */
  readonly readOnly: readonly string[];
  /** The only tools exposed, when given; those never exposed. */
  readonly allow?: readonly string[];
  readonly deny: readonly string[];
  /** Its profile's network: one that reaches a network frees no tool, listed or not. */
  readonly profile: Pick<PermissionProfile, "net">;
}

/**
 * The lines `toolgate trust` closes with when a server marks tools read-only (`readOnlyHint` in its pinned
 * definitions) that the manifest's `readOnly` does not list: those still ask for approval at every call (the
 * server's word never makes a tool free, docs/approvals.md), and where nobody can be asked (an MCP client without
 * elicitation) they are refused. The user decides; the lines say what to add. A server that reaches a network
 * gets none: `readOnly` never waives the network.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readOnlyAdvice } from "./trust_review.ts";
 * const pins = { memory: { read_graph: { name: "read_graph", annotations: { readOnlyHint: true } }, create: { name: "create" } } };
 * const server = { name: "memory", readOnly: [], deny: [], profile: { net: false } };
 * assert.deepEqual(readOnlyAdvice([server], pins), [
 *   "tools their servers say only read (readOnlyHint) still ask for approval at every call, and are refused where nobody can be asked, until tools.json lists them in the server's readOnly; the server's word is no proof, so list only those you trust to only read:",
 *   '  memory: "readOnly": ["read_graph"]',
 * ]);
 * assert.deepEqual(readOnlyAdvice([{ ...server, readOnly: ["read_graph"] }], pins), []);
 * ```
 */
export function readOnlyAdvice(servers: readonly AdvisedServer[], pins: PinSet): string[] {
  const lines: string[] = [];
  for (const server of servers) {
    if (allowsNetwork(server.profile)) continue;
    const marked = Object.values(pins[server.name] ?? {}).filter((definition) =>
      offerLabel(server.name, definition.name) === undefined &&
      (definition.annotations as { readOnlyHint?: unknown } | undefined)?.readOnlyHint === true &&
      !server.readOnly.includes(definition.name) && !server.deny.includes(definition.name) &&
      (server.allow === undefined || server.allow.includes(definition.name))
    ).map((definition) => definition.name);
    if (marked.length === 0) continue;
    // The tools the manifest lists already stay in the list to write.
    lines.push(`  ${server.name}: "readOnly": ${JSON.stringify([...server.readOnly, ...marked])}`);
  }
  if (lines.length === 0) return [];
  return [
    "tools their servers say only read (readOnlyHint) still ask for approval at every call, and are refused where " +
    "nobody can be asked, until tools.json lists them in the server's readOnly; the server's word is no proof, so " +
    "list only those you trust to only read:",
    ...lines,
  ];
}
