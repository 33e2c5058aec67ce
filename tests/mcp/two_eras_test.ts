/**
 * Clients of both MCP eras against one `toolgate serve --http`: the official 2.x client pinned to 2026-07-28
 * (stateless: `server/discover`, no session, approvals by input-required rounds that the SDK fulfils through its
 * elicitation handler) and the 1.x client (a 2025-11-25 session, approvals by an elicitation request), each
 * listing the tools, calling one, and answering an approval; then each running tasks, its era's way (the 1.x
 * client's `callToolStream` and `tasks/*` of 2025-11-25; the 2.x client through the tasks extension's own package,
 * `@modelcontextprotocol/ext-tasks`): created, polled, their results fetched, one cancelled and its tree gone.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client as StatelessClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createTaskSessionFromClient,
  type JsonRpcResponse,
  resultFromTaskOutcome,
  taskViewFromExecutionEvent,
} from "@modelcontextprotocol/ext-tasks/client";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskResultSchema,
  type McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { killLeftovers, parsePids, readAudit, scratch, waitForFile, waitGone } from "../executor_helpers.ts";
import { until } from "../processes.ts";
import { connectHttp, serveArgs, spawnHttp, startHttp, TOKEN } from "./helpers.ts";
import { statelessHeaders } from "./stateless_support.ts";

Deno.test("serve --http: a 2.x stateless client and a 1.x session client list, call and answer an approval", async () => {
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN });
  const notes = join(dir.path, "notes");

  // The 2.x client, pinned to the stateless revision: no fallback to initialize.
  const asked: string[] = [];
  const modern = new StatelessClient({ name: "modern", version: "1" }, {
    capabilities: { elicitation: {} },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  modern.setRequestHandler("elicitation/create", (request) => {
    asked.push(`modern: ${request.params.message}`);
    return { action: "accept", content: { always: false } };
  });
  const transport = new StreamableHTTPClientTransport(server.url, {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  await modern.connect(transport);
  try {
    assert.equal(modern.getProtocolEra(), "modern");
    assert.equal(modern.getNegotiatedProtocolVersion(), "2026-07-28");
    assert.equal(transport.sessionId, undefined, "the stateless client has no session");

    // The 1.x client: a 2025-11-25 session that is asked by an elicitation request.
    await using old = await connectHttp(server.url, TOKEN, {
      capabilities: { elicitation: {} },
      setup: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(`old: ${request.params.message}`);
          return { action: "accept", content: { always: false } };
        }),
    });
    assert.notEqual(old.transport.sessionId, undefined, "the old client keeps its session");

    const listedModern = (await modern.listTools()).tools.map((tool) => tool.name);
    const listedOld = (await old.client.listTools()).tools.map((tool) => tool.name);
    assert.deepEqual(listedModern, listedOld);
    assert.ok(listedModern.includes("note"));

    const echoed = await modern.callTool({ name: "echo", arguments: { text: "modern" } });
    assert.deepEqual(echoed.structuredContent, { echo: { text: "modern" } });
    const echoedOld = await old.client.callTool({ name: "echo", arguments: { text: "old" } });
    assert.deepEqual(echoedOld.structuredContent, { echo: { text: "old" } });

    // note writes the workspace: each client's user is asked, each in its era's way, and each call runs.
    const wrote = await modern.callTool({ name: "note", arguments: { text: "modern" } });
    assert.deepEqual(wrote.structuredContent, { written: true });
    const wroteOld = await old.client.callTool({ name: "note", arguments: { text: "old" } });
    assert.deepEqual(wroteOld.structuredContent, { written: true });
    assert.equal(asked.length, 2, asked.join("\n"));
    assert.match(asked[0], /^modern: .*note/s);
    assert.match(asked[1], /^old: .*note/s);
    assert.equal(await Deno.readTextFile(notes), '{"text":"modern"}\n{"text":"old"}\n');
    assert.deepEqual(old.protocolErrors, []);
  } finally {
    await modern.close();
  }
});

/** The audit lines of `tool` whose `killed_by` is set, from the audit folder `audit`. */
async function killedLines(audit: string, tool: string): Promise<Record<string, unknown>[]> {
  const records = await readAudit(audit).catch(() => []);
  return records.filter((record) => record.tool === tool && record.killed_by !== undefined);
}

