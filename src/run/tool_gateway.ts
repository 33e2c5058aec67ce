/**
 * The seam between the executor and the gateway to the manifest's MCP servers: what the executor asks of a
 * gateway (refresh, the exposed tools, why one is withheld, a call, the definitions `trust` pins), what it hands
 * one at start, and the opener a front end gives it. The run layer owns these types; src/gateway/gateway.ts
 * implements {@linkcode ToolGateway}, and the commands pass an {@linkcode OpenGateway} that loads it on demand.
 * Not here: the gateway itself (src/gateway/), the pins (src/manifest/pins.ts).
 *
 * @module
 */
import type { Envelope, FailureEnvelope, FailureKind } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import type { PinSet, ToolDefinition, WithheldReason } from "../manifest/pins.ts";
import type { ServerSpec } from "../manifest/server_spec.ts";
import type { ProcessRegistry } from "../process/process_tree.ts";
import type { ToolLauncher } from "../sandbox/tool_launch.ts";
import type { EgressDecision } from "../sandbox/proxy_settings.ts";
import type { QuestionHandlers } from "./tool_questions.ts";
import type { ServerOffers } from "./offer_link.ts";
import type { LogLevel, ToolEvent } from "../manifest/tool_messages.ts";

/**
 * The manifest's MCP servers as one more source of tools, as the executor sees them.
 *
 * @example
 * ```ts
 * import type { ToolGateway } from "./tool_gateway.ts";
 * const none: ToolGateway = {
 *   tools: [], problems: new Map(), withheld: new Map(),
 *   refusal: () => undefined, refresh: () => Promise.resolve(), definitions: () => Promise.resolve([]),
 *   call: (tool) => Promise.resolve({ ok: true, result: {}, tool: tool.name }), close: () => Promise.resolve(),
 * };
 * ```
 */
export interface ToolGateway {
  /** The exposed tools of the servers listed so far, in server order. */
  readonly tools: readonly ToolSpec[];
  /** Why a server could not be listed, by server: one line each. */
  readonly problems: ReadonlyMap<string, string>;
  /** The tools withheld (no pin, or a changed definition), by `mcp__SERVER__TOOL` name. */
  readonly withheld: ReadonlyMap<string, WithheldReason>;
  /** The answer to a call of `name` when it cannot run (withheld, or its server unusable); else `undefined`. */
  refusal(name: string): FailureEnvelope | undefined;
  /** What changed in a withheld tool's definition since it was trusted, in words; `undefined` if not known. */
  changes?(name: string): string | undefined;
  /** A caller asks for the servers' log messages from `level` up (the servers are asked for the least severe). */
  setLogLevel?(level: LogLevel): void;
  /** Starts (if need be) and lists the named servers (default all). */
  refresh(names?: Iterable<string>): Promise<void>;
  /** The server's exposed tools' current definitions, pinned or not: what `trust` pins. */
  definitions(server: string): Promise<ToolDefinition[]>;
  /** Runs one call of an upstream tool, answering with an envelope. */
  call(tool: ToolSpec, args: Record<string, unknown>, options: GatewayCallOptions): Promise<Envelope>;
  /** Ends every server's tree. */
  close(): Promise<void>;
  /** The servers' resources, prompts and completions (src/run/offer_link.ts); absent: none are offered. */
  readonly offers?: ServerOffers;
}

/** How one upstream call is run: its stop, its limit, where its egress decisions go, its trace context. */
export interface GatewayCallOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs: number;
  /** Told what the egress proxy decided for the server's requests while the call ran (the audit line's). */
  readonly onEgress?: (decisions: readonly EgressDecision[]) => void;
  /** The calling span's trace context, for the server's `params._meta` (MCP semantic conventions). */
  readonly meta?: Readonly<Record<string, string>>;
  /** Who answers the server's questions (forms, sampling) while the call runs: the caller's; absent: nobody. */
  readonly questions?: QuestionHandlers;
  /** Takes secret values out of what the server asks and of the answers it is given. */
  readonly scrub?: (text: string) => string;
  /** Told of each request of the server for a model's answer while the call ran, answered or refused. */
  readonly onSampling?: (facts: SamplingFacts) => void;
  /** Gets the server's own progress for the call and its log messages while it runs (already redacted). */
  readonly onEvent?: (event: ToolEvent) => void;
  /** Work of the caller's done once the request is on its way, while the server works (the audit line's digest). */
  readonly whileWaiting?: () => void;
}

/**
 * One request of an upstream server for a model's answer (`sampling/createMessage`), as its audit line tells it:
 * the request's text (for its size and digest, never itself), how it ended, how long it took, the model.
 *
 * @example
 * ```ts
 * import type { SamplingFacts } from "./tool_gateway.ts";
 * const facts: SamplingFacts = { argsText: "{}", outcome: "rejected", ms: 3 };
 * ```
 */
export interface SamplingFacts {
  readonly argsText: string;
  readonly outcome: "ok" | FailureKind;
  readonly ms: number;
  readonly model?: string;
}

/**
 * What the executor hands a gateway when it opens one: the servers, the pins the user trusted, what confines a
 * server, and where its secrets come from.
 *
 * @example
 * ```ts
 * import type { GatewayWiring } from "./tool_gateway.ts";
 * const keys: (keyof GatewayWiring)[] = ["servers", "pins", "launcher", "env", "workspace", "secret", "graceMs"];
 * ```
 */
export interface GatewayWiring {
  /** The manifest's servers. */
  readonly servers: readonly ServerSpec[];
  /** The definitions the user trusted, by server and tool. */
  readonly pins: PinSet;
  /** Confines a stdio server as a tool of its profile. */
  readonly launcher: ToolLauncher;
  /** toolgate's environment: PATH and HOME for the servers. */
  readonly env: Readonly<Record<string, string>>;
  /** The workspace: the servers' working directory. */
  readonly workspace: string;
  /** The manifest's real path: its package servers' installs are recorded by it (src/packages/). */
  readonly manifest?: string;
  /** A secret's value (the store's, then the environment's), or `undefined`. */
  readonly secret: (name: string) => string | undefined;
  /** The trees toolgate ends when it is stopped. */
  readonly registry?: ProcessRegistry;
  /** Time between SIGTERM and SIGKILL when a server is ended. */
  readonly graceMs: number;
  /** Told when a server said its tools changed, once they are listed again and checked against the pins. */
  readonly onToolsChanged?: () => void;
}

/**
 * Opens a gateway over the wiring: a front end passes one that loads src/gateway/ only when a manifest has servers.
 *
 * @example
 * ```ts
 * import type { OpenGateway } from "./tool_gateway.ts";
 * const open: OpenGateway = async (wiring) => new (await import("../gateway/gateway.ts")).Gateway(wiring);
 * ```
 */
export type OpenGateway = (wiring: GatewayWiring) => Promise<ToolGateway>;
