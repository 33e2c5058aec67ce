/**
 * Job ownership (issue 24, item 5): each owner numbers its own jobs and has its own cap beside the total one; an
 * owner that ends takes its jobs with it, a start under way at that moment included, and starts nothing after.
 */
import assert from "node:assert/strict";
import { JobOwners } from "../../src/run/job_owners.ts";
import { JobManager, type JobStart } from "../../src/run/jobs.ts";
import { alivePids, killLeftovers } from "../executor_helpers.ts";

/** `sleep 30` as a job of `scope`, run as the job table runs any (its own process group). */
function sleeper(scope: string, cwd: string): JobStart {
  return {
    scope,
    command: { argv: ["sleep", "30"] },
    cwd: ".",
    request: {
      program: "/bin/sleep",
      args: ["30"],
      env: { PATH: "/usr/bin:/bin" },
      cwd,
      stdin: new Uint8Array(),
      timeoutMs: Infinity,
      graceMs: 300,
    },
  };
}

Deno.test("job owners: ids and caps are per owner, with a total across owners; a cancelled start frees its place", () => {
  const owners = new JobOwners({ perOwner: 2, total: 3 });
  const ids = (owner: string) => {
    const admitted = owners.admit(owner);
    return admitted.ok ? admitted.id : admitted.reason;
  };
  assert.equal(ids("a"), "job-1");
  assert.equal(ids("a"), "job-2");
  assert.match(ids("a"), /^2 background jobs are running already/);
  assert.equal(ids("b"), "job-1");
  assert.match(ids("b"), /3 across all sessions/);
  owners.cancel("a");
  assert.equal(ids("b"), "job-2");
  assert.equal(owners.running(), 3);
  assert.equal(owners.running("b"), 2);
  // An owner that has ended starts nothing more.
  owners.end("c");
  assert.match(ids("c"), /has ended/);
});

Deno.test("job owners: ending an owner ends its jobs (killed_by session), one whose start was under way too, and no other's", async () => {
  const dir = await Deno.makeTempDir({ prefix: "toolgate_job_owners_" });
  const jobs = new JobManager({ dir });
  const pids: number[] = [];
  try {
    const first = await jobs.start(sleeper("a", dir));
    const other = await jobs.start(sleeper("b", dir));
    assert.ok(first.ok && other.ok);
    pids.push(first.job.pid, other.job.pid);
    // A start of "a" is under way (not yet answered) when "a" ends.
    const racing = jobs.start(sleeper("a", dir));
    await jobs.endScope("a");
    const late = await racing;
    assert.ok(late.ok);
    pids.push(late.job.pid);
    await late.job.done;
    for (const job of [first.job, late.job]) {
      assert.equal(job.state, "killed");
      assert.equal(job.killedBy, "session");
    }
    assert.deepEqual(await alivePids([first.job.pid, late.job.pid]), []);
    // "b" runs on; "a" starts nothing more and its jobs are no longer there for anyone.
    assert.equal(other.job.state, "running");
    const refused = await jobs.start(sleeper("a", dir));
    assert.ok(!refused.ok);
    assert.equal(refused.envelope?.kind, "unavailable");
    assert.equal(jobs.lookup("job-1", "a"), undefined);
    assert.deepEqual(jobs.list().map((job) => [job.scope, job.id]), [["b", "job-1"]]);
  } finally {
    await jobs.endAll();
    killLeftovers(pids);
    await Deno.remove(dir, { recursive: true });
  }
});
