/**
 * What the manifest's MCP servers offer besides their tools (resources, resource templates, prompts,
 * completions), as the executor hands it to a front end: the seam the gateway implements
 * ({@linkcode ServerOffers}), and {@linkcode OfferLink}, which audits each read, prompt and completion (a line each,
 * as a call's: the server, the method, the outcome, the arguments' size and digest) and clears each answer of
 * secret values as a call's envelope is. Names here are the servers' own.
 *
 * Not here: the checks against the pins and the server's profile (src/gateway/upstream_offers.ts), the names
 * toolgate serves them by (src/manifest/offer_names.ts), the MCP handlers (src/mcp/upstream_offers.ts).
 *
 * @module
 */
import { type Envelope, failure } from "../contract.ts";
import { jobAnswerRecord } from "./audit.ts";
import type { CallContext } from "./call_context.ts";
import type { QuestionHandlers } from "./tool_questions.ts";

/**
 * Who answers what a server asks while one of its prompts is got (a form to its user): the asker's handlers, and
 * the redaction of secret values out of the question (filled in by {@linkcode OfferLink}).
 */
export interface PromptAsking {
  /** The asker's handlers (a prompt may ask the user a form question, nothing else). */
  readonly questions: QuestionHandlers;
  /** Takes secret values out of what the server asks. */
  readonly scrub?: (text: string) => string;
}

/** A list of a server's offers: what {@linkcode ServerOffers.list} lists. */
export type OfferList = "resources" | "resourceTemplates" | "prompts";

/** What a server declared it offers (its `initialize` capabilities), for the front end's own. */
export interface OfferCapabilities {
  /** It offers resources. */
  readonly resources: boolean;
  /** Its resources can be subscribed to. */
  readonly subscribe: boolean;
  /** It offers prompts. */
  readonly prompts: boolean;
  /** It completes prompt and template arguments. */
  readonly completions: boolean;
}

/**
 * The gateway's side: each method answers with an envelope (`success` holding the server's MCP result, its names
 * its own; a `failure` saying why not, `metadata.mcp_code` holding the server's JSON-RPC error code when it was
 * the server that refused).
 *
 * @example
 * ```ts
 * import type { ServerOffers } from "./offer_link.ts";
 * import { success } from "../contract.ts";
 * const none = (): Promise<ReturnType<typeof success>> => Promise.resolve(success({}));
 * const offers: ServerOffers = {
 *   capabilities: () => Promise.resolve({ resources: false, subscribe: false, prompts: false, completions: false }),
 *   list: none, read: none, getPrompt: none, complete: none, subscribe: none, unsubscribe: none,
 *   changes: () => () => {}, resourceName: () => undefined,
 * };
 * ```
 */
export interface ServerOffers {
  /** What the server offers (it is started if need be); nothing when it cannot be started. */
  capabilities(server: string): Promise<OfferCapabilities>;
  /** Every entry of a list (every page), those whose definitions are not pinned left out: `{ items }`. */
  list(server: string, list: OfferList): Promise<Envelope>;
  /** `resources/read` of `uri`, unless it reaches outside the server's profile or its definition is withheld. */
  read(server: string, uri: string, signal?: AbortSignal): Promise<Envelope>;
  /**
   * `prompts/get` of a pinned prompt; with `asking`, what the server asks the user meanwhile goes to its
   * handlers (without, it is refused: nobody answers for a request that is no call).
   */
  getPrompt(
    server: string,
    name: string,
    args: Readonly<Record<string, string>> | undefined,
    signal?: AbortSignal,
    asking?: PromptAsking,
  ): Promise<Envelope>;
  /** `completion/complete` for a pinned prompt's or template's argument (`params` as MCP has them). */
  complete(
    server: string,
    params: Readonly<Record<string, unknown>>,
    signal?: AbortSignal,
  ): Promise<Envelope>;
  /** `resources/subscribe` of `uri` for `listener` (told each `notifications/resources/updated` of it). */
  subscribe(server: string, uri: string, listener: (uri: string) => void): Promise<Envelope>;
  /** Ends `listener`'s subscription to `uri` (upstream too when it was the last). */
  unsubscribe(server: string, uri: string, listener: (uri: string) => void): Promise<Envelope>;
  /**
   * Tells `listener` each time a server said its resources (and templates) or its prompts changed
   * (`notifications/.../list_changed`); returns what stops it.
   */
  changes(listener: OfferChanges): () => void;
  /**
   * What an audit line may name of a read of `uri`: the URI of the listed resource it is, or the template it
   * matches, as last listed (a definition, never an argument value); `undefined` for any other URI.
   */
  resourceName(server: string, uri: string): string | undefined;
}

/** Told that a server's resources or prompts changed (they are listed again, against the pins, when next asked). */
export type OfferChanges = (server: string, what: "resources" | "prompts") => void;

/** Which request an audit line of an offer records. */
type Audited = "resources/read" | "prompts/get" | "completion/complete";

