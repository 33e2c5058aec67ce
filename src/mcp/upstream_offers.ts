/**
 * The MCP handlers of what the manifest's servers offer besides their tools: `resources/list`,
 * `resources/templates/list`, `resources/read`, `resources/subscribe` and `unsubscribe` (each update passed on to
 * the session that subscribed), `prompts/list`, `prompts/get` and `completion/complete`, answered through the
 * executor's audited offers (`run/offer_link.ts`). Beside other servers, a prompt is named `mcp__SERVER__NAME` and
 * a URI `toolgate+SERVER:URI` (`manifest/offer_names.ts`), so that two servers cannot collide and each request is
 * routed to its server; with one server served by its own names (`serve --server NAME`), every name, URI and
 * answer is the server's own, unchanged. A session's subscriptions end with it.
 *
 * Not here: the pins and the profile's reach (gateway/upstream_offers.ts), the tools (server.ts).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/index"
import type { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { type Envelope, isRecord } from "../contract.ts";
import { unwrapUri, wrapUri } from "../manifest/offer_names.ts";
import { gatewayName } from "../manifest/server_spec.ts";
import type { OfferList, ServerOffers } from "../run/offer_link.ts";

/** What {@linkcode serveOffers} serves. */
export interface OfferServing {
  /** The executor's offers. */
  readonly offers: ServerOffers;
  /** The manifest's servers, in order. */
  readonly servers: readonly string[];
  /** The one server served by its own names (`serve --server NAME`); absent: every server, renamed. */
  readonly own?: string;
  /** Where trouble that reaches no client is said (a server that could not list, an update not sent). */
  readonly onError?: (message: string) => void;
}

/** One name or URI of toolgate's, as its server has it. */
interface Routed {
  readonly server: string;
  readonly id: string;
}

type Item = Record<string, unknown>;

/**
 * Registers the handlers on `server` (before it connects) and declares the capabilities they need; returns what
 * ends the session's subscriptions (the server's close calls it).
 *
 * @example Not run as a doc test: a session's server of `serve` (tests/gateway_offers_test.ts drives it).
 * ```ts ignore
 * const end = serveOffers(server, { offers: executor.offers, servers: ["ev"] });
 * server.onclose = () => void end();
 * ```
 */
export function serveOffers(server: Server, serving: OfferServing): () => Promise<void> {
  const { offers, own } = serving;
  const servers = own === undefined ? serving.servers : [own];
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

  const uriOf = (name: string, uri: string) => own === undefined ? wrapUri(name, uri) : uri;
  const promptOf = (name: string, prompt: string) => own === undefined ? gatewayName(name, prompt) : prompt;
  const routeUri = (uri: string): Routed => {
    if (own !== undefined) return { server: own, id: uri };
    const routed = unwrapUri(uri);
    if (routed === undefined || !servers.includes(routed.server)) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `Resource ${uri} is not one of toolgate's: a server's resource is named toolgate+SERVER:URI ` +
          `(servers: ${servers.join(", ")})`,
      );
    }
    return { server: routed.server, id: routed.uri };
  };
  const routePrompt = (name: string): Routed => {
    if (own !== undefined) return { server: own, id: name };
    const server = servers.find((s) => name.startsWith(gatewayName(s, "")));
    if (server === undefined) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `Prompt ${name} not found: a server's prompt is named mcp__SERVER__NAME`,
      );
    }
    return { server, id: name.slice(gatewayName(server, "").length) };
  };

  /** Every server's list, renamed; a server that cannot list is left out (and said), unless served alone. */
  const listed = async (list: OfferList, rename: (server: string, item: Item) => Item): Promise<Item[]> => {
    const answers = await Promise.all(
      servers.map(async (name) => [name, await offers.list(name, list)] as const),
    );
    return answers.flatMap(([name, envelope]) => {
      if (!envelope.ok) {
        if (own !== undefined) throw asMcpError(envelope);
        serving.onError?.(
          `toolgate: mcp: the MCP server ${JSON.stringify(name)} did not list: ${envelope.message}`,
        );
        return [];
      }
      const items = isRecord(envelope.result) && Array.isArray(envelope.result.items)
        ? envelope.result.items
        : [];
      return items.filter(isRecord).map((item) => rename(name, item));
    });
  };

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: await listed("resources", (name, item) => ({ ...item, uri: uriOf(name, String(item.uri)) })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: await listed(
      "resourceTemplates",
      (name, item) => ({ ...item, uriTemplate: uriOf(name, String(item.uriTemplate)) }),
    ),
  }));
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: await listed("prompts", (name, item) => ({ ...item, name: promptOf(name, String(item.name)) })),
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { server: name, id } = routeUri(request.params.uri);
    const result = resultOf(await offers.read(name, id, extra.signal));
    return own === undefined ? renameUris(result, (uri) => wrapUri(name, uri)) : result;
  });
  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
    const { server: name, id } = routePrompt(request.params.name);
    const result = resultOf(await offers.getPrompt(name, id, request.params.arguments, extra.signal));
    return own === undefined ? renameUris(result, (uri) => wrapUri(name, uri)) : result;
  });
  server.setRequestHandler(CompleteRequestSchema, async (request, extra) => {
    const { ref } = request.params;
    const routed = ref.type === "ref/prompt" ? routePrompt(ref.name) : routeUri(ref.uri);
    const params = {
      ...request.params,
      ref: ref.type === "ref/prompt" ? { ...ref, name: routed.id } : { ...ref, uri: routed.id },
    };
    // deno-lint-ignore no-explicit-any -- the server's answer, its shape checked by the SDK on the way out
    return resultOf(await offers.complete(routed.server, params, extra.signal)) as any;
  });

  // The session's subscriptions, by server: one listener each, so that its updates go to this session only.
  const listeners = new Map<string, (uri: string) => void>();
  const subscribed = new Set<string>();
  const listenerOf = (name: string) => {
    let listener = listeners.get(name);
    if (listener === undefined) {
      listener = (uri: string) =>
        void server.sendResourceUpdated({ uri: uriOf(name, uri) }).catch((error) =>
          serving.onError?.(`toolgate: mcp: a resource update not sent: ${(error as Error).message}`)
        );
      listeners.set(name, listener);
    }
    return listener;
  };
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const { server: name, id } = routeUri(request.params.uri);
    resultOf(await offers.subscribe(name, id, listenerOf(name)));
    subscribed.add(JSON.stringify([name, id]));
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    const { server: name, id } = routeUri(request.params.uri);
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

