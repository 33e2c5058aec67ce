/**
 * The shape of a JSON-RPC 2.0 message as MCP uses it, checked without a schema library: what the gateway reads
 * from a server's stdout and what `serve --http` reads from a client's POST pass it before anything else.
 *
 * @module
 */

const isId = (id: unknown) => typeof id === "string" || typeof id === "number";
const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * What makes `message` not a JSON-RPC 2.0 message of MCP's (a request, a notification, a result or an error
 * answer), or undefined when it is one. The shape alone: what a result holds is the SDK client's to check, and
 * the gateway's after it (a request's params, its handler's). The SDK's own schema did the same work in several
 * times the time, at every message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonRpcFault } from "./json_rpc.ts";
 * assert.equal(jsonRpcFault({ jsonrpc: "2.0", id: 1, result: {} }), undefined);
 * assert.equal(jsonRpcFault({ jsonrpc: "2.0", method: "notifications/progress", params: {} }), undefined);
 * assert.equal(jsonRpcFault({ jsonrpc: "2.0", id: 1, error: { code: -32601, message: "no" } }), undefined);
 * assert.equal(jsonRpcFault({ jsonrpc: "1.0", id: 1, result: {} }), "its jsonrpc is not \"2.0\"");
 * assert.equal(jsonRpcFault({ jsonrpc: "2.0", id: 1, result: [] }), "its result is not an object");
 * assert.equal(jsonRpcFault({ jsonrpc: "2.0", id: {}, method: "x" }), "its id is neither a string nor a number");
 * ```
 */
export function jsonRpcFault(message: unknown): string | undefined {
  if (!isObject(message)) return "it is not an object";
  if (message.jsonrpc !== "2.0") return 'its jsonrpc is not "2.0"';
  if ("method" in message) {
    if (typeof message.method !== "string") return "its method is not a string";
    if ("id" in message && !isId(message.id)) return "its id is neither a string nor a number";
    if ("params" in message && !isObject(message.params)) return "its params are not an object";
    return undefined;
  }
  if ("result" in message) {
    if (!isId(message.id)) return "its id is neither a string nor a number";
    return isObject(message.result) ? undefined : "its result is not an object";
  }
  if ("error" in message) {
    // An error answer to a request the server could not read has a null id.
    if (!isId(message.id) && message.id !== null) return "its id is neither a string nor a number";
    const { error } = message;
    return isObject(error) && Number.isInteger(error.code) && typeof error.message === "string"
      ? undefined
      : "its error has no integer code and string message";
  }
  return "it is neither a request, a notification nor an answer";
}
