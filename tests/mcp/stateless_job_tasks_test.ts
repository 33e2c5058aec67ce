/**
 * Background jobs as tasks (issue 40): for a 2026-07-28 client that declares the tasks extension, a background
 * `exec` is answered as a task at once, and that task follows the job: `tasks/get` says what the `job` tool says
 * (running, then the job's answer once it exited; cancelled once something killed it), `tasks/cancel` ends the
 * job's whole tree as its user's stop (`killed_by: "user"`, in the job's audit line too), and the job tool still
 * sees the job by the id the task names. A job's task is its caller's only: another client can neither read it
 * nor cancel it. A client without the extension gets the job's plain answer, as before.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { auditDirFor } from "../../src/state/state.ts";
import { killLeftovers, parsePids, readAudit, scratch, waitForFile, waitGone } from "../executor_helpers.ts";
import { REPO } from "../support.ts";
import { type HttpServer, serveArgs, spawnHttp, TOKEN } from "./helpers.ts";
import { type Body, settleTask, statelessRequest, TASKS } from "./stateless_support.ts";

const OWNER = "job-tasks-test";
/** A stateless request from `client`, with `caps` in its `_meta`: its body. */
async function request(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  client = OWNER,
  caps: Record<string, unknown> = TASKS,
): Promise<Body> {
  return (await statelessRequest(url, method, params, { caps, client })).body;
}

/** The `job` tool's answer for `jobId`, as `client` calls it: its structured content. */
async function job(url: URL, action: string, jobId: string, client = OWNER): Promise<Body> {
  const body = await request(
    url,
    "tools/call",
    { name: "job", arguments: { action, job_id: jobId } },
    client,
  );
  return body.result.structuredContent;
}

/** Polls `tasks/get` until the task has left `working`. */
function settle(url: URL, taskId: string): Promise<Body> {
  return settleTask(url, taskId, { caps: TASKS, client: OWNER, stopAt: "input_required" });
}

/**
 * `serve --http` over the project's own manifest (its belt: `exec`, `job`), unconfined, working in `dir` with its
 * state in `state`; `yes`: it approves for its user, no one is asked.
 */
function serveBelt(dir: string, state: string, yes: boolean): Promise<HttpServer> {
  // Audited (serveArgs' --no-audit left out): the test reads a job's audit line.
  const args = serveArgs(["--http", "0", ...(yes ? ["--yes"] : [])], dir, join(REPO, "tools.json"))
    .filter((arg) => arg !== "--no-audit");
  return spawnHttp(Deno.execPath(), args, { TOOLGATE_MCP_TOKEN: TOKEN, XDG_STATE_HOME: state });
}

/** Starts a background `exec` of `shell` as a task; answers the task handle. */
async function startJob(url: URL, shell: string): Promise<Body> {
  const created = await request(url, "tools/call", { name: "exec", arguments: { shell, background: true } });
  assert.equal(created.result?.resultType, "task", JSON.stringify(created));
  return created.result;
}

