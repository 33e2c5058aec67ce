/**
 * `src/mcp/job_tasks.ts` over real jobs (real processes in a job table): a job task is its caller's only, says
 * what the job says, and past a caller's cap its oldest ended task goes, never a running one.
 */
import assert from "node:assert/strict";
import { JobTasks } from "../../src/mcp/job_tasks.ts";
import { TASK_LIMITS } from "../../src/mcp/tasks.ts";
import type { Job } from "../../src/run/job.ts";
import { JobManager } from "../../src/run/jobs.ts";
import { scratch } from "../executor_helpers.ts";

/** Starts `argv` as a job of `scope` in `jobs`. */
async function start(jobs: JobManager, dir: string, scope: string, argv: string[]): Promise<Job> {
  const started = await jobs.start({
    scope,
    command: { argv },
    cwd: ".",
    request: {
      program: argv[0],
      args: argv.slice(1),
      env: { PATH: "/usr/bin:/bin" },
      cwd: dir,
      stdin: new Uint8Array(),
      timeoutMs: 60_000,
      graceMs: 200,
    },
  });
  assert.ok(started.ok);
  return started.job;
}

Deno.test("job tasks: the caller's only; cancel ends the job as its user's stop; the status follows the job", async () => {
  await using dir = await scratch();
  const jobs = new JobManager({ dir: dir.path });
  const tasks = new JobTasks();
  try {
    const job = await start(jobs, dir.path, "a", ["/bin/sleep", "30"]);
    const created = tasks.start("http|a", job, { job_id: job.id, pid: job.pid });
    assert.equal(created.resultType, "task");
    assert.equal(created.status, "working");
    const id = created.taskId as string;
    assert.equal(tasks.get("http|b", id), undefined);
    assert.equal(tasks.cancel("http|b", id), false);
    assert.equal(tasks.update("http|b", id), false);
    assert.equal(job.state, "running", "another caller's cancel ended nothing");
    assert.equal(tasks.cancel("http|a", id), true);
    await job.done;
    assert.equal(job.killedBy, "user");
    const got = tasks.get("http|a", id)!;
    assert.equal(got.status, "cancelled");
    assert.equal(got.result, undefined);

    const quick = await start(jobs, dir.path, "a", ["/bin/sh", "-c", "echo hi; exit 2"]);
    await quick.done;
    const done = tasks.get("http|a", tasks.start("http|a", quick, {}).taskId)!;
    assert.equal(done.status, "completed");
    const result = done.result as { structuredContent: { exit_code: number; tail: string } };
    assert.equal(result.structuredContent.exit_code, 2);
    assert.match(result.structuredContent.tail, /hi/);
  } finally {
    await jobs.endAll();
  }
});

Deno.test("job tasks: past a caller's cap its oldest ended task goes, never a running one", async () => {
  await using dir = await scratch();
  const jobs = new JobManager({ dir: dir.path });
  const tasks = new JobTasks();
  try {
    const running = await start(jobs, dir.path, "a", ["/bin/sleep", "30"]);
    const first = tasks.start("c", running, {}).taskId as string;
    const ids: string[] = [];
    for (let n = 1; n < TASK_LIMITS.maxPerCaller; n++) {
      const job = await start(jobs, dir.path, "a", ["/bin/true"]);
      await job.done;
      ids.push(tasks.start("c", job, {}).taskId as string);
    }
    // Another caller's tasks are not its to lose.
    const other = await start(jobs, dir.path, "b", ["/bin/true"]);
    await other.done;
    const theirs = tasks.start("d", other, {}).taskId as string;
    const last = await start(jobs, dir.path, "a", ["/bin/true"]);
    await last.done;
    const newest = tasks.start("c", last, {}).taskId as string;
    assert.equal(tasks.get("c", ids[0]), undefined, "the oldest ended task went");
    assert.equal(tasks.get("c", first)?.status, "working", "the running one stays");
    assert.equal(tasks.get("c", ids[1])?.status, "completed");
    assert.equal(tasks.get("c", newest)?.status, "completed");
    assert.equal(tasks.get("d", theirs)?.status, "completed");
  } finally {
    await jobs.endAll();
  }
});
