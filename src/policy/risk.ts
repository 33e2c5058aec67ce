/**
 * What a prepared call could do that needs approval: whether it changes anything, whether it can send data off
 * the machine and where to, read from its tool's profile and, for the built-in tools, from their arguments.
 * The policy (`policy.ts`) decides on this.
 *
 * Not here: the decision (`policy.ts`), how a URL's host and port are read (`contract/host_list.ts`).
 *
 * @module
 */
import type { PreparedCall } from "./prepared_call.ts";
import { allowsNetwork } from "../manifest/profiles.ts";
import { beltReadOnly, beltUrlArgument } from "../manifest/tool_belt.ts";
import { type Destination, urlDestination } from "../contract/host_list.ts";

/**
 * What a call could do that needs approval.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assessCall } from "./risk.ts";
 * import { Executor } from "../run/executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const prepared = await executor.prepare("http_fetch", '{"url":"https://example.com/"}');
 * assert.ok(prepared.ok);
 * assert.deepEqual(assessCall(prepared.call), {
 *   changes: false,
 *   egress: true,
 *   destination: { host: "example.com", port: "443" },
 * });
 * ```
 */
export interface CallRisk {
  /** The tool is not read-only: it may write files or run programs. */
  readonly changes: boolean;
  /** The tool's profile allows the network: the call may send data off the machine. */
  readonly egress: boolean;
  /** Where the data goes, when the call itself says so (the built-in `http_fetch`'s `url`). */
  readonly destination?: Destination;
}

/**
 * Built-in tools whose calls only look for some arguments, though the tool can change things (and so is not
 * `readOnly`): the call is read-only when its predicate holds. The `job` tool's `poll` and `wait` read toolgate's
 * job table; its `kill` ends a process tree and needs approval like any change. Classified per call, and only for
 * toolgate's own tools: a manifest's tool of the same name is what its flags say.
 */
const READ_ONLY_CALLS: Readonly<Record<string, (args: Readonly<Record<string, unknown>>) => boolean>> = {
  job: (args) => args.action === "poll" || args.action === "wait",
};

/**
 * Does this call only look, whatever its tool could do? A manifest's tool that is `readOnly` and whose profile
 * writes nothing; an MCP server's tool that the user's manifest lists in that server's `readOnly` (the gateway
 * lists a server's tool only while its definition is the one the user pinned with `toolgate trust`, and the
 * server's own annotations never set the flag), whatever its server's profile writes: that profile still bounds the
 * process; a built-in tool that toolgate's own belt marks `readOnly`, or whose risk depends on its arguments (the
 * `job` tool: `poll` and `wait`, not `kill`), what this very call asks. None of these waives the network: a
 * profile that reaches it makes the call egress (see {@linkcode assessCall}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isReadOnlyCall } from "./risk.ts";
 * import { Executor } from "../run/executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const poll = await executor.prepare("job", '{"action":"poll","job_id":"job-1"}');
 * const kill = await executor.prepare("job", '{"action":"kill","job_id":"job-1"}');
 * assert.ok(poll.ok && kill.ok);
 * assert.ok(isReadOnlyCall(poll.call));
 * assert.equal(isReadOnlyCall(kill.call), false);
 * ```
 */
export function isReadOnlyCall(call: PreparedCall): boolean {
  const { tool } = call;
  const builtin = tool.builtin;
  if (builtin === undefined) {
    if (!tool.readOnly) return false;
    // A server's process keeps state (a data file, the files it serves): its profile writes for the tools that
    // change things. The user's `readOnly` list names the tools that only look, by the pinned definition.
    if (tool.upstream !== undefined) return true;
    // A manifest tool's word alone does not make it free: its profile must not let it write either.
    return tool.profile.write.length === 0;
  }
  // A built-in tool is what toolgate's own belt says of it (its own code, under its own Deno flags, bounds it),
  // whatever another manifest naming its program claims.
  if (tool.readOnly && beltReadOnly(builtin)) return true;
  return Object.hasOwn(READ_ONLY_CALLS, builtin) && READ_ONLY_CALLS[builtin](call.args);
}

/**
 * Where a built-in tool that fetches URLs (the belt's facts name its URL argument: `http_fetch`'s `url`) would
 * connect first, or `undefined` when its URL is not one it fetches.
 */
function fetchDestination(call: PreparedCall, argument: string): Destination | undefined {
  const text = call.args[argument];
  if (typeof text !== "string") return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  return urlDestination(url);
}

/**
 * What a call could do that needs approval: change things (a call that is not read-only, see
 * {@linkcode isReadOnlyCall}) and send data off the machine (a tool whose profile allows the network), with the
 * destination when the call names it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assessCall } from "./risk.ts";
 * import { Executor } from "../run/executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const prepared = await executor.prepare("fs_write_file", '{"path":"a.txt","content":"hi"}');
 * assert.ok(prepared.ok);
 * const risk = assessCall(prepared.call);
 * assert.ok(risk.changes || risk.egress); // approval needed
 * ```
 */
export function assessCall(call: PreparedCall): CallRisk {
  const egress = allowsNetwork(call.tool.profile);
  // Only toolgate's own tools are known to connect where their URL argument says: a manifest's tool is not.
  const argument = call.tool.builtin === undefined ? undefined : beltUrlArgument(call.tool.builtin);
  const destination = egress && argument !== undefined ? fetchDestination(call, argument) : undefined;
  return { changes: !isReadOnlyCall(call), egress, ...(destination ? { destination } : {}) };
}
