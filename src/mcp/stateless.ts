/**
 * The 2026-07-28 revision of MCP, served without sessions: each request carries its protocol version, its
 * client's capabilities (and, optionally, its client's name and log level) in `params._meta`, and is answered on
 * its own. This module owns the requests of that revision whatever carries them: which messages belong to it,
 * the checks of their `_meta`, `server/discover`, `tools/list` (in the manifest's order, with `ttlMs` and
 * `cacheScope`), the MCP servers' resources, prompts and completions (answered by `offer_requests.ts`, their lists
 * and reads with `ttlMs` and `cacheScope`), and the JSON-RPC errors of the revision with the HTTP status each one
 * takes; `tools/call` is `stateless_call.ts`'s.
 *
 * A stateless caller's state (its turn-taking, its "always" answers, its background jobs) is keyed by the
 * connection it came on (one stdio connection; the one bearer token of the HTTP server) and the `clientInfo`
 * name its requests carry (`stateless_wire.ts`'s `callerKey`).
 *
 * Not here: the revision's wire (`stateless_wire.ts`); the HTTP headers' checks and the answer as JSON or SSE (`stateless_http.ts`); the 2025-11-25
 * sessions (`server.ts`); a call's run (`ToolService`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import type { ToolService } from "./server.ts";
import type { SecretPages } from "./secret_page.ts";
import { StatelessCalls } from "./stateless_call.ts";
import { TASKS_EXTENSION } from "./tasks.ts";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { McpError } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { OfferRequests } from "./offer_requests.ts";

/** The `_meta` key naming the `subscriptions/listen` stream a notification belongs to (its request's id). */
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";

import {
  answered,
  LIST_TTL_MS,
  META,
  rejected,
  type RequestId,
  requestId,
  STATELESS_ERRORS,
  STATELESS_VERSION,
  type StatelessAnswer,
  type StatelessFrom,
  SUPPORTED_VERSIONS,
} from "./stateless_wire.ts";

/**
 * The requests of the stateless revision, answered over one {@linkcode ToolService}: the front ends (stdio, HTTP)
 * hand each such message here and send back what it answers.
 *
 * @example Not run as a doc test: it needs a ToolService and a request off the wire (tests/mcp/stateless_test.ts).
 * ```ts ignore
 * import { StatelessRequests } from "./stateless.ts";
 * const requests = new StatelessRequests(service);
 * const { response } = await requests.answer(message, { connection: "http", signal });
 * ```
 */
export class StatelessRequests {
  readonly #service: ToolService;
  readonly #calls: StatelessCalls;
  /** What the manifest's MCP servers offer besides their tools; absent where it names none. */
  readonly #offers?: OfferRequests;

  /** `secretPages`: where a person types a secret (HTTP only: over stdio there is no page to open). */
  constructor(service: ToolService, options: { secretPages?: SecretPages } = {}) {
    this.#service = service;
    this.#calls = new StatelessCalls(service, options.secretPages);
    const offering = service.offerServing;
    if (offering !== undefined) this.#offers = new OfferRequests(offering);
  }

  /** The connection closes, or the server stops: the calls waiting for their clients' answers end. */
  close(): void {
    this.#calls.close();
  }

