/**
 * A running `toolgate/1` tool's own questions for a 2026-07-28 client: each is an input-required round (keyed by
 * the id the tool gave it), the tool waits for the client's retry and goes on with the answer, round after round;
 * a state already used names no waiting call; a question for the client's roots is a roots/list round; a tool that
 * asks what the client cannot answer is refused before it runs (-32021). Over the conformance manifest's question tools.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { scratch } from "../executor_helpers.ts";
import { REPO } from "../support.ts";
import { startHttp, TOKEN } from "./helpers.ts";
import { type Body, REVISION, statelessRequest } from "./stateless_support.ts";

const MANIFEST = join(REPO, "tests", "conformance", "tools.json");

/** A stateless `tools/call` with the standard headers; `caps` are the client's capabilities. */
async function call(
  url: URL,
  name: string,
  caps: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<{ status: number; body: Body }> {
  const { status, id, body } = await statelessRequest(url, "tools/call", { name, arguments: {}, ...extra }, {
    caps,
  });
  assert.equal(body.id, id, "each answer carries the id of the request it answers");
  return { status, body };
}

Deno.test("serve --http: a stateless client answers a running tool's questions round by round; the tool goes on", async (t) => {
  await using dir = await scratch();
  await using server = await startHttp(
    ["--allow-tools", "test_input_required_result_sampling"],
    dir.path,
    { TOOLGATE_MCP_TOKEN: TOKEN },
    MANIFEST,
  );

  await t.step("two rounds, each keyed by the tool's question id, then the tool's answer", async () => {
    const form = { elicitation: {} };
    const first = await call(server.url, "test_input_required_result_multi_round", form);
    assert.equal(first.body.result.resultType, "input_required", JSON.stringify(first.body));
    assert.deepEqual(Object.keys(first.body.result.inputRequests), ["step1"]);
    assert.equal(first.body.result.inputRequests.step1.method, "elicitation/create");
    const second = await call(server.url, "test_input_required_result_multi_round", form, {
      inputResponses: { step1: { action: "accept", content: { name: "Ada" } } },
      requestState: first.body.result.requestState,
    });
    assert.deepEqual(Object.keys(second.body.result.inputRequests), ["step2"], JSON.stringify(second.body));
    assert.notEqual(second.body.result.requestState, first.body.result.requestState);
    const done = await call(server.url, "test_input_required_result_multi_round", form, {
      inputResponses: { step2: { action: "accept", content: { color: "blue" } } },
      requestState: second.body.result.requestState,
    });
    assert.equal(done.body.result.resultType, "complete");
    assert.deepEqual(done.body.result.content, [{ type: "text", text: "Ada likes blue" }]);
    // The first round's state again: used, and the call it named has ended.
    const replayed = await call(server.url, "test_input_required_result_multi_round", form, {
      inputResponses: { step1: { action: "accept", content: { name: "Eve" } } },
      requestState: first.body.result.requestState,
    });
    assert.equal(replayed.body.error?.code, -32602);
  });

  await t.step("an answer that is no answer (not an object) asks the question again", async () => {
    const form = { elicitation: {} };
    const first = await call(server.url, "test_input_required_result_elicitation", form);
    const again = await call(server.url, "test_input_required_result_elicitation", form, {
      inputResponses: { user_name: 12345 },
      requestState: first.body.result.requestState,
    });
    assert.equal(again.body.result.resultType, "input_required");
    assert.deepEqual(Object.keys(again.body.result.inputRequests), ["user_name"]);
  });

  await t.step(
    "a tool that asks the model, for a client without sampling: -32021 before it runs",
    async () => {
      const { status, body } = await call(server.url, "test_input_required_result_sampling", {
        elicitation: {},
      });
      assert.equal(status, 400);
      assert.equal(body.error.code, -32021);
      assert.deepEqual(body.error.data.requiredCapabilities, { sampling: {} });
    },
  );

  await t.step(
    "a question for the client's roots is a roots/list round; a client without roots: -32021",
    async () => {
      const first = await call(server.url, "test_input_required_result_list_roots", { roots: {} });
      assert.deepEqual(first.body.result.inputRequests, {
        client_roots: { method: "roots/list", params: {} },
      });
      const done = await call(server.url, "test_input_required_result_list_roots", { roots: {} }, {
        inputResponses: { client_roots: { roots: [{ uri: "file:///home/ada/project", name: "project" }] } },
        requestState: first.body.result.requestState,
      });
      assert.deepEqual(done.body.result.content, [{
        type: "text",
        text: "Your roots: file:///home/ada/project",
      }]);
      const { status, body } = await call(server.url, "test_input_required_result_list_roots", {
        elicitation: {},
      });
      assert.equal(status, 400);
      assert.equal(body.error.code, -32021);
      assert.deepEqual(body.error.data.requiredCapabilities, { roots: {} });
    },
  );

  await t.step("the official 2.x client fulfils the rounds through its own handlers", async () => {
    const asked: string[] = [];
    const client = new Client({ name: "modern", version: "1" }, {
      capabilities: { elicitation: {}, sampling: {} },
      versionNegotiation: { mode: { pin: REVISION } },
    });
    client.setRequestHandler("elicitation/create", (request) => {
      asked.push(`user: ${request.params.message}`);
      return { action: "accept", content: { name: "Ada" } };
    });
    client.setRequestHandler("sampling/createMessage", () => {
      asked.push("model");
      return { role: "assistant", content: { type: "text", text: "Paris" }, model: "test-model" };
    });
    await client.connect(
      new StreamableHTTPClientTransport(server.url, {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      }),
    );
    try {
      const greeted = await client.callTool({
        name: "test_input_required_result_elicitation",
        arguments: {},
      });
      assert.deepEqual(greeted.content, [{ type: "text", text: "Hello, Ada!" }]);
      const sampled = await client.callTool({ name: "test_input_required_result_sampling", arguments: {} });
      assert.deepEqual(sampled.content, [{ type: "text", text: "The model says: Paris" }]);
      assert.deepEqual(asked, ["user: What is your name?", "model"]);
    } finally {
      await client.close();
    }
  });
});
