/**
 * The tasks extension (`io.modelcontextprotocol/tasks`) for a 2026-07-28 client over HTTP: a call still running
 * after a moment is answered as a task, polled with `tasks/get` to its inlined result, given its question's answer
 * with `tasks/update`, cancelled with `tasks/cancel` (its whole tree ends); a task is its caller's only; a client
 * that does not declare the extension is refused the methods and gets plain results.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { killLeftovers, parsePids, scratch, waitForFile, waitGone } from "../executor_helpers.ts";
import { REPO } from "../support.ts";
import { type HttpServer, startHttp, TOKEN } from "./helpers.ts";
import { type Body, settleTask, statelessRequest, TASKS } from "./stateless_support.ts";

/** A stateless request from `client`, with `caps` in its `_meta`. */
function request(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  caps: Record<string, unknown> = TASKS,
  client = "tasks-test",
): Promise<{ status: number; body: Body }> {
  return statelessRequest(url, method, params, { caps, client });
}

/** Polls `tasks/get` until the task leaves `working` (and `input_required` unless `stopAt` names it). */
function settle(url: URL, taskId: string, stopAt = ""): Promise<Body> {
  return settleTask(url, taskId, { caps: TASKS, client: "tasks-test", stopAt });
}

/** `serve --http` in `dir` over the conformance suite's manifest: its tools that ask, and run long, as tasks do. */
function conformanceServer(dir: string): Promise<HttpServer> {
  return startHttp([], dir, { TOOLGATE_MCP_TOKEN: TOKEN }, join(REPO, "tests", "conformance", "tools.json"));
}

Deno.test("serve --http: the tasks extension runs a long call as a task: get, update, cancel (the tree ends)", async (t) => {
  await using dir = await scratch();
  await using server = await startHttp(
    ["--allow-tools", "tree"],
    dir.path,
    { TOOLGATE_MCP_TOKEN: TOKEN },
    join(REPO, "tests", "fixtures", "mcp", "tools.json"),
  );

  await t.step("server/discover names the extension", async () => {
    const { body } = await request(server.url, "server/discover", {});
    assert.deepEqual(body.result.capabilities.extensions, TASKS.extensions);
  });

  await t.step(
    "a quick call is a plain result; a long one a task, polled to its inlined result",
    async () => {
      // A loaded machine may take the first calls past the 500 ms: one of three quick calls is plain at least.
      const quick = [];
      for (let i = 0; i < 3 && quick.at(-1)?.body.result.resultType !== "complete"; i++) {
        quick.push(await request(server.url, "tools/call", { name: "echo", arguments: { text: "now" } }));
      }
      assert.equal(
        quick.at(-1)?.body.result.resultType,
        "complete",
        JSON.stringify(quick.map((q) => q.body)),
      );
      assert.equal(quick.at(-1)?.body.result.taskId, undefined);
      const created = await request(server.url, "tools/call", { name: "slow", arguments: { seconds: 1.5 } });
      const task = created.body.result;
      assert.equal(task.resultType, "task", JSON.stringify(created.body));
      assert.equal(task.status, "working");
      assert.ok(typeof task.taskId === "string" && !("result" in task));
      assert.ok(Number.isInteger(task.ttlMs) && Number.isInteger(task.pollIntervalMs));
      const done = await settle(server.url, task.taskId);
      assert.equal(done.status, "completed");
      assert.equal(done.resultType, "complete");
      assert.deepEqual(done.result.structuredContent, { slept: { seconds: 1.5 } });
      // Another client's name: not its task.
      const foreign = await request(server.url, "tasks/get", { taskId: task.taskId }, TASKS, "someone-else");
      assert.equal(foreign.body.error?.code, -32602);
    },
  );

  await t.step("tasks/cancel ends a running task's whole tree; a second cancel is the same ack", async () => {
    const created = await request(server.url, "tools/call", { name: "tree", arguments: {} });
    const { taskId } = created.body.result;
    const pids = parsePids(await waitForFile(join(dir.path, "pids"), 20_000));
    try {
      const cancelled = await request(server.url, "tasks/cancel", { taskId });
      assert.deepEqual(cancelled.body.result, { resultType: "complete" });
      assert.deepEqual(await waitGone(pids, 10_000), [], `still alive: ${pids}`);
      assert.equal((await settle(server.url, taskId)).status, "cancelled");
      const again = await request(server.url, "tasks/cancel", { taskId });
      assert.deepEqual(again.body.result, { resultType: "complete" });
    } finally {
      killLeftovers(pids);
    }
  });

  await t.step(
    "a client without the extension: the methods are refused (-32021), and a long call is plain",
    async () => {
      const refused = await request(server.url, "tasks/get", { taskId: "x" }, {});
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.code, -32021);
      const plain = await request(server.url, "tools/call", { name: "slow", arguments: { seconds: 1 } }, {});
      assert.equal(plain.body.result.resultType, "complete");
      assert.deepEqual(plain.body.result.structuredContent, { slept: { seconds: 1 } });
      const unknown = await request(server.url, "tasks/get", { taskId: "no-such-task" });
      assert.equal(unknown.body.error.code, -32602);
    },
  );
});

