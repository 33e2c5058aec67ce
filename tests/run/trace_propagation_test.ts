// Traces across processes (issue 29): one agent run whose tool is served by `toolgate serve --http` (an MCP
// server in the agent's manifest), whose calls run on a worker pool (a real nats-server and `toolgate worker`), is
// one trace. The agent writes its span's `traceparent` into the MCP request's `params._meta`, serve reads it and
// carries its own span's context to the worker in the pool message's headers. Every process exports to the same
// loopback OTLP/HTTP receiver, which decodes the requests with the official protobuf definitions.
import assert from "node:assert/strict";
import { otlpReceiver, type ReceivedSpan } from "./otlp_receiver.ts";
import {
  natsServer,
  POOL_ENV,
  POOL_TOOLS,
  poolTest,
  startWorker,
  writePoolManifest,
} from "../pool/helpers.ts";
import { startHttp, TOKEN } from "../mcp/helpers.ts";
import { answer, callTools, startChatServer } from "../agent/chat_server.ts";
import { project } from "../gateway_support.ts";
import { tempDir } from "../support.ts";

const decoder = new TextDecoder();

function one(spans: readonly ReceivedSpan[], service: string, name: string): ReceivedSpan {
  const found = spans.filter((s) => s.service === service && s.name === name);
  assert.equal(found.length, 1, `one ${service} span ${name} in ${JSON.stringify(spans.map((s) => s.name))}`);
  return found[0];
}

poolTest(
  "traces: one agent run through serve and a worker pool is one trace (_meta, then message headers)",
  async () => {
    await using receiver = await otlpReceiver();
    await using nats = await natsServer();
    await using pool = await tempDir();
    const manifest = await writePoolManifest(pool.path, POOL_TOOLS);
    const otel = (service: string) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_SERVICE_NAME: service,
    });
    await using worker = await startWorker(nats.url, manifest, pool.path, "w1", { env: otel("worker") });
    await using serve = await startHttp(
      // serve's default session idle (10 min): a finished agent run must end on its own, whatever its gateway's
      // HTTP client leaves open (it once held the process until serve expired the session).
      ["--executor", nats.url, "--allow-absolute-commands"],
      pool.path,
      { TOOLGATE_MCP_TOKEN: TOKEN, ...POOL_ENV, ...otel("serve") },
      manifest,
    );
    await using p = await project({
      tg: {
        url: serve.url.href,
        headers: { Authorization: "Bearer ${TG_TOKEN}" },
        secrets: ["TG_TOKEN"],
        allow: ["echo"],
      },
    });
    const secrets = { TG_TOKEN: TOKEN };
    const trust = await p.run(["trust"], undefined, secrets);
    assert.equal(trust.code, 0, trust.stdout + trust.stderr);

    const marker = "argument-value-7d3e";
    await using chat = startChatServer([
      callTools([{ id: "call_1", name: "mcp__tg__echo", args: { text: marker } }]),
      answer("done"),
    ]);
    // Seen once in a while under load: the run waits minutes on its call (the pool or serve; not understood yet). Say
    // what serve and the worker printed by then, so that a slow run leaves a trail.
    const slow = setTimeout(
      () => console.error(`slow run; serve: ${serve.stderr()}\nworker: ${worker.stderr()}`),
      30_000,
    );
    const run = await p.run(
      ["--prompt", "echo it", "--base-url", chat.baseUrl, "--model", "test-model", "--yes"],
      undefined,
      { ...secrets, ...otel("agent") },
    );
    clearTimeout(slow);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /done/);
    const tool = JSON.parse(chat.requests[1].body.messages.at(-1).content);
    assert.equal(tool.ok, true, JSON.stringify(tool));

    // The agent exported at its exit; serve and the worker export within a second of each span's end.
    const spans = await receiver.waitFor((s) =>
      ["agent", "serve", "worker"].every((service) => s.some((span) => span.service === service)) &&
      s.some((span) => span.name.startsWith("process "))
    );
    const root = one(spans, "agent", "invoke_agent toolgate");
    assert.equal(root.parentSpanId, "");
    assert.equal(root.attributes["gen_ai.request.model"], "test-model");
    const agentCall = one(spans, "agent", "execute_tool mcp__tg__echo");
    assert.equal(agentCall.parentSpanId, root.spanId);
    assert.equal(agentCall.attributes["gen_ai.tool.call.id"], "call_1");
    const served = one(spans, "serve", "execute_tool echo");
    assert.equal(served.kind, 2, "serve's span is a server span");
    assert.equal(served.parentSpanId, agentCall.spanId, "serve continued the trace from params._meta");
    assert.equal(served.attributes["mcp.method.name"], "tools/call");
    assert.equal(typeof served.attributes["mcp.session.id"], "string");
    assert.equal(served.attributes["gen_ai.operation.name"], "execute_tool");
    const taken = spans.find((s) => s.service === "worker" && s.name.startsWith("process "));
    assert.ok(taken);
    assert.equal(taken.kind, 5, "the worker's span is a consumer span");
    assert.equal(
      taken.parentSpanId,
      served.spanId,
      "the worker continued the trace from the message's headers",
    );
    assert.equal(taken.attributes["gen_ai.tool.name"], "echo");
    const start = one(spans, "worker", "toolgate.confinement_start");
    assert.equal(start.parentSpanId, taken.spanId);
    assert.deepEqual(new Set(spans.map((s) => s.traceId)), new Set([root.traceId]), "one trace");

    // Nothing of the arguments nor any secret (the MCP token, the pool key) in any exported byte.
    for (const body of receiver.raw) {
      const text = decoder.decode(body);
      for (const secret of [marker, TOKEN, POOL_ENV.TOOLGATE_POOL_KEY_FILE]) {
        assert.ok(!text.includes(secret), `${secret} was exported`);
      }
    }
  },
);
