/**
 * The MCP handlers of a 2025-11-25 session for what the manifest's servers offer besides their tools:
 * `resources/list`, `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get` and
 * `completion/complete` (answered by `offer_requests.ts`; a form the server asks while a prompt is got sent to the
 * session's client as an elicitation), and `resources/subscribe` and `unsubscribe`, each update passed on to the
 * session that subscribed. A session's subscriptions end with it.
 *
 * Not here: the answers and the names toolgate serves them by (offer_requests.ts), the pins and the profile's
 * reach (gateway/upstream_offers.ts), the tools (server.ts).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/index"
import type { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  CompleteRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import type { QuestionHandlers } from "../run/tool_questions.ts";
import { OfferRequests, type OfferServing, resultOf } from "./offer_requests.ts";

/**
 * Registers the handlers on `server` (before it connects) and declares the capabilities they need; `questions`
 * are the session's handlers of a request's questions (its user's form only is asked for a prompt). Returns what
 * ends the session's subscriptions (the server's close calls it).
 *
 * @example Not run as a doc test: a session's server of `serve` (tests/gateway_offers_test.ts drives it).
 * ```ts ignore
 * const end = serveOffers(server, { offers: executor.offers, servers: ["ev"] });
 * server.onclose = () => void end();
 * ```
 */
export function serveOffers(
  server: Server,
  serving: OfferServing,
  questions?: (requestId: string | number) => QuestionHandlers,
): () => Promise<void> {
  const { offers } = serving;
  const requests = new OfferRequests(serving);
  const servers = requests.servers;
  server.registerCapabilities({
    resources: { subscribe: true, listChanged: true },
    prompts: { listChanged: true },
    completions: {},
  });
  // Each server's notifications are taken from its start (its lists' changes heard before anything is asked).
  for (const name of servers) void offers.capabilities(name);
  // A server's list changed: this session is told, and lists again (what is new is withheld until trusted).
  const stopWatching = offers.changes((name, what) => {
    if (!servers.includes(name)) return;
    const telling = what === "prompts" ? server.sendPromptListChanged() : server.sendResourceListChanged();
    telling.catch((error) =>
      serving.onError?.(`toolgate: mcp: a list change not sent: ${(error as Error).message}`)
    );
  });

  server.setRequestHandler(ListResourcesRequestSchema, () => requests.listResources());
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => requests.listResourceTemplates());
  server.setRequestHandler(ListPromptsRequestSchema, () => requests.listPrompts());
  server.setRequestHandler(
    ReadResourceRequestSchema,
    (request, extra) => requests.read(request.params.uri, extra.signal),
  );
  // A server's form question while a prompt is got goes to this session's client, on the stream of the request.
  server.setRequestHandler(GetPromptRequestSchema, (request, extra) => {
    const user = questions?.(extra.requestId).user;
    const asking = user === undefined ? undefined : { questions: { user } };
    return requests.getPrompt(request.params.name, request.params.arguments, extra.signal, asking);
  });
  server.setRequestHandler(
    CompleteRequestSchema,
    (request, extra) => requests.complete(request.params, extra.signal),
  );

  // The session's subscriptions, by server: one listener each, so that its updates go to this session only.
  const listeners = new Map<string, (uri: string) => void>();
  const subscribed = new Set<string>();
  const listenerOf = (name: string) => {
    let listener = listeners.get(name);
    if (listener === undefined) {
      listener = (uri: string) =>
        void server.sendResourceUpdated({ uri: requests.uriOf(name, uri) }).catch((error) =>
          serving.onError?.(`toolgate: mcp: a resource update not sent: ${(error as Error).message}`)
        );
      listeners.set(name, listener);
    }
    return listener;
  };
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const { server: name, id } = requests.routeUri(request.params.uri);
    resultOf(await offers.subscribe(name, id, listenerOf(name)));
    subscribed.add(JSON.stringify([name, id]));
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    const { server: name, id } = requests.routeUri(request.params.uri);
    subscribed.delete(JSON.stringify([name, id]));
    resultOf(await offers.unsubscribe(name, id, listenerOf(name)));
    return {};
  });

  return async () => {
    stopWatching();
    const ending = [...subscribed].map((key) => JSON.parse(key) as [string, string]);
    subscribed.clear();
    await Promise.all(ending.map(([name, id]) => offers.unsubscribe(name, id, listenerOf(name))));
  };
}
