/**
 * What the manifest's MCP servers offer besides their tools, through the gate: their resources, resource
 * templates and prompts listed against their pins (one not pinned, or changed since, is withheld until
 * `toolgate trust`) and to what the entry's `allow` and `deny` expose (as for tools: a prompt by name, a resource by
 * URI, a template by its URI template), a resource read only when its URI stays inside what the server's profile shows
 * (`resource_reach.ts`) and its definition, listed or by a template, is not withheld, a prompt got and an argument
 * completed only for a pinned prompt or template, and subscriptions counted so that the server is told once per
 * URI and each subscriber hears its updates. The server runs confined as for its calls (the same process).
 * Implements the run layer's seam (`run/offer_link.ts`); names here are the server's own.
 *
 * One piece: every decision here reads the same per-connection lists (what the server listed, as pinned and as
 * exposed), and the subscriptions follow those connections across a restart; split, each part would hold a copy.
 *
 * Not here: the audit lines and the redaction (run/offer_link.ts), the names toolgate serves them by
 * (manifest/offer_names.ts), the MCP handlers (mcp/upstream_offers.ts).
 *
 * @module
 */
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import type { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/shared/uriTemplate"
import { UriTemplate } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/uriTemplate.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { type Envelope, failure, isRecord, type JsonValue, success } from "../contract.ts";
import { offerDefinition, type OfferKind } from "../manifest/offer_names.ts";
import { type PinSet, samePin, type ToolDefinition } from "../manifest/pins.ts";
import type { ServerSpec } from "../manifest/server_spec.ts";
import type {
  OfferCapabilities,
  OfferChanges,
  OfferList,
  PromptAsking,
  ServerOffers,
} from "../run/offer_link.ts";
import { uriRefusal } from "./resource_reach.ts";
import { exposed, upstreamSpec } from "./gateway_tools.ts";
import type { AskingCall } from "./server_questions.ts";
import { oneLine, type Upstream, UpstreamError } from "./upstream.ts";

/** What {@linkcode UpstreamOffers} needs of the gateway. */
export interface UpstreamOffersOptions {
  readonly servers: readonly ServerSpec[];
  /** The definitions the user trusted, by server and key (`offer_names.ts`'s `offerKey`). */
  readonly pins: PinSet;
  /** The workspace: a `file://` URI under it is the server's to read. */
  readonly workspace: string;
  /** The server's connection (started if need be). */
  readonly upstream: (server: string) => Upstream;
}

/** A list's entries as one client listed them, by list (listed again after its `list_changed`). */
type Listed = Map<OfferList, Record<string, unknown>[]>;

const KIND: Record<OfferList, OfferKind> = {
  resources: "resource",
  resourceTemplates: "template",
  prompts: "prompt",
};

const NOTHING: OfferCapabilities = { resources: false, subscribe: false, prompts: false, completions: false };

/** How long a prompt's question may wait for its user, where the server's entry sets no `timeoutSec`. */
const PROMPT_QUESTION_SEC = 600;

/** The most entries a list is read to (its pages followed). */
const MAX_ENTRIES = 10_000;

/**
 * The offers of the manifest's servers, for the gateway.
 *
 * @example Not run as a doc test: it starts an MCP server (tests/gateway_offers_test.ts runs server-everything).
 * ```ts ignore
 * const offers = new UpstreamOffers({ servers, pins, workspace, upstream: (name) => upstreams.get(name)! });
 * const listed = await offers.list("ev", "resources"); // success({ items: [...] })
 * ```
 */
export class UpstreamOffers implements ServerOffers {
  readonly #options: UpstreamOffersOptions;
  /** Each connection's lists (a new connection, after a restart, lists again). */
  readonly #listed = new WeakMap<Client, Listed>();
  /** Each server's subscribers, by URI. */
  readonly #subscribers = new Map<string, Map<string, Set<(uri: string) => void>>>();
  /** The connection each server's URI was subscribed on, by `[server, uri]` (a restarted server forgot it). */
  readonly #subscribedOn = new Map<string, Client>();
  /** Each server's lists as listed last, whatever its connection: what an audit line may name. */
  readonly #last = new Map<string, Listed>();
  /** Who is told of the servers' list changes. */
  readonly #watchers = new Set<OfferChanges>();

  /** The offers of `options.servers`. */
  constructor(options: UpstreamOffersOptions) {
    this.#options = options;
  }

  /** The connection, its notifications of lists changed and resources updated taken the first time it is seen. */
  async #client(server: string): Promise<Client> {
    return this.#adopt(server, await this.#options.upstream(server).connect());
  }

  /**
   * The server was started again: the URIs a session still holds are subscribed again on its new connection
   * (the server forgot them), so that their updates go on reaching the sessions. Not awaited; a URI the new
   * server refuses is left unsubscribed (tried again at the next session's subscribe).
   */
  reconnected(server: string): void {
    const client = this.#options.upstream(server).connected;
    const held = [...this.#subscribers.get(server)?.entries() ?? []].filter(([, listeners]) =>
      listeners.size > 0
    );
    if (client === undefined || held.length === 0) return;
    this.#adopt(server, client);
    for (const [uri] of held) {
      const key = JSON.stringify([server, uri]);
      if (this.#subscribedOn.get(key) === client) continue;
      this.#subscribedOn.set(key, client);
      client.subscribeResource({ uri }).catch(() => {
        if (this.#subscribedOn.get(key) === client) this.#subscribedOn.delete(key);
      });
    }
  }

  /** Takes `client`'s notifications of lists changed and resources updated, the first time it is seen. */
  #adopt(server: string, client: Client): Client {
    if (!this.#listed.has(client)) {
      this.#listed.set(client, new Map());
      client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
        this.#listed.get(client)?.delete("resources");
        this.#listed.get(client)?.delete("resourceTemplates");
        for (const watcher of this.#watchers) watcher(server, "resources");
      });
      client.setNotificationHandler(PromptListChangedNotificationSchema, () => {
        this.#listed.get(client)?.delete("prompts");
        for (const watcher of this.#watchers) watcher(server, "prompts");
      });
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
        const uri = notification.params.uri;
        for (const listener of this.#subscribers.get(server)?.get(uri) ?? []) listener(uri);
      });
    }
    return client;
  }

  /** What `server` declared it offers; nothing when it cannot be started. */
  async capabilities(server: string): Promise<OfferCapabilities> {
    let client;
    try {
      client = await this.#client(server);
    } catch {
      return NOTHING;
    }
    const declared = client.getServerCapabilities() ?? {};
    return {
      resources: declared.resources !== undefined,
      subscribe: declared.resources?.subscribe === true,
      prompts: declared.prompts !== undefined,
      completions: declared.completions !== undefined,
    };
  }

  /**
   * Every entry of one of the server's lists, as it gives them (empty when it does not offer the kind): as listed
   * last on this connection, or listed again when `fresh` (a server may change a definition without saying so).
   */
  async #all(server: string, list: OfferList, fresh = false): Promise<Record<string, unknown>[]> {
    const client = await this.#client(server);
    const cached = this.#listed.get(client)?.get(list);
    if (cached !== undefined && !fresh) return cached;
    const declared = client.getServerCapabilities() ?? {};
    const offered = list === "prompts" ? declared.prompts : declared.resources;
    const items: Record<string, unknown>[] = [];
    if (offered !== undefined) {
      let cursor: string | undefined;
      do {
        const params = cursor === undefined ? undefined : { cursor };
        // A list carries nothing of its asker's: it is not set aside (`#aside`), so that the lists `serve` makes
        // of its own do not keep a call's questions from its caller.
        const page: Record<string, unknown> & { nextCursor?: string } = list === "resources"
          ? await client.listResources(params)
          : list === "resourceTemplates"
          ? await client.listResourceTemplates(params)
          : await client.listPrompts(params);
        // Each list's entries are under its own name: `resources`, `resourceTemplates`, `prompts`.
        const entries = page[list];
        items.push(...(Array.isArray(entries) ? entries.filter(isRecord) : []));
        cursor = page.nextCursor;
      } while (cursor !== undefined && items.length < MAX_ENTRIES);
    }
    this.#listed.get(client)?.set(list, items);
    const last = this.#last.get(server) ?? new Map();
    this.#last.set(server, last.set(list, items));
    return items;
  }

  /**
   * Is the entry exposed by the server's `allow` and `deny` lists, as a tool is? A prompt is named by its name, a
   * resource by its URI, a template by its URI template.
   */
  #exposed(server: string, item: Record<string, unknown>): boolean {
    return exposed(this.#spec(server), offerId(item));
  }

  /** Is the entry's definition the one pinned? */
  #pinned(server: string, list: OfferList, item: Record<string, unknown>): boolean {
    const definition = offerDefinition(KIND[list], item);
    const pins = this.#options.pins[server] ?? {};
    const pinned = Object.hasOwn(pins, definition.name) ? pins[definition.name] : undefined;
    return samePin(definition as unknown as ToolDefinition, pinned);
  }

  /** The definitions `toolgate trust` pins of the server's prompts, resources and templates, as listed now. */
  async definitions(server: string): Promise<ToolDefinition[]> {
    const out: ToolDefinition[] = [];
    for (const list of ["prompts", "resources", "resourceTemplates"] as const) {
      for (const item of await this.#all(server, list)) {
        if (!this.#exposed(server, item)) continue;
        out.push(offerDefinition(KIND[list], item) as unknown as ToolDefinition);
      }
    }
    return out;
  }

  /** The list's pinned entries, `{ items }`; `withheld` names the ids of the others. */
  async list(server: string, list: OfferList): Promise<Envelope> {
    return await this.#answer(server, async () => {
      const items = (await this.#all(server, list, true)).filter((item) => this.#exposed(server, item));
      const shown = items.filter((item) => this.#pinned(server, list, item));
      const withheld = items.filter((item) => !shown.includes(item)).map(offerId);
      return success({ items: shown, withheld } as unknown as JsonValue);
    });
  }

  /** Why `uri` may not be read of `server`, if it may not. */
  async #readRefusal(server: string, uri: string): Promise<string | undefined> {
    const spec = this.#spec(server);
    const reach = uriRefusal(uri, spec.profile, this.#options.workspace);
    if (reach !== undefined) return reach;
    const listed = (await this.#all(server, "resources")).find((item) => item.uri === uri);
    if (listed !== undefined) {
      if (!this.#exposed(server, listed)) return notExposed(server, "resource", uri);
      return this.#pinned(server, "resources", listed) ? undefined : withheld("resource", uri);
    }
    const templates = await this.#all(server, "resourceTemplates");
    const matching = templates.find((item) => matches(item.uriTemplate, uri));
    if (matching !== undefined) {
      const template = String(matching.uriTemplate);
      // Exposed by its template's name, or by its own URI.
      if (!this.#exposed(server, matching) && !exposed(spec, uri)) {
        return notExposed(server, "resource template", template);
      }
      return this.#pinned(server, "resourceTemplates", matching)
        ? undefined
        : withheld("resource template", template);
    }
    // Neither listed nor a template's (a link a tool answered): exposed only when allow/deny let its URI through.
    return exposed(spec, uri) ? undefined : notExposed(server, "resource", uri);
  }

  /** `resources/read` of `uri`, once it passed the profile's reach and the pins. */
  async read(server: string, uri: string, signal?: AbortSignal): Promise<Envelope> {
    return await this.#answer(server, async () => {
      const refused = await this.#readRefusal(server, uri);
      if (refused !== undefined) return failure("rejected", refused, { retryable: false });
      const client = await this.#client(server);
      const answer = await this.#aside(server, () => client.readResource({ uri }, { signal }));
      return success(answer as unknown as JsonValue);
    });
  }

  /**
   * `prompts/get` of a pinned prompt. With `asking`, a form the server asks meanwhile goes to its user (as a
   * call's question does, said to come from the prompt; nothing else it asks is answered); without, it is refused.
   */
  async getPrompt(
    server: string,
    name: string,
    args: Readonly<Record<string, string>> | undefined,
    signal?: AbortSignal,
    asking?: PromptAsking,
  ): Promise<Envelope> {
    return await this.#answer(server, async () => {
      const refused = await this.#promptRefusal(server, name);
      if (refused !== undefined) return refused;
      const client = await this.#client(server);
      const params = args === undefined ? { name } : { name, arguments: { ...args } };
      const spec = this.#spec(server);
      const asker = asking?.questions.user === undefined
        ? undefined
        : upstreamSpec(spec, { name, inputSchema: { type: "object" } }, -1);
      const call: AskingCall | undefined = asker === undefined ? undefined : {
        tool: asker,
        kind: "prompt",
        questions: { user: asking?.questions.user, nobody: asking?.questions.nobody },
        scrub: asking?.scrub,
        timeoutMs: (spec.timeoutSec ?? PROMPT_QUESTION_SEC) * 1000,
      };
      const answer = await this.#options.upstream(server).aside(
        () => client.getPrompt(params, { signal }),
        call,
      );
      return success(answer as unknown as JsonValue);
    });
  }

  async #promptRefusal(server: string, name: string): Promise<Envelope | undefined> {
    // Listed again at each use: the prompt got is the one whose definition is pinned now, not at the last list.
    const prompt = (await this.#all(server, "prompts", true)).find((item) => item.name === name);
    if (prompt === undefined) {
      return failure("not_found", `The MCP server ${JSON.stringify(server)} lists no prompt ${name}.`, {
        retryable: false,
        metadata: { mcp_code: -32602 },
      });
    }
    if (!this.#exposed(server, prompt)) {
      return failure("rejected", notExposed(server, "prompt", name), { retryable: false });
    }
    return this.#pinned(server, "prompts", prompt)
      ? undefined
      : failure("rejected", withheld("prompt", name), { retryable: false });
  }

  /** `completion/complete` for a pinned prompt's or resource template's argument. */
  async complete(
    server: string,
    params: Readonly<Record<string, unknown>>,
    signal?: AbortSignal,
  ): Promise<Envelope> {
    return await this.#answer(server, async () => {
      const ref = isRecord(params.ref) ? params.ref : {};
      if (ref.type === "ref/prompt") {
        const refused = await this.#promptRefusal(server, String(ref.name));
        if (refused !== undefined) return refused;
      } else if (ref.type === "ref/resource") {
        const uri = String(ref.uri);
        const template = (await this.#all(server, "resourceTemplates")).find((item) =>
          item.uriTemplate === uri
        );
        const resource = (await this.#all(server, "resources")).find((item) => item.uri === uri);
        const entry = template ?? resource;
        if (entry !== undefined && !this.#exposed(server, entry)) {
          return failure("rejected", notExposed(server, "resource template", uri), { retryable: false });
        }
        const pinned = template !== undefined
          ? this.#pinned(server, "resourceTemplates", template)
          : resource !== undefined && this.#pinned(server, "resources", resource);
        if (!pinned) {
          return failure(
            "rejected",
            template === undefined && resource === undefined
              ? `The MCP server ${JSON.stringify(server)} lists no resource template ${uri}.`
              : withheld("resource template", uri),
            { retryable: false },
          );
        }
      }
      const client = await this.#client(server);
      // deno-lint-ignore no-explicit-any -- the params are the client's request, passed on as it sent them
      const answer = await this.#aside(server, () => client.complete(params as any, { signal }));
      return success(answer as unknown as JsonValue);
    });
  }

  /** `resources/subscribe`: the server is asked once per URI; `listener` hears its updates. */
  async subscribe(server: string, uri: string, listener: (uri: string) => void): Promise<Envelope> {
    return await this.#answer(server, async () => {
      const refused = await this.#readRefusal(server, uri);
      if (refused !== undefined) return failure("rejected", refused, { retryable: false });
      const client = await this.#client(server);
      if (client.getServerCapabilities()?.resources?.subscribe !== true) {
        return failure("unavailable", `The MCP server ${JSON.stringify(server)} offers no subscriptions.`, {
          retryable: false,
          metadata: { mcp_code: -32601 },
        });
      }
      const byUri = this.#subscribers.get(server) ?? new Map<string, Set<(uri: string) => void>>();
      this.#subscribers.set(server, byUri);
      const listeners = byUri.get(uri) ?? new Set();
      // Asked once per URI, and again of a server started anew since (it forgot its subscriptions).
      const key = JSON.stringify([server, uri]);
      if (this.#subscribedOn.get(key) !== client) {
        await this.#aside(server, () => client.subscribeResource({ uri }));
        this.#subscribedOn.set(key, client);
      }
      listeners.add(listener);
      byUri.set(uri, listeners);
      return success({});
    });
  }

  /** Ends `listener`'s subscription; the server is told when no subscriber of the URI is left. */
  async unsubscribe(server: string, uri: string, listener: (uri: string) => void): Promise<Envelope> {
    return await this.#answer(server, async () => {
      const listeners = this.#subscribers.get(server)?.get(uri);
      if (listeners === undefined || !listeners.delete(listener)) return success({});
      if (listeners.size === 0) {
        this.#subscribers.get(server)?.delete(uri);
        // Told on the connection it subscribed on, if that one is still up: a session's end starts no server.
        const key = JSON.stringify([server, uri]);
        const client = this.#subscribedOn.get(key);
        this.#subscribedOn.delete(key);
        if (client !== undefined && client === this.#options.upstream(server).connected) {
          await client.unsubscribeResource({ uri });
        }
      }
      return success({});
    });
  }

  /** The listed resource `uri` is, or the template it matches, as last listed; else `undefined`. */
  resourceName(server: string, uri: string): string | undefined {
    const last = this.#last.get(server);
    if (last?.get("resources")?.some((item) => item.uri === uri)) return uri;
    const template = last?.get("resourceTemplates")?.find((item) => matches(item.uriTemplate, uri));
    return typeof template?.uriTemplate === "string" ? template.uriTemplate : undefined;
  }

  /** Tells `listener` each time a server says its resources or prompts changed; returns what stops it. */
  changes(listener: OfferChanges): () => void {
    this.#watchers.add(listener);
    return () => void this.#watchers.delete(listener);
  }

  /**
   * A request that carries its asker's data but is no call (a read, a prompt, a completion, a subscription): the
   * server's logs and questions meanwhile reach nobody (`Upstream.aside`), not another session's call.
   */
  #aside<T>(server: string, use: () => Promise<T>): Promise<T> {
    return this.#options.upstream(server).aside(use);
  }

  #spec(server: string): ServerSpec {
    const spec = this.#options.servers.find((s) => s.name === server);
    if (spec === undefined) throw new UpstreamError(`no MCP server is named ${JSON.stringify(server)}`);
    return spec;
  }

  /** `use`'s envelope, or the failure of a server that could not be reached or that answered with an error. */
  async #answer(server: string, use: () => Promise<Envelope>): Promise<Envelope> {
    try {
      this.#spec(server);
      return await use();
    } catch (error) {
      if (error instanceof UpstreamError) {
        return failure(
          "unavailable",
          `The MCP server ${JSON.stringify(server)} is not available: ${error.message}.`,
          {
            retryable: error.retryable,
          },
        );
      }
      const code = isRecord(error) && typeof error.code === "number" ? error.code : undefined;
      const message = oneLine(error).replace(/^MCP error -?\d+: /, "");
      return failure("execution_error", message, {
        retryable: false,
        metadata: code === undefined ? {} : { mcp_code: code },
      });
    }
  }
}

/** Does `uri` match the URI template `template`? */
function matches(template: unknown, uri: string): boolean {
  if (typeof template !== "string") return false;
  try {
    return new UriTemplate(template).match(uri) !== null;
  } catch {
    return false;
  }
}

/** How `allow` and `deny` name a list's entry: a prompt by its name, a resource by its URI, a template by its own. */
function offerId(item: Record<string, unknown>): string {
  return String(item.uri ?? item.uriTemplate ?? item.name);
}

/** Why an entry the server's `allow` or `deny` leaves out is not served. */
function notExposed(server: string, what: string, id: string): string {
  return `The ${what} ${id} of the MCP server ${
    JSON.stringify(server)
  } is not exposed: its entry's allow or ` +
    "deny list leaves it out.";
}

/** Why a withheld definition is not served. */
function withheld(what: string, id: string): string {
  return `The ${what} ${id} is withheld: its definition has not been trusted, or changed since it was; ` +
    "the user can review it with `toolgate trust`.";
}
