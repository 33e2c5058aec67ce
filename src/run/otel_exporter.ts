/**
 * The tracing seam (`tracing.ts`) on the official OpenTelemetry JavaScript SDK: spans named and attributed after
 * the GenAI and MCP semantic conventions, batched and exported over OTLP/HTTP (protobuf). Loaded only by
 * `openTracing`, when the standard variables name an endpoint.
 *
 * @module
 */
import {
  type Attributes,
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "npm:@opentelemetry/api@1.10.0";
import {
  type ExportResult,
  ExportResultCode,
  W3CTraceContextPropagator,
} from "npm:@opentelemetry/core@3.1.1";
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  TracerProvider,
} from "npm:@opentelemetry/sdk-trace@3.1.1";
import { detectResources, envDetector, resourceFromAttributes } from "npm:@opentelemetry/resources@3.1.1";
import { ATTR_ERROR_TYPE, ATTR_SERVICE_NAME } from "npm:@opentelemetry/semantic-conventions@1.45.0";
import { OTLPTraceExporter } from "npm:@opentelemetry/exporter-trace-otlp-proto@0.301.1";
import type { ChatFacts, ChatSpan, ToolCallFacts, TraceCarrier, TraceSpan, Tracing } from "./tracing.ts";

// The GenAI, MCP and messaging attributes are still "incubating" in the semantic conventions package; its
// maintainers ask that such names be copied rather than imported from the incubating entry point.
const GEN_AI_OPERATION_NAME = "gen_ai.operation.name";
const GEN_AI_TOOL_NAME = "gen_ai.tool.name";
const GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id";
const GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments";
const GEN_AI_AGENT_NAME = "gen_ai.agent.name";
const GEN_AI_REQUEST_MODEL = "gen_ai.request.model";
const GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons";
const GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens";
const GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens";
const SERVER_ADDRESS = "server.address";
const SERVER_PORT = "server.port";
const MCP_METHOD_NAME = "mcp.method.name";
const MCP_SESSION_ID = "mcp.session.id";
const MESSAGING_SYSTEM = "messaging.system";
const MESSAGING_OPERATION_TYPE = "messaging.operation.type";
const MESSAGING_DESTINATION_NAME = "messaging.destination.name";
const MESSAGING_MESSAGE_ID = "messaging.message.id";

/** How often the batch goes out: a person watching a trace should not wait for the SDK's default 5 s. */
const EXPORT_EVERY_MS = 1000;

/**
 * How long one export may take, its retries included, unless `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT` says: a
 * collector that is down must not hold `toolgate call` at its exit for the SDK's default 10 s.
 */
const EXPORT_TIMEOUT_MS = 2000;

/** What {@linkcode otelTracing} needs: the traces endpoint, the environment, the default service name. */
export interface OtelOptions {
  readonly endpoint: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly service: string;
  /** Where the first failed export is said, once (default: stderr). */
  readonly onWarning?: (line: string) => void;
}

/**
 * The exporter, with its first failure said in one line: spans that cannot be sent are dropped (a collector that
 * is down never fails a call), but not without a word. The line names the collector's host, never its whole URL
 * (which may hold a key), and the failure's kind.
 */