/**
 * The offers of the executor's gateway, each read, prompt and completion audited and its answer's secrets
 * cleared. Before the gateway is connected, every answer says so.
 *
 * @example Not run as a doc test: the executor makes it (`executor.offers`) over its gateway.
 * ```ts ignore
 * const read = await executor.offers.read("ev", "demo://resource/static/document/features.md");
 * ```
 */
export class OfferLink implements ServerOffers {
  readonly #context: CallContext;
  readonly #gateway: () => ServerOffers | undefined;

  /** The offers of the gateway `gateway` gives (once connected), audited in `context`'s trail. */
  constructor(context: CallContext, gateway: () => ServerOffers | undefined) {
    this.#context = context;
    this.#gateway = gateway;
  }

  /** What `server` offers; nothing when the gateway is not connected. */
  capabilities(server: string): Promise<OfferCapabilities> {
    const gateway = this.#gateway();
    return gateway === undefined
      ? Promise.resolve({ resources: false, subscribe: false, prompts: false, completions: false })
      : gateway.capabilities(server);
  }

  /** A list of `server`'s, its pinned entries only (not audited: it reads no data). */
  async list(server: string, list: OfferList): Promise<Envelope> {
    return this.#context.secrets.forCaller(await this.#through((g) => g.list(server, list)));
  }

  /** `resources/read`, audited. */
  read(server: string, uri: string, signal?: AbortSignal): Promise<Envelope> {
    return this.#audited(server, "resources/read", { uri }, (g) => g.read(server, uri, signal));
  }

  /** `prompts/get`, audited; what the server asks meanwhile cleared of secret values on its way to `asking`. */
  getPrompt(
    server: string,
    name: string,
    args: Readonly<Record<string, string>> | undefined,
    signal?: AbortSignal,
    asking?: PromptAsking,
  ): Promise<Envelope> {
    const scrubbed = asking === undefined ? undefined : { ...asking, scrub: this.#context.secrets.scrub };
    return this.#audited(
      server,
      "prompts/get",
      { name, arguments: args ?? {} },
      (g) => g.getPrompt(server, name, args, signal, scrubbed),
    );
  }

  /** `completion/complete`, audited. */
  complete(
    server: string,
    params: Readonly<Record<string, unknown>>,
    signal?: AbortSignal,
  ): Promise<Envelope> {
    return this.#audited(server, "completion/complete", params, (g) => g.complete(server, params, signal));
  }

  /** `resources/subscribe`. */
  subscribe(server: string, uri: string, listener: (uri: string) => void): Promise<Envelope> {
    return this.#through((g) => g.subscribe(server, uri, listener));
  }

  /** `resources/unsubscribe`. */
  unsubscribe(server: string, uri: string, listener: (uri: string) => void): Promise<Envelope> {
    return this.#through((g) => g.unsubscribe(server, uri, listener));
  }

  /** What an audit line may name of a read of `uri` (see {@linkcode ServerOffers.resourceName}). */
  resourceName(server: string, uri: string): string | undefined {
    return this.#gateway()?.resourceName(server, uri);
  }

  /** Tells `listener` of the servers' list changes (nothing before the gateway is connected). */
  changes(listener: OfferChanges): () => void {
    return this.#gateway()?.changes(listener) ?? (() => {});
  }

  async #through(use: (gateway: ServerOffers) => Promise<Envelope>): Promise<Envelope> {
    const gateway = this.#gateway();
    if (gateway === undefined) {
      return failure("unavailable", "The MCP gateway is not connected.", { retryable: false });
    }
    return await use(gateway);
  }

  /**
   * One audited request: its line (tool `mcp__SERVER`, the method, the definition it used: a listed resource's
   * URI or the template a URI matched, else `unlisted: true`, a prompt's name, a completion's reference; never an
   * argument value, which only `argsHmac` stands for) is written behind its answer as a gateway call's is, the trail redacting it; the
   * answer is cleared of secret values.
   */
  async #audited(
    server: string,
    method: Audited,
    params: Readonly<Record<string, unknown>>,
    use: (gateway: ServerOffers) => Promise<Envelope>,
  ): Promise<Envelope> {
    const { trail, secrets } = this.#context;
    const started = trail.now();
    const clock = performance.now();
    const envelope = await this.#through(use);
    const ms = Math.round(performance.now() - clock);
    const profile = this.#context.options.manifest.servers?.find((s) => s.name === server)?.profile.name;
    trail.behind(started, `mcp__${server}`, JSON.stringify(params), (facts) => {
      const resource = typeof params.uri === "string" ? this.resourceName(server, params.uri) : undefined;
      return {
        ...jobAnswerRecord(facts, { ms, envelope }),
        server,
        method,
        resource,
        // A URI neither listed nor a template's (a link a tool answered) is read after the reach check alone.
        unlisted: typeof params.uri === "string" && resource === undefined ? true : undefined,
        prompt: method === "prompts/get" ? params.name : undefined,
        ref: method === "completion/complete" ? params.ref : undefined,
        profile,
      };
    });
    return secrets.forCaller(envelope);
  }
}
