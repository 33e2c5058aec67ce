/**
 * The tracing seam: what a caller of the executor tells the tracing about a tool call (one span per call, child
 * spans for the approval wait, the confinement start and each egress decision), and how a trace goes on across MCP
 * (`params._meta`) and the worker pool (message headers). This module is light and loads nothing: the
 * OpenTelemetry SDK (`otel_exporter.ts`) is imported only when the standard variables ask for traces, so a run
 * without them pays nothing at start.
 *
 * What a span may hold is fixed here, for every caller: names, ids and outcomes, never an argument value or a
 * secret (the arguments only with `TOOLGATE_OTEL_ARGS=1`, and then redacted).
 *
 * @module
 */
import type { Denial } from "../contract.ts";
import type { DecideOptions, Policy, Verdict } from "../policy/policy.ts";
import type { PreparedCall } from "../policy/prepared_call.ts";

/**
 * The variables of the OpenTelemetry specification that toolgate (and the SDK it loads) reads, beside its own
 * `TOOLGATE_OTEL_ARGS`. The launcher grants exactly these (`src/launcher/own_grants.ts`).
 */
export const OTEL_ENV: readonly string[] = [
  "OTEL_SDK_DISABLED",
  "OTEL_SERVICE_NAME",
  "OTEL_RESOURCE_ATTRIBUTES",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_HEADERS",
  "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
  "OTEL_EXPORTER_OTLP_TIMEOUT",
  "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
  "OTEL_EXPORTER_OTLP_COMPRESSION",
  "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
  "OTEL_EXPORTER_OTLP_CERTIFICATE",
  "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
  "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
  "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
  "OTEL_EXPORTER_OTLP_CLIENT_KEY",
  "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
  "TOOLGATE_OTEL_ARGS",
];

/**
 * Where spans go: the traces endpoint the OTLP/HTTP exporter posts to, as the specification derives it
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces`), or
 * `undefined` when neither is set, when `OTEL_SDK_DISABLED` is `true`, or when the URL is not an http(s) one:
 * then nothing is traced and the SDK never loads.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tracesEndpoint } from "./tracing.ts";
 * assert.equal(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }), "http://127.0.0.1:4318/v1/traces");
 * assert.equal(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" }), undefined);
 * assert.equal(tracesEndpoint({}), undefined);
 * ```
 */
export function tracesEndpoint(env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  const own = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const url = own ? own : base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined;
  if (url === undefined || !URL.canParse(url)) return undefined;
  const protocol = new URL(url).protocol;
  return protocol === "http:" || protocol === "https:" ? url : undefined;
}

/**
 * A trace context as W3C Trace Context carries it (`traceparent`, `tracestate`): what MCP's `params._meta` and a
 * pool message's headers hold. Empty when nothing is traced.
 */
export type TraceCarrier = Readonly<Record<string, string>>;

/** What kind of work a span stands for: a call toolgate makes itself, one it serves, or one a worker takes. */
export type SpanRole = "internal" | "server" | "consumer";

/** The facts of one tool call that a span may hold (nothing of the arguments' values). */
export interface ToolCallFacts {
  /** The tool's name (`gen_ai.tool.name`). */
  readonly tool: string;
  /** The call's id where it has one: the model's tool call id, the MCP request's, the pool call's. */
  readonly callId?: string;
  /** Under `serve`: the MCP method (`tools/call`) and the session's id. */
  readonly mcp?: { readonly method: string; readonly sessionId?: string };
  /** The span this call belongs to: the agent run's, or a context read from `_meta` or a message header. */
  readonly parent?: TraceSpan | TraceCarrier;
  /** `server` for a call `serve` answers, `consumer` for a call a pool worker takes; default `internal`. */
  readonly role?: SpanRole;
  /** The pool's subject, for a worker's span (`messaging.destination.name`). */
  readonly subject?: string;
}