/** A success's MCP result; a failure as the JSON-RPC error the server (or toolgate's check) answered. */
// deno-lint-ignore no-explicit-any -- an MCP result as the server gave it, handed on as such
function resultOf(envelope: Envelope): any {
  if (!envelope.ok) throw asMcpError(envelope);
  return envelope.result;
}

/** The JSON-RPC error of a failure: the server's own code where it answered one. */
function asMcpError(envelope: Envelope & { ok: false }): McpError {
  const code = (envelope as unknown as Record<string, unknown>).mcp_code;
  return new McpError(
    typeof code === "number"
      ? code
      : envelope.kind === "rejected" || envelope.kind === "not_found" || envelope.kind === "invalid_args"
      ? ErrorCode.InvalidParams
      : ErrorCode.InternalError,
    envelope.message,
  );
}

/**
 * A read's or a prompt's result with every URI it names renamed: each content's `uri`, an embedded resource's and a
 * resource link's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { renameUris } from "./upstream_offers.ts";
 * const prompt = { messages: [{ role: "user", content: { type: "resource", resource: { uri: "demo://a", text: "x" } } }] };
 * assert.equal(renameUris(prompt, (uri) => `toolgate+ev:${uri}`).messages[0].content.resource.uri, "toolgate+ev:demo://a");
 * ```
 */
// deno-lint-ignore no-explicit-any -- an MCP result of any shape, renamed where it names a URI
export function renameUris(result: any, rename: (uri: string) => string): any {
  const block = (content: unknown): unknown => {
    if (!isRecord(content)) return content;
    if (
      content.type === "resource" && isRecord(content.resource) && typeof content.resource.uri === "string"
    ) {
      return { ...content, resource: { ...content.resource, uri: rename(content.resource.uri) } };
    }
    if (content.type === "resource_link" && typeof content.uri === "string") {
      return { ...content, uri: rename(content.uri) };
    }
    return content;
  };
  if (!isRecord(result)) return result;
  const out: Record<string, unknown> = { ...result };
  if (Array.isArray(result.contents)) {
    out.contents = result.contents.map((item) =>
      isRecord(item) && typeof item.uri === "string" ? { ...item, uri: rename(item.uri) } : item
    );
  }
  if (Array.isArray(result.messages)) {
    out.messages = result.messages.map((message) =>
      isRecord(message) ? { ...message, content: block(message.content) } : message
    );
  }
  return out;
}
