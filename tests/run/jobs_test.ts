/**
 * Background jobs (issue 14): `exec` with `background: true` answers at once with the job, which toolgate owns
 * (started through the executor's launch path, confined by exec's profile where bubblewrap works); the `job` tool
 * polls it, waits for it and kills its whole tree; its log is capped and rotated in toolgate's state folder.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Envelope, FailureEnvelope } from "../../src/contract.ts";
import { Executor } from "../../src/run/executor.ts";
import { type ExecutorOptions } from "../../src/run/call_options.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { type Manifest } from "../../src/manifest/manifest_types.ts";
import { ProcessRegistry } from "../../src/process/process_tree.ts";
import { isWithin } from "../../src/contract/relative_path.ts";
import { AUDIT_KEY, cli, readAudit, waitGone } from "../executor_helpers.ts";
import { REPO, runToolgate } from "../support.ts";
import { pgrep, uniqueSleep as uniqueSleepFrom } from "../processes.ts";
import { confinedTest } from "../security/helpers.ts";
import { answer, callTools, startChatServer, toolMessages } from "../agent/chat_server.ts";

/** Every job test runs unconfined and confined (ignored with its reason where bubblewrap does not work). */
const MODES = ["off", "require"] as const;
const modeTest = (sandbox: string, name: string, fn: () => Promise<void>) =>
  sandbox === "off" ? Deno.test(name, fn) : confinedTest(name, fn);

const BELT: Manifest = await (async () => {
  const loaded = await loadManifest(join(REPO, "tools.json"));
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  return loaded.manifest;
})();

interface Bench extends AsyncDisposable {
  readonly executor: Executor;
  readonly workspace: string;
  readonly state: string;
  readonly audit: string;
}

async function bench(sandbox: "off" | "require", options: Partial<ExecutorOptions> = {}): Promise<Bench> {
  const workspace = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_jobs_ws_" }));
  const state = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_jobs_state_" }));
  const audit = join(state, "audit");
  await Deno.mkdir(audit, { mode: 0o700 });
  const executor = new Executor({
    manifest: BELT,
    env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: state, XDG_STATE_HOME: state },
    cwd: workspace,
    auditDir: audit,
    auditKey: AUDIT_KEY,
    sandbox,
    graceMs: 300,
    ...options,
  });
  return {
    executor,
    workspace,
    state,
    audit,
    async [Symbol.asyncDispose]() {
      await executor.endJobs();
      await Deno.remove(workspace, { recursive: true });
      await Deno.remove(state, { recursive: true });
    },
  };
}

/** A sleep length no other process uses, so that pgrep finds exactly this job's tree (confined pids are not ours). */
const uniqueSleep = () => uniqueSleepFrom(700, 200);