Deno.test("serve --http: a background exec is a task; tasks/get, tasks/cancel and the job tool agree, the caller's only", async (t) => {
  await using dir = await scratch();
  await using state = await scratch();
  await using server = await serveBelt(dir.path, state.path, true);

  await t.step(
    "tasks/cancel ends the job's tree, the job tool says killed by user, another caller sees nothing",
    async () => {
      const task = await startJob(server.url, "sleep 300 & echo pids $$ $! > pids; wait");
      assert.equal(task.status, "working");
      assert.equal(typeof task.taskId, "string");
      const started = task._meta["toolgate/job"];
      assert.equal(started.job_id, "job-1");
      assert.equal(started.background, true);
      const pids = parsePids(await waitForFile(join(dir.path, "pids")));
      try {
        const got = await request(server.url, "tasks/get", { taskId: task.taskId });
        assert.equal(got.result.status, "working");
        assert.match(got.result.statusMessage, /job-1 .* is running/);
        // The job tool sees the very job the task follows.
        const polled = await job(server.url, "poll", started.job_id);
        assert.equal(polled.state, "running");
        assert.equal(polled.pid, started.pid);

        // Another client: neither the task nor the job is there for it, and its cancel ends nothing.
        const foreign = await request(server.url, "tasks/get", { taskId: task.taskId }, "someone-else");
        assert.equal(foreign.error?.code, -32602);
        const foreignCancel = await request(
          server.url,
          "tasks/cancel",
          { taskId: task.taskId },
          "someone-else",
        );
        assert.equal(foreignCancel.error?.code, -32602);
        const foreignPoll = await request(
          server.url,
          "tools/call",
          { name: "job", arguments: { action: "poll", job_id: started.job_id } },
          "someone-else",
        );
        assert.equal(foreignPoll.result.structuredContent.kind, "not_found");
        assert.deepEqual(await waitGone(pids, 200), pids, "the other caller's cancel ended nothing");

        const cancelled = await request(server.url, "tasks/cancel", { taskId: task.taskId });
        assert.deepEqual(cancelled.result, { resultType: "complete" });
        assert.deepEqual(await waitGone(pids, 10_000), [], `still alive: ${pids}`);
        const ended = await settle(server.url, task.taskId);
        assert.equal(ended.status, "cancelled");
        assert.match(ended.statusMessage, /killed by user/);
        const after = await job(server.url, "poll", started.job_id);
        assert.equal(after.state, "killed");
        assert.equal(after.killed_by, "user");
      } finally {
        killLeftovers(pids);
      }
      const audit = auditDirFor({ XDG_STATE_HOME: state.path }, dir.path);
      const records = await readAudit(audit);
      assert.ok(
        records.some((record) => record.tool === "exec" && record.killed_by === "user"),
        JSON.stringify(records.filter((record) => record.tool === "exec")),
      );
    },
  );

  await t.step("an ended job's task holds the job tool's answer", async () => {
    const task = await startJob(server.url, "echo made it; exit 3");
    const done = await settle(server.url, task.taskId);
    assert.equal(done.status, "completed", JSON.stringify(done));
    const answer = done.result.structuredContent;
    assert.equal(answer.state, "exited");
    assert.equal(answer.exit_code, 3);
    assert.match(answer.tail, /made it/);
    assert.deepEqual(await job(server.url, "poll", task._meta["toolgate/job"].job_id), answer);
  });

  await t.step("a job the job tool kills is a cancelled task", async () => {
    const task = await startJob(server.url, "sleep 300");
    const killed = await job(server.url, "kill", task._meta["toolgate/job"].job_id);
    assert.equal(killed.state, "killed");
    const ended = await settle(server.url, task.taskId);
    assert.equal(ended.status, "cancelled");
    assert.match(ended.statusMessage, /killed by model/);
  });

  await t.step("a client without the extension gets the job's plain answer, as before", async () => {
    const plain = await request(
      server.url,
      "tools/call",
      { name: "exec", arguments: { shell: "true", background: true } },
      OWNER,
      {},
    );
    assert.equal(plain.result.resultType, "complete");
    assert.equal(plain.result.structuredContent.background, true);
    assert.match(plain.result.structuredContent.job_id, /^job-\d+$/);
  });
});

Deno.test("serve --http: a background exec that needs a person's approval asks it by a round first, then is a task", async () => {
  await using dir = await scratch();
  await using state = await scratch();
  await using server = await serveBelt(dir.path, state.path, false);
  const caps = { ...TASKS, elicitation: {} };
  const args = { shell: "echo approved > ran", background: true };
  const round = await request(server.url, "tools/call", { name: "exec", arguments: args }, OWNER, caps);
  assert.equal(round.result?.resultType, "input_required", JSON.stringify(round));
  assert.ok("toolgate_approval" in round.result.inputRequests);
  // Nothing ran while the approval is asked.
  await assert.rejects(Deno.stat(join(dir.path, "ran")), Deno.errors.NotFound);
  const created = await request(
    server.url,
    "tools/call",
    {
      name: "exec",
      arguments: args,
      inputResponses: { toolgate_approval: { action: "accept", content: { always: false } } },
      requestState: round.result.requestState,
    },
    OWNER,
    caps,
  );
  assert.equal(created.result?.resultType, "task", JSON.stringify(created));
  const done = await settle(server.url, created.result.taskId);
  assert.equal(done.status, "completed");
  assert.equal(done.result.structuredContent.exit_code, 0);
  assert.equal(await Deno.readTextFile(join(dir.path, "ran")), "approved\n");
});
