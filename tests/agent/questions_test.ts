/**
 * A toolgate/1 tool's questions in the agent loop, end to end (the real CLI against a scripted endpoint): its
 * question to the model goes to the run's model once approved; `--yes` approves sending the text but never
 * answers the user's form.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { answer, callTools, type Script, startChatServer, toolMessages } from "./chat_server.ts";
import { runAgentCli, scriptedRunArgs } from "./run_cli.ts";
import { FIXTURES, tempDir } from "../support.ts";

const MANIFEST = join(FIXTURES, "mcp", "questions.json");

/** Runs the loop over the questions manifest; returns the run and the endpoint's recorded requests. */
async function run(script: Script, args: string[]) {
  await using dir = await tempDir();
  await using server = startChatServer(script);
  const state = join(dir.path, "state");
  const workspace = join(dir.path, "work");
  await Deno.mkdir(workspace);
  const result = await runAgentCli([...scriptedRunArgs(server.baseUrl, MANIFEST, workspace), ...args], {
    env: { XDG_STATE_HOME: state },
    cwd: workspace,
  });
  return { ...result, requests: server.requests };
}

/** The answer line the tool read, from the envelope in the loop's tool message. */
// deno-lint-ignore no-explicit-any
function toolAnswer(body: any): Record<string, unknown> {
  const [message] = toolMessages(body);
  const envelope = JSON.parse(message.content);
  return JSON.parse(envelope.content[0].text);
}

Deno.test("agent loop: a tool's question to the model goes to the run's model with --yes", async () => {
  const result = await run([
    callTools([{ id: "c1", name: "ask_model", args: {} }]),
    answer("Everything is fine."),
    answer("Done."),
  ], ["--yes"]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.requests.length, 3);
  const sampling = result.requests[1].body;
  assert.deepEqual(sampling.messages, [{ role: "user", content: "Summarize: all good" }]);
  assert.equal(sampling.max_tokens, 20);
  assert.equal(sampling.model, "test-model");
  assert.equal(sampling.tools, undefined);
  assert.deepEqual(toolAnswer(result.requests[2].body).answer, {
    role: "assistant",
    content: { type: "text", text: "Everything is fine." },
    model: "test-model",
    stopReason: "endTurn",
  });
});

Deno.test("agent loop: without approval the tool's text never reaches the model", async () => {
  const result = await run([callTools([{ id: "c1", name: "ask_model", args: {} }]), answer("Done.")], []);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.requests.length, 2, "no sampling request was sent");
  const answered = toolAnswer(result.requests[1].body);
  assert.equal("answer" in answered, false);
  assert.match(JSON.stringify(answered.error), /needs the user's approval.*--allow-tools ask_model/);
});

Deno.test("agent loop: --yes never answers the user's form; without a terminal the tool is told", async () => {
  const result = await run([callTools([{ id: "c1", name: "ask_user", args: {} }]), answer("Done.")], [
    "--yes",
  ]);
  assert.equal(result.code, 0, result.stderr);
  const answered = toolAnswer(result.requests[1].body);
  assert.equal("answer" in answered, false, JSON.stringify(answered));
  assert.match(JSON.stringify(answered.error), /nobody can answer the tool's question/);
});
