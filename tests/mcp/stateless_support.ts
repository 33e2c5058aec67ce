/**
 * A 2026-07-28 (stateless) client's raw requests for the HTTP tests: one JSON-RPC POST with the revision's
 * headers (`Mcp-Method`, `Mcp-Name`) and `_meta` (revision, capabilities, client name), and the poll of a task
 * with `tasks/get` until it settles. Raw on purpose: these tests check the wire, which the SDK's clients hide.
 *
 * Not here: starting a server (./helpers.ts), the SDK's clients.
 *
 * @module
 */
import { TOKEN } from "./helpers.ts";

/** The revision of the stateless protocol. */
export const REVISION = "2026-07-28";
/** A client's capabilities declaring the tasks extension. */
export const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };

/** A JSON-RPC answer's body, as the tests read it. */
// deno-lint-ignore no-explicit-any
export type Body = Record<string, any>;

/** Who sends a stateless request, and with what. */
export interface StatelessClient {
  /** The bearer token; ./helpers.ts's `TOKEN` unless given. */
  token?: string;
  /** The client's capabilities, in `_meta`; none declared unless given. */
  caps?: unknown;
  /** The client's name in `_meta`'s `clientInfo`; no `clientInfo` unless given. */
  client?: string;
  /** The request's JSON-RPC id; a fresh one unless given. */
  id?: number;
}

let lastId = 0;

/**
 * The headers of a stateless request of `method`; `Mcp-Name` only when `name` is a string.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const headers = statelessHeaders("tools/call", "echo", "t");
 * assert.equal(headers["mcp-name"], "echo");
 * assert.equal(statelessHeaders("server/discover", undefined, "t")["mcp-name"], undefined);
 * ```
 */
export function statelessHeaders(
  method: string,
  name: unknown,
  token: string = TOKEN,
): Record<string, string> {
  return {
    authorization: `Bearer ${token}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": REVISION,
    "mcp-method": method,
    ...(typeof name === "string" ? { "mcp-name": name } : {}),
  };
}

/**
 * Posts one stateless request of `method` to `url` (its `Mcp-Name`: a `tools/call`'s tool or a `tasks/*`'s task)
 * and answers its HTTP status, the id it was sent with, and the parsed body.
 *
 * @example
 * ```ts ignore
 * const { body } = await statelessRequest(server.url, "server/discover", {}, { caps: TASKS, client: "x" });
 * ```
 */
export async function statelessRequest(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  from: StatelessClient = {},
): Promise<{ status: number; id: number; body: Body }> {
  const id = from.id ?? ++lastId;
  const name = method === "tools/call" ? params.name : params.taskId;
  const response = await fetch(url, {
    method: "POST",
    headers: statelessHeaders(method, name, from.token),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": REVISION,
          "io.modelcontextprotocol/clientCapabilities": from.caps ?? {},
          ...(from.client === undefined
            ? {}
            : { "io.modelcontextprotocol/clientInfo": { name: from.client, version: "1" } }),
        },
      },
    }),
  });
  return { status: response.status, id, body: await response.json() };
}

/** How long to poll, and which waiting status to stop at too. */
export interface Settle extends StatelessClient {
  /** A waiting status (`input_required`) to return at rather than poll on. */
  stopAt?: string;
  /** How long the task may stay waiting, in milliseconds (20 s unless given). */
  withinMs?: number;
}

/**
 * Polls `tasks/get` for `taskId` until the task leaves `working` and `input_required` (unless `stopAt` names it),
 * and answers its last `result`.
 *
 * @example
 * ```ts ignore
 * const done = await settleTask(server.url, taskId, { caps: TASKS, client: "x" });
 * ```
 */
export async function settleTask(url: URL, taskId: string, how: Settle = {}): Promise<Body> {
  const deadline = performance.now() + (how.withinMs ?? 20_000);
  for (;;) {
    const { body } = await statelessRequest(url, "tasks/get", { taskId }, how);
    const status = body.result?.status;
    if ((status !== "working" && status !== "input_required") || status === how.stopAt) return body.result;
    if (performance.now() > deadline) throw new Error(`task ${taskId} still ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
