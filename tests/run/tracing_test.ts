// Traces (issue 29): with the standard OpenTelemetry variables set, toolgate exports one span per tool call over
// OTLP/HTTP (protobuf) to a real receiver on loopback, which decodes it with the official protobuf definitions.
// The calls run through the launcher, under the least grants it derives: the endpoint's host is granted because
// the variables name it. Without the variables, the SDK never loads (tests/lazy_loading_test.ts).
import assert from "node:assert/strict";
import { join } from "node:path";
import { otlpReceiver, type ReceivedSpan } from "./otlp_receiver.ts";
import { runToolgate, tempDir, writeFiles } from "../support.ts";
import { answer, callTools, type Reply, startChatServer } from "../agent/chat_server.ts";
import { tracesEndpoint } from "../../src/run/tracing.ts";

const decoder = new TextDecoder();

/** The spans of one finished `toolgate` run (a short run exports all its spans before it exits). */
function named(spans: readonly ReceivedSpan[], name: string): ReceivedSpan {
  const span = spans.find((s) => s.name === name);
  assert.ok(span, `a span ${name} among ${JSON.stringify(spans.map((s) => s.name))}`);
  return span;
}

Deno.test("traces: toolgate call exports execute_tool {tool} with the GenAI attributes, its confinement start as a child", async () => {
  await using receiver = await otlpReceiver();
  await using dir = await tempDir();
  const result = await runToolgate(["call", "get_time", '{"timezone":"UTC"}'], dir.path, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_HEADERS: "x-collector-team=blue",
    OTEL_SERVICE_NAME: "toolgate-test",
    HOME: dir.path,
  });
  assert.equal(result.code, 0, result.stderr);
  const spans = await receiver.waitFor((s) => s.some((span) => span.name === "execute_tool get_time"));
  const call = named(spans, "execute_tool get_time");
  assert.equal(call.service, "toolgate-test");
  assert.equal(call.attributes["gen_ai.operation.name"], "execute_tool");
  assert.equal(call.attributes["gen_ai.tool.name"], "get_time");
  assert.equal(call.attributes["error.type"], undefined);
  assert.equal(call.parentSpanId, "", "toolgate call is the trace's root");
  const start = named(spans, "toolgate.confinement_start");
  assert.equal(start.parentSpanId, call.spanId);
  assert.equal(start.traceId, call.traceId);
  // The exporter sends OTEL_EXPORTER_OTLP_HEADERS, as the specification says.
  assert.equal(receiver.headers[0].get("x-collector-team"), "blue");
});

Deno.test("traces: a failed call carries error.type (the envelope's kind) and an error status, and no argument value", async () => {
  await using receiver = await otlpReceiver();
  await using dir = await tempDir();
  const marker = "argument-value-4f1c9b";
  const result = await runToolgate(["call", "get_time", JSON.stringify({ timezone: marker })], dir.path, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    HOME: dir.path,
  });
  assert.equal(result.code, 1, result.stderr);
  assert.ok(result.stdout.includes(marker), "the envelope itself names the value (the model needs it)");
  const spans = await receiver.waitFor((s) => s.some((span) => span.name === "execute_tool get_time"));
  const call = named(spans, "execute_tool get_time");
  assert.equal(call.attributes["error.type"], JSON.parse(result.stdout).kind);
  assert.equal(call.status, 2);
  for (const body of receiver.raw) {
    assert.ok(!decoder.decode(body).includes(marker), "no argument value exported");
  }
});