/** One span: a tool call's, or the agent run's. Every method is a no-op when nothing is traced. */
export interface TraceSpan {
  /** This span's context, to carry to another process (`_meta`, message headers); empty when not traced. */
  readonly carrier: TraceCarrier;
  /** Runs `work` inside a child span named `name` (the approval wait, the confinement start). */
  child<T>(name: string, work: () => Promise<T>): Promise<T>;
  /** A child span for something that happened at `atMs` (epoch ms) and took no time of its own (an egress decision). */
  mark(name: string, attributes: Readonly<Record<string, string | number | boolean>>, atMs?: number): void;
  /** An event on this span (a denial), at the time it is told. */
  event(name: string, attributes: Readonly<Record<string, string | number | boolean>>): void;
  /** The call's arguments, kept only when the user opted in (`TOOLGATE_OTEL_ARGS=1`); `redact` masks secrets. */
  arguments(text: string, redact: (text: string) => string): void;
  /** Ends the span; `errorType` (`error.type`: the failure envelope's kind) marks it failed. */
  end(errorType?: string): void;
}

/** The facts of one request to the model that its span may hold: never the messages, never an answer's text. */
export interface ChatFacts {
  /** The model asked for (`gen_ai.request.model`). */
  readonly model?: string;
  /** The endpoint's URL (`server.address`, `server.port`). */
  readonly url?: string;
  /** The agent run's span: the request's is its child. */
  readonly parent?: TraceSpan;
}

/** What the model's answer said of itself, for its span's end. */
export interface ChatOutcome {
  /** A failed request's kind (`error.type`): the error's class, never its message. */
  readonly errorType?: string;
  /** Why the model stopped (`gen_ai.response.finish_reasons`). */
  readonly finishReason?: string;
  /** The prompt's tokens the endpoint counted (`gen_ai.usage.input_tokens`). */
  readonly inputTokens?: number;
  /** The answer's tokens the endpoint counted (`gen_ai.usage.output_tokens`). */
  readonly outputTokens?: number;
}

/** One request to the model, `chat {model}`; a no-op when nothing is traced. */
export interface ChatSpan {
  /** Ends the span with what the answer said (or the error's kind). */
  end(outcome: ChatOutcome): void;
}

/** Where a process sends its spans. */
export interface Tracing {
  /** Whether spans are exported at all. */
  readonly on: boolean;
  /** The span of one tool call, `execute_tool {tool}` (a pool worker's: `process {subject}`). */
  toolCall(facts: ToolCallFacts): TraceSpan;
  /** The root span of one agent loop run, `invoke_agent toolgate`. */
  agentRun(facts: { readonly model?: string; readonly parent?: TraceCarrier }): TraceSpan;
  /** The span of one request to the model, `chat {model}`, a child of the agent run's. */
  chat(facts: ChatFacts): ChatSpan;
  /** Sends what is left and stops; the process calls it before it exits. */
  shutdown(): Promise<void>;
}

const NO_SPAN: TraceSpan = Object.freeze({
  carrier: Object.freeze({}),
  child: <T>(_name: string, work: () => Promise<T>) => work(),
  mark: () => {},
  event: () => {},
  arguments: () => {},
  end: () => {},
});

const NO_CHAT_SPAN: ChatSpan = Object.freeze({ end: () => {} });

/**
 * Tracing that records nothing: the default of every executor, and what {@linkcode openTracing} gives without the
 * variables.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NO_TRACING } from "./tracing.ts";
 * const span = NO_TRACING.toolCall({ tool: "get_time" });
 * span.end(); // nothing is sent
 * assert.equal(NO_TRACING.on, false);
 * ```
 */
export const NO_TRACING: Tracing = Object.freeze({
  on: false,
  toolCall: () => NO_SPAN,
  agentRun: () => NO_SPAN,
  chat: () => NO_CHAT_SPAN,
  shutdown: () => Promise.resolve(),
});

/**
 * The tracing the environment asks for: {@linkcode NO_TRACING} unless {@linkcode tracesEndpoint} names an
 * endpoint, else the OpenTelemetry SDK, loaded now (and only now), exporting over OTLP/HTTP (protobuf).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openTracing } from "./tracing.ts";
 * const tracing = await openTracing({}); // no endpoint: NO_TRACING, and the SDK is never loaded
 * assert.equal(tracing.on, false);
 * ```
 */
export async function openTracing(
  env: Readonly<Record<string, string | undefined>>,
  service = "toolgate",
): Promise<Tracing> {
  const endpoint = tracesEndpoint(env);
  if (endpoint === undefined) return NO_TRACING;
  const { otelTracing } = await import("./otel_exporter.ts");
  return otelTracing({ endpoint, env, service });
}

