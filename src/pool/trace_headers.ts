/**
 * A call's trace context on the pool's wire: W3C Trace Context (`traceparent`, `tracestate`) as headers of the
 * NATS message that carries the call, beside the signed payload. The headers link spans and decide nothing: the
 * signature covers the call, not them, so a forged one can only misfile a span.
 *
 * @module
 */
import { headers, type MsgHdrs } from "@nats-io/transport-node";
import type { TraceCarrier } from "../run/tracing.ts";

const NAMES = ["traceparent", "tracestate"] as const;

/**
 * The headers of a call message for the calling span's context; `undefined` when nothing is traced.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { traceHeaders } from "./trace_headers.ts";
 * assert.equal(traceHeaders({}), undefined);
 * traceHeaders({ traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" })?.get("traceparent");
 * ```
 */
export function traceHeaders(carrier: TraceCarrier | undefined): MsgHdrs | undefined {
  const present = NAMES.filter((name) => carrier?.[name]);
  if (present.length === 0) return undefined;
  const out = headers();
  for (const name of present) out.set(name, carrier![name]);
  return out;
}

/**
 * The trace context a call message's headers carry, if any.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { carrierOfHeaders, traceHeaders } from "./trace_headers.ts";
 * const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
 * assert.deepEqual(carrierOfHeaders(traceHeaders({ traceparent: parent })), { traceparent: parent });
 * ```
 */
export function carrierOfHeaders(received: MsgHdrs | undefined): TraceCarrier {
  const carrier: Record<string, string> = {};
  for (const name of NAMES) {
    const value = received?.get(name);
    if (value) carrier[name] = value;
  }
  return carrier;
}