Deno.test("traces: TOOLGATE_OTEL_ARGS=1 exports the arguments, with a declared secret's value redacted", async () => {
  await using receiver = await otlpReceiver();
  await using dir = await tempDir();
  const secret = "s3cr3t-token-value-9a8b7c6d";
  await writeFiles(dir.path, {
    "tools.json": {
      tools: [{
        name: "echo_args",
        description: "Prints its arguments.",
        command: ["/bin/cat"],
        schema: { type: "object", properties: { text: { type: "string" } } },
        secrets: ["DEMO_TOKEN"],
        readOnly: true,
      }],
    },
  });
  const env = {
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/v1/traces`,
    DEMO_TOKEN: secret,
    HOME: dir.path,
  };
  const args = JSON.stringify({ text: `visible and ${secret}` });
  const tools = ["--tools", join(dir.path, "tools.json"), "--allow-absolute-commands"];
  const optedIn = await runToolgate([...tools, "call", "echo_args", args], dir.path, {
    ...env,
    TOOLGATE_OTEL_ARGS: "1",
  });
  assert.equal(optedIn.code, 0, optedIn.stderr);
  let spans = await receiver.waitFor((s) => s.some((span) => span.name === "execute_tool echo_args"));
  const shown = String(named(spans, "execute_tool echo_args").attributes["gen_ai.tool.call.arguments"]);
  assert.ok(shown.includes("visible and"), shown);
  assert.ok(!shown.includes(secret), shown);
  for (const body of receiver.raw) assert.ok(!decoder.decode(body).includes(secret), "no secret exported");

  receiver.spans.length = 0;
  const plain = await runToolgate([...tools, "call", "echo_args", args], dir.path, env);
  assert.equal(plain.code, 0, plain.stderr);
  spans = await receiver.waitFor((s) => s.some((span) => span.name === "execute_tool echo_args"));
  assert.equal(named(spans, "execute_tool echo_args").attributes["gen_ai.tool.call.arguments"], undefined);
});

Deno.test("traces: the traces endpoint follows the specification's variables", () => {
  assert.equal(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" }), "http://c:4318/v1/traces");
  assert.equal(
    tracesEndpoint({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t/x",
    }),
    "http://t/x",
  );
  assert.equal(
    tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "TRUE" }),
    undefined,
  );
  assert.equal(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://c:4317" }), undefined);
  assert.equal(tracesEndpoint({}), undefined);
});

Deno.test("traces: each request of the agent loop to the model is a chat span under invoke_agent, with its usage and no message", async () => {
  await using receiver = await otlpReceiver();
  await using dir = await tempDir();
  const usage = (input: number, output: number) => ({
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
  });
  const marker = "prompt-text-5c1e";
  // A scripted answer with the tokens the endpoint counted for it.
  const counted = (reply: Reply, input: number, output: number): Reply => ({
    json: { ...(reply as { json: Record<string, unknown> }).json, usage: usage(input, output) },
  });
  await using chat = startChatServer([
    counted(callTools([{ id: "c1", name: "get_time", args: { timezone: "UTC" } }]), 11, 7),
    counted(answer(`the answer ${marker}`), 23, 5),
  ]);
  const result = await runToolgate(
    ["--prompt", `what time is it? ${marker}`, "--base-url", chat.baseUrl, "--model", "test-model", "--yes"],
    dir.path,
    { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: "agent", HOME: dir.path },
  );
  assert.equal(result.code, 0, result.stderr);
  const spans = await receiver.waitFor((s) => s.some((span) => span.name === "invoke_agent toolgate"));
  const root = named(spans, "invoke_agent toolgate");
  const chats = spans.filter((s) => s.name === "chat test-model");
  assert.equal(chats.length, 2, JSON.stringify(spans.map((s) => s.name)));
  const port = Number(new URL(chat.baseUrl).port);
  for (const span of chats) {
    assert.equal(span.parentSpanId, root.spanId, "a request is the run's child");
    assert.equal(span.kind, 3, "a client span");
    assert.equal(span.attributes["gen_ai.operation.name"], "chat");
    assert.equal(span.attributes["gen_ai.request.model"], "test-model");
    assert.equal(span.attributes["server.address"], "127.0.0.1");
    assert.equal(span.attributes["server.port"], port);
  }
  const [first, second] = [...chats].sort((a, b) => a.startMs - b.startMs);
  assert.deepEqual(first.attributes["gen_ai.response.finish_reasons"], ["tool_calls"]);
  assert.deepEqual([
    first.attributes["gen_ai.usage.input_tokens"],
    first.attributes["gen_ai.usage.output_tokens"],
  ], [
    11,
    7,
  ]);
  assert.deepEqual(second.attributes["gen_ai.response.finish_reasons"], ["stop"]);
  assert.equal(second.attributes["gen_ai.usage.output_tokens"], 5);
  // The tool call's span is the run's child too, beside the requests.
  assert.equal(named(spans, "execute_tool get_time").parentSpanId, root.spanId);
  // Neither the prompt nor the answer's text is in any exported byte.
  for (const body of receiver.raw) {
    assert.ok(!decoder.decode(body).includes(marker), "a message was exported");
  }
});

Deno.test("traces: a collector that cannot be reached fails no call, and is said once on stderr, by host only", async () => {
  await using dir = await tempDir();
  // A port nothing listens on: listened on, then closed.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const result = await runToolgate(["call", "get_time", '{"timezone":"UTC"}'], dir.path, {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}/collector-path-secret`,
    HOME: dir.path,
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(JSON.parse(result.stdout).ok, true);
  const said = result.stderr.split("\n").filter((line) => line.includes("traces:"));
  assert.equal(said.length, 1, result.stderr);
  assert.match(
    said[0],
    new RegExp(`^toolgate: traces: spans could not be sent to 127\\.0\\.0\\.1:${port}\\b`),
  );
  assert.ok(!result.stderr.includes("collector-path-secret"), "the collector's path stays unsaid");
});
