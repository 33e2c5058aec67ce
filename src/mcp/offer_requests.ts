/**
 * The answers to a client's requests of what the manifest's MCP servers offer besides their tools, whichever
 * revision of MCP carries them (a 2025-11-25 session's handlers, `upstream_offers.ts`; a 2026-07-28 stateless
 * request, `stateless.ts`): `resources/list`, `resources/templates/list`, `resources/read`, `prompts/list`,
 * `prompts/get` and `completion/complete`, answered through the executor's audited offers (`run/offer_link.ts`).
 * Beside other servers, a prompt is named `mcp__SERVER__NAME` and a URI `toolgate+SERVER:URI`
 * (`manifest/offer_names.ts`), so that two servers cannot collide and each request is routed to its server; with
 * one server served by its own names (`serve --server NAME`), every name, URI and answer is the server's own,
 * unchanged. A failure is thrown as the JSON-RPC error the server answered (a read's with the URI asked in its
 * `data`, as SEP-2164 has it).
 *
 * Not here: the subscriptions and the handlers of a session (upstream_offers.ts), the pins and the profile's reach
 * (gateway/upstream_offers.ts).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ErrorCode, McpError } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { type Envelope, isRecord } from "../contract.ts";
import { unwrapUri, wrapUri } from "../manifest/offer_names.ts";
import { gatewayName } from "../manifest/server_spec.ts";
import type { OfferList, PromptAsking, ServerOffers } from "../run/offer_link.ts";

/** What {@linkcode OfferRequests} answers from. */
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
export interface Routed {
  /** The server's name in the manifest. */
  readonly server: string;
  /** The name or URI as the server has it. */
  readonly id: string;
}

type Item = Record<string, unknown>;
// deno-lint-ignore no-explicit-any -- an MCP result as the server gave it, handed on as such
type Result = any;

/** The JSON-RPC error code of a resource not found before SEP-2164 (2025-11-25 and earlier). */
const RESOURCE_NOT_FOUND = -32002;

/**
 * The offers' requests over the servers of one `serve`.
 *
 * @example Not run as a doc test: it needs the executor's offers of a started gateway (tests/gateway_offers_test.ts).
 * ```ts ignore
 * const requests = new OfferRequests({ offers: executor.offers, servers: ["ev"], own: "ev" });
 * const { resources } = await requests.listResources();
 * ```
 */
export class OfferRequests {
  readonly #serving: OfferServing;
  /** The servers served: the one of `own`, or every one. */
  readonly servers: readonly string[];

  /** Requests over `serving`'s servers. */
  constructor(serving: OfferServing) {
    this.#serving = serving;
    this.servers = serving.own === undefined ? serving.servers : [serving.own];
  }

