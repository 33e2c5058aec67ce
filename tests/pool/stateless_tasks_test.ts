/**
 * Tasks through the pool (issue 40): a 2026-07-28 client that declares the tasks extension, calling
 * `toolgate serve --http --executor nats://...` against a real NATS server on loopback and a real `toolgate
 * worker`: a pooled call still running after a moment is a task, polled with `tasks/get` to its result; a pooled
 * `toolgate/1` tool's question, relayed from the worker, makes its task `input_required`, and `tasks/update` takes
 * the answer to the tool waiting on the worker; `tasks/cancel` reaches the worker, whose tree of the call ends
 * there. Another client can neither read nor cancel the task.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { auditDirFor } from "../../src/state/state.ts";
import { killLeftovers, parsePids, readAudit, scratch, waitForFile, waitGone } from "../executor_helpers.ts";
import { FIXTURES } from "../support.ts";
import { serveArgs, spawnHttp } from "../mcp/helpers.ts";
import { type Body, settleTask, statelessRequest } from "../mcp/stateless_support.ts";
import { natsServer, POOL_ENV, poolTest, startWorker, writePoolManifest } from "./helpers.ts";

const TOKEN = "stateless-pool-tasks-token";
const CAPS = { elicitation: {}, extensions: { "io.modelcontextprotocol/tasks": {} } };
const OWNER = "pool-tasks-test";
const TOOLS: readonly Record<string, unknown>[] = [
  {
    name: "ask_user",
    // It works a moment before it asks: a question asked at once is an input-required round of the call, not a
    // task's (tests/mcp/stateless_tasks_test.ts).
    command: ["/bin/sh", "-c", `sleep 1; exec ${join(FIXTURES, "mcp", "tools", "bin", "ask")} user`],
    protocol: "toolgate/1",
    asks: ["user"],
    readOnly: true,
  },
  // Starts a grandchild, writes both pids to ./pids in the worker's workspace, and sleeps.
  { name: "tree", command: [join(FIXTURES, "mcp", "tools", "bin", "tree")], readOnly: true, timeoutSec: 60 },
  { name: "nap", command: ["/bin/sh", "-c", "sleep 1.5; cat"], readOnly: true },
];
/** A stateless request from `client` (its name in `_meta`): its body. */
async function request(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  client = OWNER,
): Promise<Body> {
  return (await statelessRequest(url, method, params, { token: TOKEN, caps: CAPS, client })).body;
}

/** Polls `tasks/get` until the task has left `working` (and `input_required`, unless `stopAt` names it). */
function settle(url: URL, taskId: string, stopAt = ""): Promise<Body> {
  return settleTask(url, taskId, { token: TOKEN, caps: CAPS, client: OWNER, stopAt, withinMs: 30_000 });
}

poolTest(
  "pool: a stateless client's pooled calls as tasks: get, update with the tool's answer, cancel on the worker",
  async (t) => {
    await using nats = await natsServer();
    await using dir = await scratch();
    const manifest = await writePoolManifest(dir.path, TOOLS);
    // The worker has a workspace of its own: what ran there ran on the worker.
    await using away = await scratch();
    await using state = await scratch();
    await using _worker = await startWorker(nats.url, manifest, away.path, "w1");
    await using server = await spawnHttp(
      Deno.execPath(),
      // With its audit log: the line of a call cancelled on the worker says who stopped it.
      serveArgs(["--http", "0", "--allow-absolute-commands", "--executor", nats.url], dir.path, manifest)
        .filter((arg) => arg !== "--no-audit"),
      { ...POOL_ENV, TOOLGATE_MCP_TOKEN: TOKEN, XDG_STATE_HOME: state.path },
    );

    await t.step("a long pooled call is a task, polled to its result", async () => {
      const created = await request(server.url, "tools/call", { name: "nap", arguments: { text: "pooled" } });
      assert.equal(created.result?.resultType, "task", JSON.stringify(created));
      const done = await settle(server.url, created.result.taskId);
      assert.equal(done.status, "completed", JSON.stringify(done));
      assert.deepEqual(done.result.structuredContent, { text: "pooled" });
    });

    await t.step(
      "the worker's tool asks: input_required, and tasks/update brings it the answer",
      async () => {
        const created = await request(server.url, "tools/call", { name: "ask_user", arguments: {} });
        assert.equal(created.result?.resultType, "task", JSON.stringify(created));
        const { taskId } = created.result;
        const waiting = await settle(server.url, taskId, "input_required");
        assert.equal(waiting.status, "input_required", JSON.stringify(waiting));
        // One open question, keyed by the tool's own id for it, as a local tool's question is.
        assert.deepEqual(Object.keys(waiting.inputRequests), ["q"]);
        const key = "q";
        assert.equal(waiting.inputRequests[key].method, "elicitation/create");
        assert.equal(waiting.inputRequests[key].params.message, "Deploy where?");
        // Another client's answer is not taken.
        const foreign = await request(server.url, "tasks/update", {
          taskId,
          inputResponses: { [key]: { action: "accept", content: { target: "staging" } } },
        }, "someone-else");
        assert.equal(foreign.error?.code, -32602);
        const updated = await request(server.url, "tasks/update", {
          taskId,
          inputResponses: { [key]: { action: "accept", content: { target: "prod" } } },
        });
        assert.deepEqual(updated.result, { resultType: "complete" });
        const done = await settle(server.url, taskId);
        assert.equal(done.status, "completed", JSON.stringify(done));
        const [block] = done.result.content;
        // The tool on the worker reads its answer under its own question's id.
        assert.deepEqual(JSON.parse(block.text), {
          type: "answer",
          id: "q",
          answer: { action: "accept", content: { target: "prod" } },
        });
      },
    );

    await t.step(
      "tasks/cancel reaches the worker: the call's tree ends there, another client cancels nothing",
      async () => {
        const created = await request(server.url, "tools/call", { name: "tree", arguments: {} });
        assert.equal(created.result?.resultType, "task", JSON.stringify(created));
        const { taskId } = created.result;
        const pids = parsePids(await waitForFile(join(away.path, "pids"), 20_000));
        try {
          const foreign = await request(server.url, "tasks/cancel", { taskId }, "someone-else");
          assert.equal(foreign.error?.code, -32602);
          assert.deepEqual(await waitGone(pids, 200), pids, "another client's cancel ended nothing");
          const cancelled = await request(server.url, "tasks/cancel", { taskId });
          assert.deepEqual(cancelled.result, { resultType: "complete" });
          assert.deepEqual(await waitGone(pids, 15_000), [], `still alive on the worker: ${pids}`);
          assert.equal((await settle(server.url, taskId)).status, "cancelled");
          const audit = auditDirFor({ XDG_STATE_HOME: state.path }, dir.path);
          let line: Record<string, unknown> | undefined;
          const deadline = performance.now() + 10_000;
          while (line === undefined && performance.now() < deadline) {
            line = (await readAudit(audit).catch(() => [])).find((record) => record.tool === "tree");
            if (line === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
          }
          assert.equal(line?.killed_by, "user", JSON.stringify(line));
          assert.equal(line?.worker, "w1", JSON.stringify(line));
        } finally {
          killLeftovers(pids);
        }
      },
    );
  },
);
