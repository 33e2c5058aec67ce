/**
 * The words of an approval: why a call needs one, said from what its profile (an MCP server's tool: its server's
 * profile) lets it write and reach, for the question a person is asked and the refusal the model reads.
 *
 * Not here: whether it needs one (`risk.ts`), who gives it (`policy.ts`), the question's other lines
 * (`approval_prompt.ts`).
 *
 * @module
 */
import type { PreparedCall } from "./prepared_call.ts";
import type { CallRisk } from "./risk.ts";
import type { Destination } from "../contract/host_list.ts";

/** At most this many of a profile's paths or hosts are named in a reason; the rest are counted. */
const NAMED = 3;

/** Up to {@linkcode NAMED} items, then how many more. */
function named(items: readonly string[]): string {
  const shown = items.slice(0, NAMED).join(", ");
  return items.length > NAMED ? `${shown} and ${items.length - NAMED} more` : shown;
}

/** A profile's write path in words: `.` is the workspace, a relative path lies in it. */
function place(path: string): string {
  if (path === "." || path === "./") return "the workspace";
  return path.startsWith("/") ? path : `the workspace's ${path.replace(/^\.\//, "")}`;
}

/**
 * Why a call needs approval, in words for the person and the model, worded from what its profile lets it write
 * and reach (an MCP server's tool: its server's profile); `undefined` when it needs none.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { reasonOf } from "./approval_reason.ts";
 * import type { PreparedCall } from "./prepared_call.ts";
 * const call = {
 *   tool: { name: "mcp__notes__add", upstream: { server: "notes", tool: "add" }, profile: { write: ["/srv/notes"], net: false } },
 *   args: {},
 *   argsText: "{}",
 * } as unknown as PreparedCall;
 * equal(reasonOf(call, { changes: true, egress: false }), 'its server "notes" may write /srv/notes');
 * ```
 */
export function reasonOf(call: PreparedCall, risk: CallRisk): string | undefined {
  const { tool } = call;
  const server = tool.upstream?.server;
  const who = server === undefined ? "it" : `its server ${JSON.stringify(server)}`;
  const { write, net } = tool.profile;
  const parts: string[] = [];
  if (risk.changes) {
    const undeclared = server === undefined
      ? "it is not declared read-only"
      : `it is not in its server's readOnly list`;
    parts.push(
      write.length > 0 ? `${who} may write ${named(write.map(place))}` : `${undeclared}: it may run programs`,
    );
  }
  if (risk.egress) {
    const where = risk.destination
      ? `to ${hostText(risk.destination)}`
      : `${who} may reach ${net === true ? "any host" : named(net === false ? [] : net)}`;
    parts.push(`it can send data off the machine (${where})`);
  }
  return parts.length === 0 ? undefined : parts.join(", and ");
}

/**
 * A destination's host as a person writes it: an IPv6 address in brackets.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { hostText } from "./approval_reason.ts";
 * equal(hostText({ host: "::1", port: "80" }), "[::1]");
 * ```
 */
export function hostText(destination: Destination): string {
  return destination.host.includes(":") ? `[${destination.host}]` : destination.host;
}
