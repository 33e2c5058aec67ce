/**
 * The stateless revision (2026-07-28) over stdio, beside the session one on the same connection: each incoming
 * message that belongs to the new revision (`stateless.ts` says which) is answered on its own, its notifications
 * and answer written on stdout; every other message goes on to the session's server as before, so that a client
 * of 2025-11-25 keeps its `initialize` and its session. A `notifications/cancelled` naming a stateless request in
 * flight ends that call's tree. The connection is the stateless callers' key (`stdio:<random id>`).
 *
 * Not here: the stdio transport and the session's server (`stdio.ts`); the requests (`stateless.ts`).
 *
 * @module
 */
// The SDK's "./*" export points `x.js` at types in `x.js.d.ts`, which do not exist: name the types beside each import.
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/shared/transport"
import type { Transport } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/transport.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { JSONRPCMessage } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { isRecord } from "../contract.ts";
import type { ToolService } from "./server.ts";
import { isStateless, type RequestId, requestId } from "./stateless_wire.ts";
import { StatelessRequests } from "./stateless.ts";

/**
 * Puts the stateless revision in front of a connected transport: call it after the session's server has
 * connected (it takes over `transport.onmessage` and hands on what is not its own). Returns a function for the
 * connection's end: the stateless calls in flight are aborted, and its callers' background jobs end.
 *
 * @example Not run as a doc test: it needs a connected transport (tests/mcp/stateless_test.ts drives one).
 * ```ts ignore
 * import { answerStatelessOn } from "./stateless_stdio.ts";
 * await server.connect(transport);
 * const endStateless = answerStatelessOn(transport, service, (m) => console.error(m));
 * ```
 */
export function answerStatelessOn(
  transport: Transport,
  service: ToolService,
  onError?: (message: string) => void,
): () => Promise<void> {
  const requests = new StatelessRequests(service);
  const connection = `stdio:${crypto.randomUUID()}`;
  const inFlight = new Map<RequestId, AbortController>();
  const own = transport.onmessage;
  const send = (message: unknown) =>
    transport.send(message as JSONRPCMessage).catch((error) =>
      onError?.(`toolgate: mcp: an answer not sent: ${(error as Error).message}`)
    );
  transport.onmessage = (message, extra) => {
    const cancelled = cancelledId(message);
    if (cancelled !== undefined && inFlight.has(cancelled)) {
      inFlight.get(cancelled)?.abort();
      return;
    }
    if (!isStateless(message)) return own?.(message, extra);
    const id = requestId(message);
    const stop = new AbortController();
    if (id !== null) inFlight.set(id, stop);
    requests.answer(message, {
      connection,
      signal: stop.signal,
      notify: (notification) => void send({ jsonrpc: "2.0", ...notification }),
    }).then((answer) => {
      // A cancelled request is not answered (as for a session's).
      if (answer !== undefined && !stop.signal.aborted) void send(answer.response);
    }, (error) => onError?.(`toolgate: mcp: ${(error as Error).message}`))
      .finally(() => {
        if (id !== null && inFlight.get(id) === stop) inFlight.delete(id);
      });
  };
  return async () => {
    for (const stop of inFlight.values()) stop.abort();
    requests.close();
    await service.forgetCallers(`${connection}|`);
  };
}

/** The request a `notifications/cancelled` names, if the message is one. */
function cancelledId(message: unknown): RequestId | undefined {
  if (!isRecord(message) || message.method !== "notifications/cancelled" || !isRecord(message.params)) {
    return undefined;
  }
  const { requestId: id } = message.params;
  return typeof id === "string" || typeof id === "number" ? id : undefined;
}
