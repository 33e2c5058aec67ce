/**
 * A real OTLP/HTTP receiver on loopback for the trace tests: it takes `POST /v1/traces` as a collector does, keeps
 * every request's raw bytes (to look for what must never be exported) and decodes each with the official
 * protobuf definitions (the opentelemetry-proto messages as generated for protobufjs, shipped in
 * `@opentelemetry/otlp-transformer` up to 0.216).
 *
 * @module
 */
import root from "npm:@opentelemetry/otlp-transformer@0.216.0/build/src/generated/root.js";

/** One exported span, flattened: its resource's service name, ids as hex, attributes as plain values. */
export interface ReceivedSpan {
  readonly service: string;
  readonly name: string;
  /** The span kind's number in the protobuf enum (1 internal, 2 server, 3 client, 4 producer, 5 consumer). */
  readonly kind: number;
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  readonly attributes: Readonly<Record<string, PlainValue>>;
  /** The status code (0 unset, 1 ok, 2 error). */
  readonly status: number;
  /** When it started and ended, in ms since the epoch. */
  readonly startMs: number;
  readonly endMs: number;
  /** The span's events (a denial), each with its name and attributes. */
  readonly events: readonly {
    readonly name: string;
    readonly attributes: Readonly<Record<string, PlainValue>>;
  }[];
}

/** The receiver: where to point `OTEL_EXPORTER_OTLP_ENDPOINT`, what it got, and how to wait for it. */
export interface OtlpReceiver extends AsyncDisposable {
  /** `http://127.0.0.1:PORT` (the exporter adds `/v1/traces`). */
  readonly endpoint: string;
  /** Every span received so far. */
  readonly spans: ReceivedSpan[];
  /** The raw body of every export request, as the bytes arrived (what a collector stores). */
  readonly raw: Uint8Array[];
  /** The request headers of every export (the exporter's `OTEL_EXPORTER_OTLP_HEADERS` among them). */
  readonly headers: Headers[];
  /** Resolves once `predicate` holds for the spans received (polling what arrived; rejects after `ms`). */
  waitFor(predicate: (spans: readonly ReceivedSpan[]) => boolean, ms?: number): Promise<ReceivedSpan[]>;
}

/** A generated protobufjs message class, as much of it as the receiver uses. */
interface MessageClass<T> {
  decode(bytes: Uint8Array): T;
  encode(message: object): { finish(): Uint8Array<ArrayBuffer> };
}

/** The decoded `ExportTraceServiceRequest`, as far as the receiver reads it (protobufjs's generated fields). */
interface DecodedRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] | null } | null;
    scopeSpans?: {
      spans?: {
        name?: string | null;
        kind?: number | null;
        traceId?: Uint8Array | null;
        spanId?: Uint8Array | null;
        parentSpanId?: Uint8Array | null;
        attributes?: KeyValue[] | null;
        status?: { code?: number | null } | null;
        startTimeUnixNano?: number | { toNumber(): number } | null;
        endTimeUnixNano?: number | { toNumber(): number } | null;
        events?: { name?: string | null; attributes?: KeyValue[] | null }[] | null;
      }[] | null;
    }[] | null;
  }[] | null;
}

type KeyValue = { key?: string | null; value?: AnyValue | null };

// CommonJS whose .d.ts types only protobufjs's Root: the generated namespaces are looked up by their proto names.
// deno-lint-ignore no-explicit-any
const service = (root as any).opentelemetry.proto.collector.trace.v1;
const ExportRequest: MessageClass<DecodedRequest> = service.ExportTraceServiceRequest;
const ExportResponse: MessageClass<object> = service.ExportTraceServiceResponse;

function millis(nanos: number | { toNumber(): number } | null | undefined): number {
  if (nanos == null) return 0;
  return (typeof nanos === "number" ? nanos : nanos.toNumber()) / 1e6;
}

function hex(bytes: Uint8Array | null | undefined): string {
  return Array.from(bytes ?? [], (b) => b.toString(16).padStart(2, "0")).join("");
}

type AnyValue = {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: number | { toNumber(): number } | null;
  doubleValue?: number | null;
  arrayValue?: { values?: AnyValue[] | null } | null;
};

/** An attribute's value, plain: a string, number or boolean, or a list of them. */
export type PlainValue = string | number | boolean | readonly (string | number | boolean)[];

function plain(value: AnyValue | null | undefined): PlainValue {
  if (value?.arrayValue != null) {
    return (value.arrayValue.values ?? []).map((item) => plain(item) as string | number | boolean);
  }
  if (value?.stringValue != null) return value.stringValue;
  if (value?.boolValue != null) return value.boolValue;
  if (value?.intValue != null) {
    return typeof value.intValue === "number" ? value.intValue : value.intValue.toNumber();
  }
  if (value?.doubleValue != null) return value.doubleValue;
  return "";
}

function attributesOf(
  list: readonly KeyValue[] | null | undefined,
): Record<string, PlainValue> {
  const out: Record<string, PlainValue> = {};
  for (const attribute of list ?? []) out[attribute.key ?? ""] = plain(attribute.value);
  return out;
}

/** Decodes one `ExportTraceServiceRequest` body into flat spans. */
export function decodeSpans(body: Uint8Array): ReceivedSpan[] {
  const request = ExportRequest.decode(body);
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          service,
          name: span.name ?? "",
          kind: span.kind ?? 0,
          traceId: hex(span.traceId),
          spanId: hex(span.spanId),
          parentSpanId: hex(span.parentSpanId),
          attributes: attributesOf(span.attributes),
          status: span.status?.code ?? 0,
          startMs: millis(span.startTimeUnixNano),
          endMs: millis(span.endTimeUnixNano),
          events: (span.events ?? []).map((e) => ({
            name: e.name ?? "",
            attributes: attributesOf(e.attributes),
          })),
        });
      }
    }
  }
  return spans;
}

/**
 * Starts a receiver on a free loopback port.
 *
 * @example
 * ```ts ignore
 * await using receiver = await otlpReceiver();
 * // run toolgate with OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint
 * const spans = await receiver.waitFor((s) => s.length > 0);
 * ```
 */
export function otlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const raw: Uint8Array[] = [];
  const headers: Headers[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const url = new URL(request.url);
    if (request.method !== "POST" || url.pathname !== "/v1/traces") {
      return new Response("no", { status: 404 });
    }
    const body = new Uint8Array(await request.arrayBuffer());
    raw.push(body);
    headers.push(request.headers);
    if (request.headers.get("content-type") !== "application/x-protobuf") {
      return new Response("protobuf only", { status: 415 });
    }
    spans.push(...decodeSpans(body));
    return new Response(ExportResponse.encode({}).finish(), {
      headers: { "content-type": "application/x-protobuf" },
    });
  });
  const { port } = server.addr as Deno.NetAddr;
  return Promise.resolve({
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    raw,
    headers,
    async waitFor(predicate, ms = 30_000) {
      const deadline = Date.now() + ms;
      while (!predicate(spans)) {
        if (Date.now() > deadline) {
          throw new Error(`the spans did not arrive; got: ${JSON.stringify(spans.map((s) => s.name))}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return [...spans];
    },
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  });
}