/**
 * The trace context in an MCP request's `params._meta` (MCP semantic conventions): its `traceparent` and
 * `tracestate`, when they are strings; anything else of `_meta` is left alone.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { carrierFromMeta } from "./tracing.ts";
 * const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
 * assert.deepEqual(carrierFromMeta({ traceparent: parent, progressToken: 1 }), { traceparent: parent });
 * assert.deepEqual(carrierFromMeta(undefined), {});
 * ```
 */
export function carrierFromMeta(meta: unknown): TraceCarrier {
  if (typeof meta !== "object" || meta === null) return {};
  const carrier: Record<string, string> = {};
  for (const key of ["traceparent", "tracestate"]) {
    const value = (meta as Record<string, unknown>)[key];
    // A header value's size: a longer one is not a trace context, and is not passed on.
    if (typeof value === "string" && value.length <= 512) carrier[key] = value;
  }
  return carrier;
}

/**
 * The attributes of an egress decision's span (`toolgate.egress`): the host and port a tool asked for, and whether
 * the egress proxy let it through.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { egressAttributes } from "./tracing.ts";
 * assert.deepEqual(egressAttributes({ host: "api.github.com", port: 443, allowed: true }), { "server.address": "api.github.com", "server.port": 443, "toolgate.egress.allowed": true });
 * ```
 */
export function egressAttributes(
  decision: { readonly host: string; readonly port: number; readonly allowed: boolean },
): Record<string, string | number | boolean> {
  return {
    "server.address": decision.host,
    "server.port": decision.port,
    "toolgate.egress.allowed": decision.allowed,
  };
}

/**
 * The attributes of a denial's span event (`toolgate.denial`): its kind, target and rule, and whether toolgate read
 * it from the tool's stderr (`inferred`) rather than decided it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { denialAttributes } from "./tracing.ts";
 * assert.deepEqual(denialAttributes({ kind: "host", target: "evil.example:443", rule: "profile net" }), {
 *   "toolgate.denial.kind": "host",
 *   "toolgate.denial.target": "evil.example:443",
 *   "toolgate.denial.rule": "profile net",
 *   "toolgate.denial.inferred": false,
 * });
 * ```
 */
export function denialAttributes(denial: Denial): Record<string, string | boolean> {
  return {
    "toolgate.denial.kind": denial.kind,
    "toolgate.denial.target": denial.target,
    "toolgate.denial.rule": denial.rule,
    "toolgate.denial.inferred": denial.inferred === true,
  };
}

/** The names of a tool call span's events. */
export const SPAN_EVENTS = {
  /** Something toolgate refused the tool (a host, a path, a kernel call), one event per denial. */
  denial: "toolgate.denial",
} as const;

/** The names of a tool call's child spans. */
export const CHILD_SPANS = {
  /** The wait for a person's (or a client's) approval. */
  approval: "toolgate.approval",
  /** The start of the tool's confinement: bubblewrap's arguments, the egress proxy, the cgroup slot. */
  confinement: "toolgate.confinement_start",
  /** A request the tool made through the egress proxy, let through or refused. */
  egress: "toolgate.egress",
} as const;

/**
 * The policy's decision on a call, inside an approval child span of `span` when (and only when) a person must be
 * asked: a call approved by the allow list, `--yes` or its own command adds no span.
 *
 * @example Not run as a doc test: a fragment of the executor, with its policy, a call and a span in scope.
 * ```ts ignore
 * const verdict = await decideInSpan(policy, prepared.call, span, { signal });
 * ```
 */
export function decideInSpan(
  policy: Policy,
  call: PreparedCall,
  span: TraceSpan | undefined,
  options: DecideOptions = {},
): Promise<Verdict> {
  const decide = () => policy.decide(call, options);
  return span === undefined || policy.approvedWithoutAsking(call) !== undefined
    ? decide()
    : span.child(CHILD_SPANS.approval, decide);
}

/**
 * What a failed call's span says in `error.type`: the failure envelope's kind; nothing for a success.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorType } from "./tracing.ts";
 * assert.equal(errorType({ ok: false, kind: "timeout" }), "timeout");
 * assert.equal(errorType({ ok: true }), undefined);
 * ```
 */
export function errorType(
  envelope: { readonly ok: boolean; readonly kind?: string } | undefined,
): string | undefined {
  if (envelope === undefined) return "Error";
  return envelope.ok ? undefined : envelope.kind ?? "Error";
}