Deno.test("serve --http: a task whose tool asks waits as input_required, and tasks/update brings the answer", async () => {
  await using dir = await scratch();
  await using server = await conformanceServer(dir.path);
  const caps = { ...TASKS, elicitation: {} };
  // The tool works past the moment, then asks: a task by then, and the question is the task's.
  const created = await request(server.url, "tools/call", { name: "confirm_delete", arguments: {} }, caps);
  const result = created.body.result;
  assert.equal(result.resultType, "task", JSON.stringify(result));
  const waiting = await settle(server.url, result.taskId, "input_required");
  assert.equal(waiting.status, "input_required");
  assert.deepEqual(Object.keys(waiting.inputRequests), ["confirm"]);
  const updated = await request(server.url, "tasks/update", {
    taskId: result.taskId,
    inputResponses: { confirm: { action: "accept", content: { confirm: true } } },
  }, caps);
  assert.deepEqual(updated.body.result, { resultType: "complete" });
  const done = await settle(server.url, result.taskId);
  assert.equal(done.status, "completed");
  assert.deepEqual(done.result.content, [{ type: "text", text: "deleted" }]);
});

Deno.test("serve --http: a tool that asks at once is a round before any task; answered, its long part is a task", async () => {
  await using dir = await scratch();
  await using server = await conformanceServer(dir.path);
  const caps = { ...TASKS, elicitation: {} };
  const round = await request(server.url, "tools/call", { name: "test_tool_with_task", arguments: {} }, caps);
  assert.equal(round.body.result.resultType, "input_required", JSON.stringify(round.body));
  assert.equal("taskId" in round.body.result, false);
  assert.deepEqual(Object.keys(round.body.result.inputRequests), ["user_name"]);
  const created = await request(server.url, "tools/call", {
    name: "test_tool_with_task",
    arguments: {},
    inputResponses: { user_name: { action: "accept", content: { name: "Ada" } } },
    requestState: round.body.result.requestState,
  }, caps);
  const result = created.body.result;
  assert.equal(result.resultType, "task", JSON.stringify(result));
  assert.equal("requestState" in result, false);
  const done = await settle(server.url, result.taskId);
  assert.equal(done.status, "completed");
  assert.deepEqual(done.result.content, [{ type: "text", text: "Hello, Ada: the long part is done" }]);
});

Deno.test("serve --http: a task that asked two questions, answered one, waits on for the other and shows it alone", async () => {
  await using dir = await scratch();
  await using server = await conformanceServer(dir.path);
  const caps = { ...TASKS, elicitation: {} };
  const created = await request(server.url, "tools/call", { name: "multi_input", arguments: {} }, caps);
  const taskId = created.body.result.taskId;
  assert.equal(created.body.result.resultType, "task", JSON.stringify(created.body));
  const waiting = await settle(server.url, taskId, "input_required");
  assert.deepEqual(Object.keys(waiting.inputRequests).sort(), ["confirm", "name"]);
  const updated = await request(server.url, "tasks/update", {
    taskId,
    inputResponses: { name: { action: "accept", content: { name: "Ada" } } },
  }, caps);
  assert.deepEqual(updated.body.result, { resultType: "complete" });
  // At once after the update: still waiting, for the unanswered question only.
  const partial = (await request(server.url, "tasks/get", { taskId }, caps)).body.result;
  assert.equal(partial.status, "input_required", JSON.stringify(partial));
  assert.deepEqual(Object.keys(partial.inputRequests), ["confirm"]);
  await request(server.url, "tasks/update", {
    taskId,
    inputResponses: { confirm: { action: "accept", content: { confirm: true } } },
  }, caps);
  const done = await settle(server.url, taskId);
  assert.equal(done.status, "completed");
  assert.deepEqual(done.result.content, [{ type: "text", text: "answered: confirm, name" }]);
});
