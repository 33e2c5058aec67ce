/**
 * Background jobs belong to the MCP session that started them (issue 24, item 5): over `serve --http`, with the
 * SDK's own client, a session that is deleted or expires takes its jobs' whole trees with it; another session
 * never sees, polls or kills them, and is not told they exist; the job cap holds per session, so one session
 * filling its own cap leaves the others theirs. Runs unconfined (`--sandbox off`), so it needs no bubblewrap:
 * what is checked is toolgate's own bookkeeping of processes, not the sandbox.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { alivePids, killLeftovers, scratch, waitGone } from "../executor_helpers.ts";
import { REPO } from "../support.ts";
import { pgrep, uniqueSleep as uniqueSleepFrom } from "../processes.ts";
import {
  connectHttp,
  envelopeOf,
  type HttpConnected,
  type HttpServer,
  startHttp,
  TOKEN,
} from "../mcp/helpers.ts";

/** The belt's manifest: `exec` (background jobs) and `job`. */
const BELT = join(REPO, "tools.json");

/** `toolgate serve --http 0` over the belt, every call approved, its job logs in a state folder of the test's. */
async function serveBelt(extra: readonly string[], workspace: string, state: string): Promise<HttpServer> {
  return await startHttp(
    ["--yes", ...extra],
    workspace,
    { TOOLGATE_MCP_TOKEN: TOKEN, XDG_STATE_HOME: state },
    BELT,
  );
}

/** A sleep length no other process uses, so that pgrep finds exactly the test's own. */
const uniqueSleep = () => uniqueSleepFrom(2000, 900);

/** The pids of every process in process group `pgid` (a job leads its own group). */
async function groupPids(pgid: number): Promise<number[]> {
  const out = await new Deno.Command("pgrep", { args: ["-g", String(pgid)], stdout: "piped", stderr: "null" })
    .output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((line) => line.trim() !== "").map(Number);
}

/** A job as `exec` announced it, with every process of its tree seen running. */
interface Started {
  readonly job_id: string;
  readonly pid: number;
  /** The job's processes (its group), its `sleep` among them. */
  readonly tree: number[];
}

