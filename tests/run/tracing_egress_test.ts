// Traces of a confined call's network (issue 29): each request the egress proxy let through or refused is a child
// span of the call's (`toolgate.egress`, with `server.address`, `server.port` and `toolgate.egress.allowed`), next
// to the confinement's start. Needs bubblewrap (the egress proxy serves confined tools only).
import assert from "node:assert/strict";
import { hostTest, netScriptExecutor, NO_BWRAP, realTempDir } from "../security/helpers.ts";
import { otlpReceiver } from "./otlp_receiver.ts";
import { openTracing } from "../../src/run/tracing.ts";

const CURL = ["/usr/bin/curl", "/bin/curl"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

hostTest(
  "traces: each egress decision of a confined call is a child span (host, port, allowed), no URL or query",
  NO_BWRAP ?? (CURL ? undefined : "curl is not installed"),
  async () => {
    await using receiver = await otlpReceiver();
    const listed = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response("hi"),
    );
    const unlisted = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response("no"),
    );
    const dir = await realTempDir();
    try {
      const executor = await netScriptExecutor(dir, "fetcher", [`127.0.0.1:${listed.addr.port}`], {
        tracing: await openTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }),
      });
      const span = executor.tracing.toolCall({ tool: "fetcher", callId: "c1" });
      const marker = "query-value-2b9d";
      const script = [
        `curl -sS -m 10 http://127.0.0.1:${listed.addr.port}/ok?q=${marker}; echo`,
        `curl -sS -m 10 -o /dev/null -w refused=%{http_code} http://127.0.0.1:${unlisted.addr.port}/x; echo`,
      ].join("; ");
      const envelope = await executor.call("fetcher", JSON.stringify({ script }), { trace: span });
      span.end(envelope.ok ? undefined : envelope.kind);
      assert.ok(envelope.ok, JSON.stringify(envelope));
      await executor.close();
      const spans = await receiver.waitFor((s) => s.some((x) => x.name === "execute_tool fetcher"));
      const call = spans.find((s) => s.name === "execute_tool fetcher")!;
      const egress = spans.filter((s) => s.name === "toolgate.egress");
      assert.deepEqual(
        egress.map((
          s,
        ) => [s.parentSpanId, s.attributes["server.port"], s.attributes["toolgate.egress.allowed"]]),
        [[call.spanId, listed.addr.port, true], [call.spanId, unlisted.addr.port, false]],
      );
      assert.ok(egress.every((s) => s.attributes["server.address"] === "127.0.0.1"));
      assert.equal(spans.find((s) => s.name === "toolgate.confinement_start")?.parentSpanId, call.spanId);
      for (const body of receiver.raw) assert.ok(!new TextDecoder().decode(body).includes(marker));
    } finally {
      await listed.shutdown();
      await unlisted.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