  /**
   * Tells `listener` each time a server served says its prompts or its resources changed (each server is started
   * to be heard from); returns what stops it.
   */
  changes(listener: (what: "prompts" | "resources") => void): () => void {
    for (const name of this.servers) void this.#serving.offers.capabilities(name);
    return this.#serving.offers.changes((server, what) => {
      if (this.servers.includes(server)) listener(what);
    });
  }

  /** `uri` of `server`, as the client knows it. */
  uriOf(server: string, uri: string): string {
    return this.#serving.own === undefined ? wrapUri(server, uri) : uri;
  }

  #promptOf(server: string, prompt: string): string {
    return this.#serving.own === undefined ? gatewayName(server, prompt) : prompt;
  }

  /** The server a client's URI is of, and the URI as that server has it; an McpError when it is no server's. */
  routeUri(uri: string): Routed {
    const own = this.#serving.own;
    if (own !== undefined) return { server: own, id: uri };
    const routed = unwrapUri(uri);
    if (routed === undefined || !this.servers.includes(routed.server)) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `Resource ${uri} is not one of toolgate's: a server's resource is named toolgate+SERVER:URI ` +
          `(servers: ${this.servers.join(", ")})`,
        { uri },
      );
    }
    return { server: routed.server, id: routed.uri };
  }

  #routePrompt(name: string): Routed {
    const own = this.#serving.own;
    if (own !== undefined) return { server: own, id: name };
    const server = this.servers.find((s) => name.startsWith(gatewayName(s, "")));
    if (server === undefined) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `Prompt ${name} not found: a server's prompt is named mcp__SERVER__NAME`,
      );
    }
    return { server, id: name.slice(gatewayName(server, "").length) };
  }

  /** Every server's list, renamed; a server that cannot list is left out (and said), unless served alone. */
  async #listed(list: OfferList, rename: (server: string, item: Item) => Item): Promise<Item[]> {
    const answers = await Promise.all(
      this.servers.map(async (name) => [name, await this.#serving.offers.list(name, list)] as const),
    );
    return answers.flatMap(([name, envelope]) => {
      if (!envelope.ok) {
        if (this.#serving.own !== undefined) throw asMcpError(envelope);
        this.#serving.onError?.(
          `toolgate: mcp: the MCP server ${JSON.stringify(name)} did not list: ${envelope.message}`,
        );
        return [];
      }
      const items = isRecord(envelope.result) && Array.isArray(envelope.result.items)
        ? envelope.result.items
        : [];
      return items.filter(isRecord).map((item) => rename(name, item));
    });
  }

  /** `resources/list`. */
  async listResources(): Promise<{ resources: Item[] }> {
    return {
      resources: await this.#listed("resources", (name, item) => ({
        ...item,
        uri: this.uriOf(name, String(item.uri)),
      })),
    };
  }

  /** `resources/templates/list`. */
  async listResourceTemplates(): Promise<{ resourceTemplates: Item[] }> {
    return {
      resourceTemplates: await this.#listed("resourceTemplates", (name, item) => ({
        ...item,
        uriTemplate: this.uriOf(name, String(item.uriTemplate)),
      })),
    };
  }

  /** `prompts/list`. */
  async listPrompts(): Promise<{ prompts: Item[] }> {
    return {
      prompts: await this.#listed(
        "prompts",
        (name, item) => ({ ...item, name: this.#promptOf(name, String(item.name)) }),
      ),
    };
  }

  /**
   * `resources/read`. A resource the server does not have (its -32602, or the -32002 of revisions before
   * SEP-2164) is -32602 with the URI asked in the error's `data`.
   */
  async read(uri: string, signal?: AbortSignal): Promise<Result> {
    const { server: name, id } = this.routeUri(uri);
    const envelope = await this.#serving.offers.read(name, id, signal);
    if (!envelope.ok) {
      const error = asMcpError(envelope);
      if (error.code === ErrorCode.InvalidParams || error.code === RESOURCE_NOT_FOUND) {
        throw new McpError(ErrorCode.InvalidParams, envelope.message, { uri });
      }
      throw error;
    }
    return this.#renamed(name, envelope.result);
  }

  /** `prompts/get`; with `asking`, the server's questions meanwhile go to its handlers. */
  async getPrompt(
    name: string,
    args: Readonly<Record<string, string>> | undefined,
    signal?: AbortSignal,
    asking?: PromptAsking,
  ): Promise<Result> {
    const { server, id } = this.#routePrompt(name);
    return this.#renamed(
      server,
      resultOf(await this.#serving.offers.getPrompt(server, id, args, signal, asking)),
    );
  }

  /** `completion/complete` of a prompt's or a resource template's argument. */
  async complete(params: Readonly<Record<string, unknown>>, signal?: AbortSignal): Promise<Result> {
    const ref = isRecord(params.ref) ? params.ref : {};
    const routed = ref.type === "ref/prompt"
      ? this.#routePrompt(String(ref.name))
      : this.routeUri(String(ref.uri));
    const renamed = {
      ...params,
      ref: ref.type === "ref/prompt" ? { ...ref, name: routed.id } : { ...ref, uri: routed.id },
    };
    return resultOf(await this.#serving.offers.complete(routed.server, renamed, signal));
  }

  #renamed(server: string, result: Result): Result {
    return this.#serving.own === undefined ? renameUris(result, (uri) => wrapUri(server, uri)) : result;
  }
}

/** A success's MCP result; a failure as the JSON-RPC error the server (or toolgate's check) answered. */
export function resultOf(envelope: Envelope): Result {
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
 * import { renameUris } from "./offer_requests.ts";
 * const prompt = { messages: [{ role: "user", content: { type: "resource", resource: { uri: "demo://a", text: "x" } } }] };
 * assert.equal(renameUris(prompt, (uri) => `toolgate+ev:${uri}`).messages[0].content.resource.uri, "toolgate+ev:demo://a");
 * ```
 */
export function renameUris(result: Result, rename: (uri: string) => string): Result {
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