/** Starts `sleep SECONDS` as a background job of `session` and waits until its `sleep` runs. */
async function startSleep(session: HttpConnected, seconds: string): Promise<Started> {
  const answer = envelopeOf(
    await session.client.callTool({
      name: "exec",
      arguments: { argv: ["sleep", seconds], background: true },
    }),
  );
  assert.equal(answer.ok, true, JSON.stringify(answer));
  const { job_id, pid } = answer.result as { job_id: string; pid: number };
  // Its first process becomes the sleep once everything before it (a shell setting up its cgroup, a short-lived
  // `mkdir` among it) is done: only then is its group the job's tree.
  const deadline = performance.now() + 10_000;
  while (!(await pgrep(`sleep ${seconds}`)).includes(pid) && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const tree = await groupPids(pid);
  assert.ok(tree.includes(pid), `the job ${job_id} (pid ${pid}) runs no sleep`);
  return { job_id, pid, tree };
}

/** A background `exec` the server refuses, and its envelope. */
async function refusedStart(session: HttpConnected, seconds: string): Promise<Record<string, unknown>> {
  const answer = envelopeOf(
    await session.client.callTool({
      name: "exec",
      arguments: { argv: ["sleep", seconds], background: true },
    }),
  );
  assert.equal(answer.ok, false, `a job started past the cap: ${JSON.stringify(answer)}`);
  return answer;
}

/** A `job` call of `session`, as its envelope. */
async function jobCall(
  session: HttpConnected,
  action: "poll" | "kill",
  jobId: string,
): Promise<Record<string, unknown>> {
  return envelopeOf(await session.client.callTool({ name: "job", arguments: { action, job_id: jobId } }));
}

/** The workspace and the state folder of one test, removed at its end. */
async function folders(): Promise<AsyncDisposable & { workspace: string; state: string }> {
  const workspace = await scratch();
  const state = await scratch();
  return {
    workspace: await Deno.realPath(workspace.path),
    state: state.path,
    async [Symbol.asyncDispose]() {
      await workspace[Symbol.asyncDispose]();
      await state[Symbol.asyncDispose]();
    },
  };
}

Deno.test("session jobs: a deleted session's jobs end, trees and all; another session never sees them and keeps its own cap", async () => {
  await using dirs = await folders();
  await using server = await serveBelt([], dirs.workspace, dirs.state);
  const a = await connectHttp(server.url, TOKEN);
  await using b = await connectHttp(server.url, TOKEN);
  const seconds = uniqueSleep();
  const pids: number[] = [];
  try {
    // Session A fills its cap (8, the attack as it was seen).
    const jobs: Started[] = [];
    for (let i = 0; i < 8; i++) {
      const job = await startSleep(a, seconds);
      jobs.push(job);
      pids.push(...job.tree);
    }
    assert.match(String((await refusedStart(a, seconds)).message), /8 background jobs are running already/);

    // B is told nothing of A's jobs: not_found, as for an id that never was, for a poll and for a kill.
    const never = await jobCall(b, "poll", "job-999");
    for (const job of jobs) {
      for (const action of ["poll", "kill"] as const) {
        const answer = await jobCall(b, action, job.job_id);
        assert.equal(answer.ok, false, JSON.stringify(answer));
        assert.equal(answer.kind, "not_found");
        assert.equal(answer.message, String(never.message).replace("job-999", job.job_id));
      }
    }
    assert.deepEqual(await alivePids(pids), pids.toSorted((x, y) => x - y), "B's kill reached A's jobs");

    // ...and has its own cap: A's full one does not stop it.
    const own = await startSleep(b, seconds);
    pids.push(...own.tree);
    assert.equal(own.job_id, "job-1", "B's ids count only B's jobs");

    // A deletes its session (HTTP DELETE): every process of its jobs ends, not only the table's entries.
    await a.transport.terminateSession();
    await a.client.close();
    const aTrees = jobs.flatMap((job) => job.tree);
    assert.deepEqual(await waitGone(aTrees, 10_000), [], "A's jobs outlived its session");
    for (const job of jobs) assert.deepEqual(await groupPids(job.pid), []);
    // The operator's lines say who ended them.
    const deadline = performance.now() + 5000;
    while (
      (server.stderr().match(/ended: killed by session/g) ?? []).length < 8 && performance.now() < deadline
    ) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.equal((server.stderr().match(/ended: killed by session/g) ?? []).length, 8, server.stderr());
    assert.match(
      server.stderr(),
      /toolgate: job job-1 of session [0-9a-f]{8} \(pid \d+\) started: \["sleep",/,
    );

    // B's own job ran on, and B can still poll and kill it, and start more.
    const polled = await jobCall(b, "poll", own.job_id);
    assert.equal((polled.result as { state: string }).state, "running");
    assert.equal((polled.result as { pid: number }).pid, own.pid);
    const killed = await jobCall(b, "kill", own.job_id);
    assert.equal((killed.result as { state: string }).state, "killed");
    assert.deepEqual(await waitGone(own.tree, 5000), []);
    const next = await startSleep(b, seconds);
    pids.push(...next.tree);
    assert.equal(next.job_id, "job-2");
  } finally {
    killLeftovers(pids);
  }
});

Deno.test("session jobs: a session that expires (--session-idle) ends its jobs", async () => {
  await using dirs = await folders();
  await using server = await serveBelt(["--session-idle", "1"], dirs.workspace, dirs.state);
  const a = await connectHttp(server.url, TOKEN);
  const seconds = uniqueSleep();
  const pids: number[] = [];
  try {
    for (let i = 0; i < 2; i++) pids.push(...(await startSleep(a, seconds)).tree);
    // A says nothing more: past the idle limit its session is closed, and its jobs with it.
    assert.deepEqual(await waitGone(pids, 15_000), [], "the jobs outlived their expired session");
    await assert.rejects(a.client.listTools(), /404|Session not found/);
    // The server goes on: a new session starts jobs of its own.
    await using b = await connectHttp(server.url, TOKEN);
    const job = await startSleep(b, seconds);
    pids.push(...job.tree);
    assert.equal(job.job_id, "job-1");
  } finally {
    killLeftovers(pids);
    await a.client.close().catch(() => {});
  }
});

Deno.test("session jobs: --max-session-jobs caps each session and --max-jobs the server; refused starts start nothing", async () => {
  await using dirs = await folders();
  await using server = await serveBelt(
    ["--max-session-jobs", "2", "--max-jobs", "3"],
    dirs.workspace,
    dirs.state,
  );
  await using a = await connectHttp(server.url, TOKEN);
  await using b = await connectHttp(server.url, TOKEN);
  const seconds = uniqueSleep();
  const pids: number[] = [];
  try {
    for (let i = 0; i < 2; i++) pids.push(...(await startSleep(a, seconds)).tree);
    const overOwn = await refusedStart(a, seconds);
    assert.equal(overOwn.kind, "unavailable");
    assert.match(String(overOwn.message), /2 background jobs are running already/);
    // Another session still starts one: the server has room for a third.
    pids.push(...(await startSleep(b, seconds)).tree);
    const overServer = await refusedStart(b, seconds);
    assert.equal(overServer.kind, "unavailable");
    assert.match(String(overServer.message), /3 across all sessions/);
    // Nothing of the refused starts runs: three sleeps, no more.
    const sleeps = await new Deno.Command("pgrep", {
      args: ["-x", "-f", `sleep ${seconds}`],
      stdout: "piped",
      stderr: "null",
    }).output();
    assert.equal(new TextDecoder().decode(sleeps.stdout).trim().split("\n").length, 3);
    // One of A's ends: A may start again.
    const killed = await jobCall(a, "kill", "job-1");
    assert.equal((killed.result as { state: string }).state, "killed");
    pids.push(...(await startSleep(a, seconds)).tree);
  } finally {
    killLeftovers(pids);
  }
});