  /** Answers one request of the revision (a notification is no request: it gets `undefined`). */
  async answer(message: unknown, from: StatelessFrom): Promise<StatelessAnswer | undefined> {
    const id = requestId(message);
    if (!isRecord(message) || message.jsonrpc !== "2.0" || typeof message.method !== "string") {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidRequest,
        "Invalid Request: not a JSON-RPC 2.0 request",
      );
    }
    // A notification of the revision (a cancel is carried by the client going away): nothing to answer.
    if (!("id" in message)) return undefined;
    if (id === null) return rejected(400, null, STATELESS_ERRORS.invalidRequest, "Invalid Request: bad id");
    const params = message.params === undefined ? {} : message.params;
    if (!isRecord(params)) {
      return rejected(400, id, STATELESS_ERRORS.invalidParams, "Invalid params: not an object");
    }
    const meta = isRecord(params._meta) ? params._meta : undefined;
    const missing = [META.protocolVersion, META.clientCapabilities].filter((key) =>
      meta?.[key] === undefined
    );
    if (meta === undefined || missing.length > 0) {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidParams,
        `Invalid params: _meta must carry ${missing.join(" and ")} on every request of ${STATELESS_VERSION}`,
      );
    }
    const version = meta[META.protocolVersion];
    if (version !== STATELESS_VERSION) {
      return rejected(400, id, STATELESS_ERRORS.unsupportedVersion, "Unsupported protocol version", {
        supported: [...SUPPORTED_VERSIONS],
        requested: String(version),
      });
    }
    if (!isRecord(meta[META.clientCapabilities])) {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidParams,
        "Invalid params: clientCapabilities must be an object",
      );
    }
    switch (message.method) {
      case "server/discover":
        return this.#discover(id);
      case "tools/list":
        return answered(id, { tools: this.#service.list(), ttlMs: LIST_TTL_MS, cacheScope: "private" });
      case "tools/call":
        return await this.#calls.call(id, params, meta, from);
      case "subscriptions/listen":
        return await this.#listen(id, params, from);
      case "tasks/get":
      case "tasks/update":
      case "tasks/cancel":
        return this.#calls.task(id, message.method, params, meta, from);
      case "resources/list":
      case "resources/templates/list":
      case "resources/read":
      case "prompts/list":
      case "prompts/get":
      case "completion/complete":
        if (this.#offers !== undefined) {
          return await this.#offered(this.#offers, id, message.method, params, meta, from);
        }
        return rejected(404, id, STATELESS_ERRORS.methodNotFound, `Method not found: ${message.method}`);
      default:
        return rejected(404, id, STATELESS_ERRORS.methodNotFound, `Method not found: ${message.method}`);
    }
  }

  /**
   * A `subscriptions/listen` stream: acknowledged first (with what of the filter toolgate honours: the tool
   * list's changes, and the MCP servers' prompt and resource lists' where the manifest names servers), then a
   * `notifications/tools/list_changed` each time the tools change (and `prompts/list_changed` or
   * `resources/list_changed` each time a server says so), each carrying the subscription's id; it lasts until
   * the client goes away (or cancels it, on stdio).
   */
  async #listen(
    id: RequestId,
    params: Record<string, unknown>,
    from: StatelessFrom,
  ): Promise<StatelessAnswer> {
    const notify = from.notify;
    if (!isRecord(params.notifications)) {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidParams,
        "Invalid params: subscriptions/listen needs notifications",
      );
    }
    if (notify === undefined) {
      return rejected(
        400,
        id,
        STATELESS_ERRORS.invalidRequest,
        "subscriptions/listen needs a stream (Accept: text/event-stream)",
      );
    }
    const asked = params.notifications;
    const tools = asked.toolsListChanged === true;
    // The MCP servers' prompt and resource lists, where the manifest names servers.
    const offers = this.#offers;
    const prompts = offers !== undefined && asked.promptsListChanged === true;
    const resources = offers !== undefined && asked.resourcesListChanged === true;
    const meta = { [SUBSCRIPTION_ID]: id };
    notify({
      method: "notifications/subscriptions/acknowledged",
      params: {
        notifications: {
          ...(tools ? { toolsListChanged: true } : {}),
          ...(prompts ? { promptsListChanged: true } : {}),
          ...(resources ? { resourcesListChanged: true } : {}),
        },
        _meta: meta,
      },
    });
    const stopTools = tools
      ? this.#service.onToolsChanged(() =>
        notify({ method: "notifications/tools/list_changed", params: { _meta: meta } })
      )
      : () => {};
    const stopOffers = prompts || resources
      ? offers!.changes((what) => {
        if (what === "prompts" && prompts) {
          notify({ method: "notifications/prompts/list_changed", params: { _meta: meta } });
        }
        if (what === "resources" && resources) {
          notify({ method: "notifications/resources/list_changed", params: { _meta: meta } });
        }
      })
      : () => {};
    const stop = () => {
      stopTools();
      stopOffers();
    };
    try {
      if (!from.signal.aborted) {
        await new Promise<void>((resolve) =>
          from.signal.addEventListener("abort", () => resolve(), { once: true })
        );
      }
    } finally {
      stop();
    }
    return answered(id, {});
  }

  /**
   * A request of what the MCP servers offer besides their tools: its answer (the lists and a read with `ttlMs` and
   * `cacheScope`: a server's resources are the user's, not to be shared by caches), or the server's error.
   */
  async #offered(
    offers: OfferRequests,
    id: RequestId,
    method: string,
    params: Record<string, unknown>,
    meta: Record<string, unknown>,
    from: StatelessFrom,
  ): Promise<StatelessAnswer> {
    const cached = (result: Record<string, unknown>) =>
      answered(id, { ...result, ttlMs: LIST_TTL_MS, cacheScope: "private" });
    try {
      switch (method) {
        case "resources/list":
          return cached(await offers.listResources());
        case "resources/templates/list":
          return cached(await offers.listResourceTemplates());
        case "prompts/list":
          return cached(await offers.listPrompts());
        case "resources/read": {
          if (typeof params.uri !== "string") {
            return rejected(400, id, STATELESS_ERRORS.invalidParams, "Invalid params: uri must be a string");
          }
          return cached(await offers.read(params.uri, from.signal));
        }
        case "prompts/get": {
          const args = params.arguments;
          const strings = args === undefined ||
            (isRecord(args) && Object.values(args).every((value) => typeof value === "string"));
          if (typeof params.name !== "string" || !strings) {
            return rejected(
              400,
              id,
              STATELESS_ERRORS.invalidParams,
              "Invalid params: name must be a string, and arguments an object of strings",
            );
          }
          // The server may ask the user meanwhile: an input-required round, the get waiting for the answers.
          const name = params.name;
          return await this.#calls.prompt(
            id,
            params,
            meta,
            from,
            (questions, signal) =>
              offers.getPrompt(name, args as Record<string, string> | undefined, signal, { questions }),
            (error) => offerError(id, error),
          );
        }
        default: {
          const { _meta: _, ...request } = params;
          return answered(id, await offers.complete(request, from.signal));
        }
      }
    } catch (error) {
      return offerError(id, error);
    }
  }

  #discover(id: RequestId): StatelessAnswer {
    const { name, version, instructions } = this.#service.about;
    // The servers' resources, prompts and completions, where the manifest names servers (their lists' changes
    // reach a subscriptions/listen stream that asks for them).
    const offered = this.#offers === undefined
      ? {}
      : { resources: { listChanged: true }, prompts: { listChanged: true }, completions: {} };
    return answered(id, {
      supportedVersions: [...SUPPORTED_VERSIONS],
      capabilities: { tools: { listChanged: true }, ...offered, extensions: { [TASKS_EXTENSION]: {} } },
      instructions,
      ttlMs: LIST_TTL_MS,
      cacheScope: "public",
      _meta: { [META.serverInfo]: { name, version } },
    });
  }
}

/** A server's (or toolgate's) error of an offer's request, as the revision answers it: the code and data kept. */
function offerError(id: RequestId, error: unknown): StatelessAnswer {
  if (error instanceof McpError) {
    const message = error.message.replace(/^MCP error -?\d+: /, "");
    return rejected(200, id, error.code, message, error.data);
  }
  return rejected(500, id, STATELESS_ERRORS.internal, `Internal error: ${(error as Error).message}`);
}
