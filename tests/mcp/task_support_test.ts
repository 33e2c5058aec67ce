/**
 * A manifest's `execution.taskSupport` against one `serve --http`, in both revisions: `tools/list` says it; a
 * session client is refused a `required` tool without `params.task` and a `forbidden` one with it (`-32601`), and
 * runs the required one as a task (a tool's failure: a completed task with `isError`), and a tool's own question
 * while its task runs goes out on the stream of `tasks/result` (the task `input_required`, each change pushed as
 * `notifications/tasks/status`); a stateless client without
 * the tasks extension is refused the required tool (`-32021`), with it gets a task, and a `forbidden` tool stays a
 * plain call however long it runs.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskPayloadResultSchema,
  type McpError,
  TaskStatusNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { scratch } from "../executor_helpers.ts";
import { REPO } from "../support.ts";
import { until } from "../processes.ts";
import { connectHttp, startHttp, TOKEN } from "./helpers.ts";
import { type Body, statelessRequest, TASKS } from "./stateless_support.ts";

/** A tool of the conformance suite's task fixtures, as `name`, with `execution`. */
function fixture(name: string, mode: string, execution?: Record<string, unknown>): Record<string, unknown> {
  return {
    name,
    command: ["./tools/bin/tasks.py", mode],
    ...(execution === undefined ? {} : { execution }),
    protocol: "toolgate/1",
    readOnly: true,
    concurrent: true,
    permissions: "none",
  };
}

/** A stateless request of the 2026-07-28 revision (a `tools/call` of `name`, or a `tasks/*` of the task `name`). */
async function stateless(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  caps: unknown,
): Promise<Body> {
  return (await statelessRequest(url, method, params, { caps, client: "task-support-test", id: 1 })).body;
}

/** A stateless `tools/call`. */
function statelessCall(url: URL, name: string, args: unknown, caps: unknown) {
  return stateless(url, "tools/call", { name, arguments: args }, caps);
}