/**
 * A 2.x client's requests of the tasks extension, which its codec of 2026-07-28 does not send: the extension's
 * own package frames them (`_meta`), and this posts them as any 2026-07-28 client would.
 */
function rawDispatch(url: URL): (request: unknown) => Promise<JsonRpcResponse> {
  let id = 0;
  return async (request) => {
    const { method, params } = request as { method: string; params?: Record<string, unknown> };
    const name = method === "tools/call" ? params?.name : params?.taskId;
    const response = await fetch(url, {
      method: "POST",
      headers: statelessHeaders(method, name),
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, ...(request as Record<string, unknown>) }),
    });
    return await response.json();
  };
}

Deno.test("serve --http: a 2.x stateless client and a 1.x session client each run tasks: created, polled, their results fetched, one cancelled (its tree gone)", async () => {
  await using dir = await scratch();
  // With its audit log (the fixture's serve has none), so that a cancelled task's line can be read.
  const audit = join(dir.path, "audit");
  await using server = await spawnHttp(
    Deno.execPath(),
    serveArgs(["--http", "0", "--allow-tools", "tree", "--audit-dir", audit], dir.path)
      .filter((arg) => arg !== "--no-audit"),
    { TOOLGATE_MCP_TOKEN: TOKEN },
  );
  const asked: string[] = [];
  await using old = await connectHttp(server.url, TOKEN, {
    capabilities: { elicitation: {} },
    setup: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params.message);
        assert.deepEqual(Object.keys(request.params._meta ?? {}), ["io.modelcontextprotocol/related-task"]);
        return { action: "accept", content: { always: false } };
      }),
  });
  const { client } = old;
  assert.deepEqual(client.getServerCapabilities()?.tasks, {
    list: {},
    cancel: {},
    requests: { tools: { call: {} } },
  });
  const listed = (await client.listTools()).tools;
  assert.deepEqual(listed.find((tool) => tool.name === "slow")?.execution, { taskSupport: "optional" });

  // A task polled to its end (tasks/get), its result fetched (tasks/result): the SDK's own task stream.
  const seen: string[] = [];
  let result: Record<string, unknown> | undefined;
  for await (
    const message of client.experimental.tasks.callToolStream(
      { name: "slow", arguments: { seconds: 1.5 } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    )
  ) {
    if (message.type === "taskCreated") seen.push(`created ${message.task.status}`);
    if (message.type === "taskStatus") seen.push(message.task.status);
    if (message.type === "result") result = message.result;
    if (message.type === "error") throw message.error;
  }
  assert.equal(seen[0], "created working");
  assert.equal(seen.at(-1), "completed");
  assert.deepEqual(result?.structuredContent, { slept: { seconds: 1.5 } });

  // A task that needs an approval: input_required, and the question comes on the stream of tasks/result.
  const statuses: string[] = [];
  let wrote: Record<string, unknown> | undefined;
  for await (
    const message of client.experimental.tasks.callToolStream(
      { name: "note", arguments: { text: "task" } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    )
  ) {
    if (message.type === "taskStatus") statuses.push(message.task.status);
    if (message.type === "result") wrote = message.result;
    if (message.type === "error") throw message.error;
  }
  assert.ok(statuses.includes("input_required"), statuses.join(", "));
  assert.deepEqual(wrote?.structuredContent, { written: true });
  assert.equal(asked.length, 1);
  assert.match(asked[0], /note/);
  assert.equal(await Deno.readTextFile(join(dir.path, "notes")), '{"text":"task"}\n');

  // A task cancelled: its whole tree ends, the audit says the user stopped it; another session cannot see it.
  const created = await client.request(
    { method: "tools/call", params: { name: "tree", arguments: {}, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
  const { taskId } = created.task;
  const pids = parsePids(await waitForFile(join(dir.path, "pids"), 20_000));
  try {
    await using other = await connectHttp(server.url, TOKEN);
    for (const method of ["tasks/get", "tasks/cancel", "tasks/result"] as const) {
      await assert.rejects(
        other.client.request({ method, params: { taskId } }, GetTaskResultSchema),
        (error: McpError) => error.code === -32602,
        method,
      );
    }
    assert.deepEqual((await other.client.experimental.tasks.listTasks()).tasks, []);
    assert.equal((await client.experimental.tasks.getTask(taskId)).status, "working");
    const cancelled = await client.experimental.tasks.cancelTask(taskId);
    assert.equal(cancelled.status, "cancelled");
    assert.deepEqual(await waitGone(pids, 10_000), [], `still alive: ${pids}`);
    assert.equal((await client.experimental.tasks.getTask(taskId)).status, "cancelled");
    // Cancelling an ended task is refused, as the revision says.
    await assert.rejects(
      client.experimental.tasks.cancelTask(taskId),
      (error: McpError) => error.code === -32602,
    );
    const listedTasks = (await client.experimental.tasks.listTasks()).tasks;
    assert.equal(listedTasks.length, 3);
    assert.ok(listedTasks.some((task) => task.taskId === taskId && task.status === "cancelled"));
  } finally {
    killLeftovers(pids);
  }

  // The 2.x client, stateless, with the tasks extension (its official package, over the same client).
  const capabilities = { elicitation: {}, extensions: { "io.modelcontextprotocol/tasks": {} } };
  const modern = new StatelessClient({ name: "modern", version: "1" }, {
    capabilities,
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  await modern.connect(
    new StreamableHTTPClientTransport(server.url, {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  );
  await using tasks = createTaskSessionFromClient(modern, {
    endpointId: "serve",
    rawDispatch: rawDispatch(server.url),
    v2RequestFraming: {
      protocolVersion: "2026-07-28",
      clientInfo: { name: "modern", version: "1" },
      clientCapabilities: capabilities,
    },
  });
  try {
    const slow = await tasks.callTool("slow", { seconds: 1.5 });
    assert.equal(slow.kind, "task");
    const modernSeen: string[] = [];
    const { outcome } = await slow.settle({
      onEvent: (event) => void modernSeen.push(taskViewFromExecutionEvent(event)?.status ?? "?"),
    });
    assert.equal(outcome.status, "completed");
    assert.ok(modernSeen.includes("working"), modernSeen.join(", "));
    assert.deepEqual(
      (resultFromTaskOutcome(outcome) as Record<string, unknown>).structuredContent,
      { slept: { seconds: 1.5 } },
    );

    await Deno.remove(join(dir.path, "pids"));
    const tree = await tasks.callTool("tree", {});
    assert.equal(tree.kind, "task");
    const treePids = parsePids(await waitForFile(join(dir.path, "pids"), 20_000));
    try {
      await tree.cancel();
      assert.deepEqual(await waitGone(treePids, 10_000), [], `still alive: ${treePids}`);
      const view = await tasks.task(tree.handle!.taskId).snapshot();
      assert.equal(view.status, "cancelled");
    } finally {
      killLeftovers(treePids);
    }
  } finally {
    await modern.close();
  }

  // Each era's cancelled task: an audit line of its own, stopped by the user.
  await until(async () => (await killedLines(audit, "tree")).length === 2, "the audit lines of tree");
  for (const line of await killedLines(audit, "tree")) assert.equal(line.killed_by, "user");
  assert.deepEqual(old.protocolErrors, []);
});