function sayingFailures(
  exporter: SpanExporter,
  endpoint: string,
  warn: (line: string) => void,
): SpanExporter {
  let said = false;
  return {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && !said) {
          said = true;
          const host = URL.canParse(endpoint) ? new URL(endpoint).host : "the collector";
          const why = result.error?.name && result.error.name !== "Error" ? ` (${result.error.name})` : "";
          warn(
            `toolgate: traces: spans could not be sent to ${host}${why}; they are dropped (later failures are not said)`,
          );
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * Tracing through the OpenTelemetry SDK: a tracer provider of its own (never registered as the process's global
 * one), a batch span processor and the OTLP/HTTP protobuf exporter, which reads `OTEL_EXPORTER_OTLP_HEADERS` and
 * the other standard variables itself.
 *
 * @example Not run as a doc test: it sends spans to a collector at the endpoint.
 * ```ts ignore
 * import { otelTracing } from "./otel_exporter.ts";
 * const tracing = otelTracing({ endpoint: "http://127.0.0.1:4318/v1/traces", env: {}, service: "toolgate" });
 * tracing.toolCall({ tool: "get_time", callId: "call_1" }).end();
 * await tracing.shutdown();
 * ```
 */
export function otelTracing(options: OtelOptions): Tracing {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over toolgate's own name.
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.service })
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: sayingFailures(
          new OTLPTraceExporter({
            url: options.endpoint,
            // No idle connection kept to the collector: under Deno's Node layer one would hold the process open
            // after its last export, until the collector closes it.
            keepAlive: false,
            ...(options.env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT || options.env.OTEL_EXPORTER_OTLP_TIMEOUT
              ? {}
              : { timeoutMillis: EXPORT_TIMEOUT_MS }),
          }),
          options.endpoint,
          options.onWarning ?? ((line) => console.error(line)),
        ),
        scheduledDelayMillis: EXPORT_EVERY_MS,
      }),
    ],
  });
  const tracer = provider.getTracer("toolgate");
  const propagator = new W3CTraceContextPropagator();
  const withArgs = options.env.TOOLGATE_OTEL_ARGS === "1";
  const spans = new WeakMap<TraceSpan, Span>();

  const parentContext = (parent: TraceSpan | TraceCarrier | undefined): Context => {
    if (parent === undefined) return ROOT_CONTEXT;
    const own = spans.get(parent as TraceSpan);
    if (own !== undefined) return trace.setSpan(ROOT_CONTEXT, own);
    return propagator.extract(ROOT_CONTEXT, parent as TraceCarrier, defaultTextMapGetter);
  };

  const wrap = (span: Span): TraceSpan => {
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
    const within = trace.setSpan(ROOT_CONTEXT, span);
    const handle: TraceSpan = {
      carrier: Object.freeze(carrier),
      async child<T>(name: string, work: () => Promise<T>): Promise<T> {
        const child = tracer.startSpan(name, { kind: SpanKind.INTERNAL }, within);
        try {
          return await work();
        } catch (error) {
          // A bug's class, never its message (which may quote what the call held).
          child.setAttribute(ATTR_ERROR_TYPE, (error as Error)?.name ?? "Error");
          child.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          child.end();
        }
      },
      mark(name, attributes, atMs) {
        const at = atMs ?? Date.now();
        tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes, startTime: at }, within).end(at);
      },
      event(name, attributes) {
        span.addEvent(name, attributes);
      },
      arguments(text, redact) {
        if (withArgs) span.setAttribute(GEN_AI_TOOL_CALL_ARGUMENTS, redact(text));
      },
      end(errorType) {
        if (errorType !== undefined) {
          span.setAttribute(ATTR_ERROR_TYPE, errorType);
          // No description: an envelope's message may quote the arguments.
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
    spans.set(handle, span);
    return handle;
  };

  return {
    on: true,
    toolCall(facts: ToolCallFacts): TraceSpan {
      return wrap(startToolSpan(tracer, facts, parentContext(facts.parent)));
    },
    agentRun(facts) {
      const attributes: Attributes = {
        [GEN_AI_OPERATION_NAME]: "invoke_agent",
        [GEN_AI_AGENT_NAME]: "toolgate",
      };
      if (facts.model !== undefined) attributes[GEN_AI_REQUEST_MODEL] = facts.model;
      return wrap(
        tracer.startSpan(
          "invoke_agent toolgate",
          { kind: SpanKind.INTERNAL, attributes },
          parentContext(facts.parent),
        ),
      );
    },
    chat(facts: ChatFacts): ChatSpan {
      return chatSpan(tracer, facts, parentContext(facts.parent));
    },
    async shutdown() {
      // A collector that is down must not keep toolgate from exiting: the exporter's own timeout bounds this.
      await provider.shutdown().catch(() => {});
    },
  };
}

/**
 * A request to the model: `chat {model}` (kind CLIENT), with the model asked for and the endpoint's address; at
 * its end the finish reason and the tokens the endpoint counted, or the failure's kind. Nothing of the messages.
 */
function chatSpan(tracer: Tracer, facts: ChatFacts, parent: Context): ChatSpan {
  const attributes: Attributes = { [GEN_AI_OPERATION_NAME]: "chat" };
  if (facts.model !== undefined) attributes[GEN_AI_REQUEST_MODEL] = facts.model;
  if (facts.url !== undefined && URL.canParse(facts.url)) {
    const url = new URL(facts.url);
    attributes[SERVER_ADDRESS] = url.hostname;
    attributes[SERVER_PORT] = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  }
  const name = facts.model === undefined ? "chat" : `chat ${facts.model}`;
  const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
  return {
    end(outcome) {
      if (outcome.finishReason !== undefined) {
        span.setAttribute(GEN_AI_RESPONSE_FINISH_REASONS, [outcome.finishReason]);
      }
      if (outcome.inputTokens !== undefined) {
        span.setAttribute(GEN_AI_USAGE_INPUT_TOKENS, outcome.inputTokens);
      }
      if (outcome.outputTokens !== undefined) {
        span.setAttribute(GEN_AI_USAGE_OUTPUT_TOKENS, outcome.outputTokens);
      }
      if (outcome.errorType !== undefined) {
        span.setAttribute(ATTR_ERROR_TYPE, outcome.errorType);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}

/** A tool call's span: `execute_tool {tool}`, or a pool worker's `process {subject}` (messaging conventions). */
function startToolSpan(tracer: Tracer, facts: ToolCallFacts, parent: Context): Span {
  const attributes: Attributes = { [GEN_AI_TOOL_NAME]: facts.tool };
  if (facts.callId !== undefined) attributes[GEN_AI_TOOL_CALL_ID] = facts.callId;
  if (facts.role === "consumer") {
    const subject = facts.subject ?? "toolgate";
    attributes[MESSAGING_SYSTEM] = "nats";
    attributes[MESSAGING_OPERATION_TYPE] = "process";
    attributes[MESSAGING_DESTINATION_NAME] = subject;
    if (facts.callId !== undefined) attributes[MESSAGING_MESSAGE_ID] = facts.callId;
    return tracer.startSpan(`process ${subject}`, { kind: SpanKind.CONSUMER, attributes }, parent);
  }
  attributes[GEN_AI_OPERATION_NAME] = "execute_tool";
  if (facts.mcp !== undefined) {
    attributes[MCP_METHOD_NAME] = facts.mcp.method;
    if (facts.mcp.sessionId !== undefined) attributes[MCP_SESSION_ID] = facts.mcp.sessionId;
  }
  const kind = facts.role === "server" ? SpanKind.SERVER : SpanKind.INTERNAL;
  return tracer.startSpan(`execute_tool ${facts.tool}`, { kind, attributes }, parent);
}