Deno.test("serve --http: a manifest's taskSupport is listed, required and forbidden hold for both revisions", async () => {
  await using dir = await scratch();
  const bin = join(dir.path, "manifest", "tools", "bin");
  await Deno.mkdir(bin, { recursive: true });
  await Deno.copyFile(join(REPO, "tests", "conformance", "tools", "bin", "tasks.py"), join(bin, "tasks.py"));
  await Deno.chmod(join(bin, "tasks.py"), 0o755);
  const manifest = join(dir.path, "manifest", "tools.json");
  await Deno.writeTextFile(
    manifest,
    JSON.stringify({
      tools: [
        fixture("never_task", "slow_compute", { taskSupport: "forbidden" }),
        fixture("only_task", "failing_job", { taskSupport: "required" }),
        fixture("either", "greet"),
        fixture("quick_task", "greet", { taskSupport: "required" }),
        { ...fixture("confirm", "confirm_delete"), asks: ["user"] },
      ],
    }),
  );
  const workspace = join(dir.path, "workspace");
  await Deno.mkdir(workspace);
  await using server = await startHttp([], workspace, { TOOLGATE_MCP_TOKEN: TOKEN }, manifest);
  const asked: unknown[] = [];
  const pushed: string[] = [];
  await using old = await connectHttp(server.url, TOKEN, {
    capabilities: { elicitation: {} },
    setup: (client) => {
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params);
        return { action: "accept", content: { confirm: true } };
      });
      // The revision's optional push, on the session's own stream (the SDK's GET stream over HTTP).
      client.setNotificationHandler(
        TaskStatusNotificationSchema,
        (notification) => void pushed.push(`${notification.params.taskId} ${notification.params.status}`),
      );
    },
  });
  const { client } = old;

  const listed = Object.fromEntries(
    (await client.listTools()).tools.map((tool) => [tool.name, tool.execution]),
  );
  assert.deepEqual(listed, {
    never_task: { taskSupport: "forbidden" },
    only_task: { taskSupport: "required" },
    either: { taskSupport: "optional" },
    quick_task: { taskSupport: "required" },
    confirm: { taskSupport: "optional" },
  });

  // A session: required without a task, forbidden with one: -32601, as the revision says; nothing runs.
  await assert.rejects(
    client.request(
      { method: "tools/call", params: { name: "only_task", arguments: {} } },
      CallToolResultSchema,
    ),
    (error: McpError) => error.code === -32601 && /only as a task/.test(error.message),
  );
  await assert.rejects(
    client.request(
      { method: "tools/call", params: { name: "never_task", arguments: { seconds: 0 }, task: {} } },
      CreateTaskResultSchema,
    ),
    (error: McpError) => error.code === -32601 && /does not run as a task/.test(error.message),
  );
  // The required tool as a task: its failure is the task's result, completed with isError.
  const created = await client.request(
    { method: "tools/call", params: { name: "only_task", arguments: {}, task: { ttl: 5_000 } } },
    CreateTaskResultSchema,
  );
  assert.equal(created.task.status, "working");
  assert.equal(created.task.ttl, 5_000);
  const result = await client.request(
    { method: "tasks/result", params: { taskId: created.task.taskId } },
    GetTaskPayloadResultSchema,
  );
  assert.equal(result.isError, true);
  assert.deepEqual(result._meta?.["io.modelcontextprotocol/related-task"], { taskId: created.task.taskId });
  assert.equal((await client.experimental.tasks.getTask(created.task.taskId)).status, "completed");

  // A running tool's own question in a task: input_required, asked on the stream of tasks/result, answered.
  const statuses: string[] = [];
  let confirmed: Record<string, unknown> | undefined;
  for await (
    const message of client.experimental.tasks.callToolStream(
      { name: "confirm", arguments: {} },
      CallToolResultSchema,
      {
        task: {},
      },
    )
  ) {
    if (message.type === "taskStatus") statuses.push(message.task.status);
    if (message.type === "result") confirmed = message.result;
    if (message.type === "error") throw message.error;
  }
  assert.ok(statuses.includes("input_required"), statuses.join(", "));
  assert.deepEqual(confirmed?.content, [{ type: "text", text: "deleted" }]);
  assert.equal(asked.length, 1);
  assert.match(JSON.stringify(asked[0]), /Delete the file\?/);
  const confirmTask = pushed.find((line) => line.endsWith(" input_required"))?.split(" ")[0];
  assert.ok(confirmTask, pushed.join("\n"));
  await until(() => Promise.resolve(pushed.includes(`${confirmTask} completed`)), "the task's status pushed");

  // Stateless: the required tool needs the extension (-32021), and with it is a task.
  const refused = await statelessCall(server.url, "only_task", {}, {});
  assert.equal(refused.error?.code, -32021, JSON.stringify(refused));
  assert.deepEqual(refused.error.data.requiredCapabilities, TASKS);
  const task = await statelessCall(server.url, "only_task", {}, TASKS);
  assert.equal(task.result?.resultType, "task", JSON.stringify(task));
  // Required and quick: a task all the same, its result inlined once it ended.
  const quick = await statelessCall(server.url, "quick_task", { name: "Ada" }, TASKS);
  assert.equal(quick.result?.resultType, "task", JSON.stringify(quick));
  let got;
  do got = await stateless(server.url, "tasks/get", { taskId: quick.result.taskId }, TASKS); while (
    got.result?.status === "working"
  );
  assert.equal(got.result?.status, "completed", JSON.stringify(got));
  assert.deepEqual(got.result.result.content, [{ type: "text", text: "Hello, Ada!" }]);
  // A forbidden tool stays a plain call past the moment after which a call becomes a task.
  const plain = await statelessCall(server.url, "never_task", { seconds: 1, label: "x" }, TASKS);
  assert.equal(plain.result?.resultType, "complete", JSON.stringify(plain));
  assert.equal(plain.result.taskId, undefined);
  assert.deepEqual(old.protocolErrors, []);
});