async function waitFor<T>(probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = performance.now() + ms;
  while (true) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// deno-lint-ignore no-explicit-any
function result(envelope: Envelope): any {
  assert.ok(envelope.ok, JSON.stringify(envelope));
  return envelope.result;
}

function failed(envelope: Envelope): FailureEnvelope {
  assert.equal(envelope.ok, false, JSON.stringify(envelope));
  return envelope as FailureEnvelope;
}

const job = (executor: Executor, args: Record<string, unknown>, approvedBy?: "person" | "yes") =>
  executor.prepare("job", JSON.stringify(args)).then((prepared) => {
    assert.ok(prepared.ok, JSON.stringify(prepared));
    return executor.run(prepared.call, { approvedBy });
  });

for (const sandbox of MODES) {
  modeTest(
    sandbox,
    `jobs (sandbox ${sandbox}): started at once, polled, waited for and killed, its whole tree gone`,
    async () => {
      await using b = await bench(sandbox);
      const seconds = uniqueSleep();
      const started = performance.now();
      // A grandchild in the background and one in the foreground: both belong to the job's tree.
      const start = result(
        await b.executor.call(
          "exec",
          JSON.stringify({
            shell: `echo hello; sleep ${seconds} & sleep ${seconds}; echo never`,
            background: true,
          }),
        ),
      );
      assert.ok(performance.now() - started < 5000, "the call answers at once, not when the job ends");
      assert.deepEqual(Object.keys(start).sort(), ["background", "cwd", "job_id", "log_file", "pid"]);
      assert.equal(start.background, true);
      assert.equal(start.cwd, ".");
      assert.match(start.job_id, /^job-\d+$/);
      // The log is toolgate's: in its state folder, never in the workspace a tool may write.
      assert.ok(isWithin(start.log_file, b.state) && !isWithin(start.log_file, b.workspace), start.log_file);
      const sleepers = await waitFor(async () => {
        const found = await pgrep(`sleep ${seconds}`);
        return found.length === 2 ? found : undefined;
      });

      const poll = result(await job(b.executor, { action: "poll", job_id: start.job_id }));
      assert.equal(poll.state, "running");
      assert.equal(poll.pid, start.pid);
      assert.equal(typeof poll.elapsed_ms, "number");
      assert.equal(poll.exit_code, undefined);
      await waitFor(async () =>
        result(await job(b.executor, { action: "poll", job_id: start.job_id })).tail === "hello"
          ? true
          : undefined
      );

      const waited = await job(b.executor, { action: "wait", job_id: start.job_id, timeout_ms: 300 });
      assert.equal(result(waited).state, "running");
      assert.match(waited.ok ? (waited.warnings ?? []).join() : "", /still running after 300 ms/);

      const killed = result(await job(b.executor, { action: "kill", job_id: start.job_id }, "person"));
      assert.equal(killed.state, "killed");
      assert.equal(killed.killed_by, "user");
      assert.deepEqual(await waitGone(sleepers, 5000), [], "the job's whole tree is gone");
      assert.deepEqual(await pgrep(`sleep ${seconds}`), []);

      // A second kill says the job had already ended.
      const again = await job(b.executor, { action: "kill", job_id: start.job_id });
      assert.match((again.ok && again.warnings?.join()) || "", /already ended \(killed\)/);
      // Start and end are both in the audit log.
      const lines = (await readAudit(b.audit)).filter((r) => r.job === start.job_id);
      assert.ok(lines.some((r) => r.tool === "exec" && r.background === true && r.pid === start.pid));
      assert.ok(lines.some((r) => r.job_state === "killed" && r.killed_by === "user"));
    },
  );

  modeTest(
    sandbox,
    `jobs (sandbox ${sandbox}): wait returns when the job ends; exit status, pipefail and SIGPIPE as exec has them`,
    async () => {
      await using b = await bench(sandbox);
      await Deno.mkdir(join(b.workspace, "sub"));
      const exit3 = result(
        await b.executor.call("exec", JSON.stringify({ shell: "pwd; exit 3", cwd: "sub", background: true })),
      );
      assert.equal(exit3.cwd, "sub");
      const ended = result(
        await job(b.executor, { action: "wait", job_id: exit3.job_id, timeout_ms: 20_000 }),
      );
      assert.equal(ended.state, "exited");
      assert.equal(ended.exit_code, 3);
      assert.equal(ended.tail, join(b.workspace, "sub"), "the job ran in its cwd");

      const pipe = result(
        await b.executor.call("exec", JSON.stringify({ shell: "false | true", background: true })),
      );
      assert.equal(result(await job(b.executor, { action: "wait", job_id: pipe.job_id })).exit_code, 1);

      const head = result(
        await b.executor.call("exec", JSON.stringify({ shell: "yes | head -n 1", background: true })),
      );
      const headEnded = await job(b.executor, { action: "wait", job_id: head.job_id });
      assert.equal(result(headEnded).exit_code, 0);
      assert.equal(result(headEnded).sigpipe, true);
      assert.match((headEnded.ok && headEnded.warnings?.join()) || "", /141 \(SIGPIPE\)/);
    },
  );

  modeTest(
    sandbox,
    `jobs (sandbox ${sandbox}): the log is capped and rotated; poll answers its last lines`,
    async () => {
      await using b = await bench(sandbox, { jobLogBytes: 16 * 1024 });
      const start = result(
        await b.executor.call("exec", JSON.stringify({ shell: "seq 1 100000", background: true })),
      );
      const ended = result(await job(b.executor, { action: "wait", job_id: start.job_id, tail_lines: 3 }));
      assert.equal(ended.state, "exited");
      assert.equal(ended.exit_code, 0);
      const printed = Array.from({ length: 100_000 }, (_, i) => `${i + 1}\n`).join("").length;
      assert.equal(ended.log_bytes, printed, "every byte is counted");
      assert.equal(ended.tail, "99998\n99999\n100000");
      const current = await Deno.stat(start.log_file);
      const older = await Deno.stat(`${start.log_file}.1`);
      assert.ok(current.size <= 16 * 1024 && older.size === 16 * 1024, `${current.size} + ${older.size}`);
      assert.equal((current.mode ?? 0) & 0o777, 0o600);
      const tail = await Deno.readTextFile(start.log_file);
      assert.ok(tail.endsWith("99999\n100000\n"));
    },
  );

  modeTest(sandbox, `jobs (sandbox ${sandbox}): an idle job is killed by its own idle timeout`, async () => {
    await using b = await bench(sandbox);
    const start = result(
      await b.executor.call(
        "exec",
        JSON.stringify({ shell: "echo up; sleep 60", idle_timeout_ms: 500, background: true }),
      ),
    );
    const ended = result(await job(b.executor, { action: "wait", job_id: start.job_id, timeout_ms: 10_000 }));
    assert.equal(ended.state, "killed");
    assert.equal(ended.killed_by, "timeout");
    assert.equal(ended.idle, true);
  });
}

Deno.test("jobs: a kill on standing approval says killed_by model; the jobs of one scope are not another's", async () => {
  await using b = await bench("off");
  const prepared = await b.executor.prepare(
    "exec",
    JSON.stringify({ argv: ["sleep", "30"], background: true }),
  );
  assert.ok(prepared.ok);
  const start = result(await b.executor.run(prepared.call, { jobScope: "session-a" }));
  const other = await b.executor.prepare("job", JSON.stringify({ action: "kill", job_id: start.job_id }));
  assert.ok(other.ok);
  const refused = failed(await b.executor.run(other.call, { jobScope: "session-b", approvedBy: "yes" }));
  assert.equal(refused.kind, "not_found");
  assert.equal(refused.field, "job_id");
  const killed = result(await b.executor.run(other.call, { jobScope: "session-a", approvedBy: "yes" }));
  assert.equal(killed.killed_by, "model");
});

Deno.test("jobs: arguments are checked as exec checks them, before anything starts", async () => {
  await using b = await bench("off");
  const call = async (args: Record<string, unknown>) =>
    failed(await b.executor.call("exec", JSON.stringify({ ...args, background: true })));
  assert.equal((await call({ argv: ["ls"], shell: "ls" })).field, "shell");
  assert.equal((await call({})).field, "argv");
  const missing = await call({ argv: ["no-such-program-xyz"] });
  assert.deepEqual([missing.kind, missing.field], ["not_found", "argv"]);
  const outside = await call({ shell: "pwd", cwd: "../" });
  assert.deepEqual([outside.kind, outside.field], ["invalid_args", "cwd"]);
  await Deno.symlink("/etc", join(b.workspace, "out"));
  const link = await call({ shell: "pwd", cwd: "out" });
  assert.deepEqual([link.kind, link.field], ["invalid_args", "cwd"]);
  assert.equal(b.executor.runningJobs, 0);
});

Deno.test("jobs: an executor without jobs (toolgate call) refuses background and the job tool", async () => {
  await using b = await bench("off", { jobs: false });
  const start = failed(
    await b.executor.call("exec", JSON.stringify({ shell: "touch ran", background: true })),
  );
  assert.equal(start.kind, "unavailable");
  assert.equal(start.retryable, false);
  assert.match(start.message, /toolgate call/);
  await new Promise((resolve) => setTimeout(resolve, 200));
  await assert.rejects(Deno.stat(join(b.workspace, "ran")), Deno.errors.NotFound);
  assert.equal(failed(await job(b.executor, { action: "poll", job_id: "job-1" })).kind, "unavailable");
});

Deno.test("jobs: a job outlives its call but not toolgate: the registry's endAll (SIGINT, SIGTERM, SIGHUP) ends it", async () => {
  const registry = new ProcessRegistry(300, () => {});
  await using b = await bench("off", { registry });
  const seconds = uniqueSleep();
  const start = result(
    await b.executor.call("exec", JSON.stringify({ shell: `sleep ${seconds}`, background: true })),
  );
  const [pid] = await waitFor(async () => {
    const found = await pgrep(`sleep ${seconds}`);
    return found.length > 0 ? found : undefined;
  });
  assert.equal(registry.size, 1, "the job's tree is tracked");
  await registry.endAll();
  assert.deepEqual(await waitGone([pid, start.pid], 5000), []);
  assert.equal(result(await job(b.executor, { action: "poll", job_id: start.job_id })).state, "exited");
});

Deno.test("jobs: `toolgate call` refuses a background exec (its job would die with it) and runs nothing", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_jobs_call_" }));
  try {
    const run = await cli([
      "call",
      "exec",
      JSON.stringify({ shell: "sleep 1; touch ran", background: true }),
      "--tools",
      join(REPO, "tools.json"),
      "--sandbox",
      "off",
      "--no-audit",
      "--cwd",
      dir,
    ]);
    assert.equal(run.code, 1, run.stderr);
    const envelope = JSON.parse(run.stdout);
    assert.equal(envelope.kind, "unavailable");
    assert.match(envelope.message, /toolgate call/);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await assert.rejects(Deno.stat(join(dir, "ran")), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

for (const sandbox of MODES) {
  modeTest(
    sandbox,
    `jobs (sandbox ${sandbox}): the agent loop under the toolgate command's least permission set starts, waits for and ends a job`,
    async () => {
      const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_jobs_loop_" }));
      const state = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_jobs_loop_state_" }));
      const endpoint = startChatServer((request, index) => {
        if (index === 0) {
          return callTools([{
            id: "j1",
            name: "exec",
            args: { shell: "echo building; exit 4", background: true },
          }]);
        }
        if (index === 1) {
          const jobId = JSON.parse(toolMessages(request.body).at(-1)!.content).result.job_id;
          return callTools([{ id: "w1", name: "job", args: { action: "wait", job_id: jobId } }]);
        }
        return answer("done");
      });
      try {
        const began = performance.now();
        const run = await runToolgate(
          [
            "--prompt",
            "build",
            "--base-url",
            endpoint.baseUrl,
            "--model",
            "m",
            "--allow-tools",
            "exec",
            "--sandbox",
            sandbox,
            "--locked",
          ],
          dir,
          { XDG_STATE_HOME: state },
        );
        assert.equal(run.code, 0, run.stderr);
        assert.equal(run.stdout, "done\n");
        // A wait that ended early leaves no timer behind to hold toolgate open for its whole timeout_ms.
        assert.ok(performance.now() - began < 15_000, `${Math.round(performance.now() - began)} ms`);
        const [started] = toolMessages(endpoint.requests[1].body);
        const start = JSON.parse(started.content);
        assert.equal(start.ok, true, started.content);
        const waited = toolMessages(endpoint.requests[2].body).at(-1)!;
        const ended = JSON.parse(waited.content).result;
        assert.deepEqual(
          [ended.state, ended.exit_code, ended.tail],
          ["exited", 4, "building"],
          waited.content,
        );
        assert.ok(isWithin(start.result.log_file, state));
      } finally {
        await endpoint.close();
        await Deno.remove(dir, { recursive: true });
        await Deno.remove(state, { recursive: true });
      }
    },
  );
}
