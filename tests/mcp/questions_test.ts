/**
 * A toolgate/1 tool's questions over MCP: the user's form goes to the client as elicitation/create, the model's
 * question as sampling/createMessage once the operator's policy approves sending the text, a question for the
 * client's roots as roots/list; `--yes` answers none.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { connectHttp, startHttp, TOKEN } from "./helpers.ts";
import { scratch } from "../executor_helpers.ts";
import { FIXTURES } from "../support.ts";

const MANIFEST = join(FIXTURES, "mcp", "questions.json");

/** The answer line the fixture tool read, from its text block. */
function answerOf(result: Record<string, unknown>): Record<string, unknown> {
  const [block] = result.content as { type: string; text: string }[];
  return JSON.parse(block.text);
}

Deno.test("a tool's question to the user reaches the client as elicitation, schema unchanged", async () => {
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN }, MANIFEST);
  const asked: unknown[] = [];
  await using served = await connectHttp(server.url, TOKEN, {
    capabilities: { elicitation: { form: {} } },
    setup: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params);
        return { action: "accept", content: { target: "prod" } };
      }),
  });
  const result = await served.client.callTool({ name: "ask_user", arguments: {} });
  assert.deepEqual(answerOf(result), {
    type: "answer",
    id: "q",
    answer: { action: "accept", content: { target: "prod" } },
  });
  assert.equal(asked.length, 1);
  const params = asked[0] as { message: string; requestedSchema: unknown };
  assert.equal(params.message, "Deploy where?");
  assert.deepEqual(params.requestedSchema, {
    type: "object",
    properties: { target: { type: "string", enum: ["staging", "prod"], default: "staging" } },
  });
});

Deno.test("a client's answer that does not fit the form's schema never reaches the tool as an answer", async () => {
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN }, MANIFEST);
  await using served = await connectHttp(server.url, TOKEN, {
    capabilities: { elicitation: { form: {} } },
    // A value the form's enum does not hold: the session's schema checker (made at its first form) refuses it.
    setup: (client) =>
      client.setRequestHandler(
        ElicitRequestSchema,
        () => ({ action: "accept", content: { target: "moon" } }),
      ),
  });
  const result = await served.client.callTool({ name: "ask_user", arguments: {} });
  assert.ok(!JSON.stringify(result).includes("moon"), JSON.stringify(result));
});

Deno.test("--yes never answers a question: a client that cannot be asked leaves the tool an error", async () => {
  await using dir = await scratch();
  await using server = await startHttp(["--yes"], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN }, MANIFEST);
  await using served = await connectHttp(server.url, TOKEN, { capabilities: {} });
  const result = await served.client.callTool({ name: "ask_user", arguments: {} });
  const answer = answerOf(result);
  assert.equal("answer" in answer, false, JSON.stringify(answer));
  assert.match(JSON.stringify(answer.error), /cannot ask its user/);
});

Deno.test("a tool's question to the model needs approval: refused unless allowed, sent when allowed", async () => {
  await using dir = await scratch();
  let sampled = 0;
  const setup = {
    capabilities: { sampling: {} },
    setup: (client: import("@modelcontextprotocol/sdk/client/index.js").Client) =>
      client.setRequestHandler(CreateMessageRequestSchema, () => {
        sampled += 1;
        return { role: "assistant", content: { type: "text", text: "all good" }, model: "m" };
      }),
  };
  {
    // Nobody to ask (the client shows no forms) and nothing approves it: the text never leaves.
    await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN }, MANIFEST);
    await using served = await connectHttp(server.url, TOKEN, setup);
    const answer = answerOf(await served.client.callTool({ name: "ask_model", arguments: {} }));
    assert.match(JSON.stringify(answer.error), /needs the user's approval.*--allow-tools ask_model/);
    assert.equal(sampled, 0);
  }
  {
    await using server = await startHttp(
      ["--allow-tools", "ask_model"],
      dir.path,
      { TOOLGATE_MCP_TOKEN: TOKEN },
      MANIFEST,
    );
    await using served = await connectHttp(server.url, TOKEN, setup);
    const answer = answerOf(await served.client.callTool({ name: "ask_model", arguments: {} }));
    assert.deepEqual(answer.answer, {
      role: "assistant",
      content: { type: "text", text: "all good" },
      model: "m",
    });
    assert.equal(sampled, 1);
  }
});

Deno.test("a tool's question for the client's roots reaches a session's client as roots/list; a client without roots leaves an error", async () => {
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN }, MANIFEST);
  let listed = 0;
  {
    await using served = await connectHttp(server.url, TOKEN, {
      capabilities: { roots: {} },
      setup: (client) =>
        client.setRequestHandler(ListRootsRequestSchema, () => {
          listed += 1;
          return { roots: [{ uri: "file:///home/ada/project", name: "project" }] };
        }),
    });
    const result = await served.client.callTool({ name: "ask_roots", arguments: {} });
    assert.deepEqual(answerOf(result), {
      type: "answer",
      id: "q",
      answer: { roots: [{ uri: "file:///home/ada/project", name: "project" }] },
    });
    assert.equal(listed, 1);
  }
  await using served = await connectHttp(server.url, TOKEN, { capabilities: {} });
  const answer = answerOf(await served.client.callTool({ name: "ask_roots", arguments: {} }));
  assert.equal("answer" in answer, false, JSON.stringify(answer));
  assert.match(JSON.stringify(answer.error), /cannot list its roots/);
});
