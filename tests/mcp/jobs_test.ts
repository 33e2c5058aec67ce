/**
 * `toolgate serve` and long-running work (issue 14): a background job started over MCP answers at once, is polled
 * and killed through the `job` tool, and never outlives the server (SIGTERM: the registry ends it; SIGKILL: bwrap's
 * --die-with-parent does); a client's cancellation is a person's stop, `killed_by: "user"` (MCP drops the answer of
 * a cancelled request: the audit line keeps it).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { auditDirFor } from "../../src/state/state.ts";
import { alivePids, readAudit } from "../executor_helpers.ts";
import { envelopeOf } from "./helpers.ts";
import { cliArgs, REPO } from "../support.ts";
import { pgrep, uniqueSleep as uniqueSleepFrom, until } from "../processes.ts";
import { confinedTest } from "../security/helpers.ts";

/** A sleep length no other process uses: pgrep finds exactly that process, inside the sandbox or not. */
const uniqueSleep = () => uniqueSleepFrom(1000);

interface Served extends AsyncDisposable {
  readonly client: Client;
  /** toolgate's own pid. */
  readonly pid: number;
  readonly workspace: string;
  readonly state: string;
}

/** `toolgate serve` over stdio with the built-in belt, confined, every call approved (--yes), the audit log on. */
async function serveBelt(): Promise<Served> {
  const workspace = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_mcp_jobs_" }));
  const state = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_mcp_jobs_state_" }));
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      ...cliArgs(["--allow-read", "--allow-write", "--allow-env", "--allow-run"], []),
      "serve",
      "--tools",
      join(REPO, "tools.json"),
      "--sandbox",
      "require",
      "--yes",
      "--kill-grace",
      "0.5",
      "--cwd",
      workspace,
    ],
    cwd: REPO,
    env: { ...getDefaultEnvironment(), NO_COLOR: "1", XDG_STATE_HOME: state },
    stderr: "pipe",
  });
  const client = new Client({ name: "toolgate-tests", version: "1.0.0" });
  await client.connect(transport);
  const pid = transport.pid!;
  return {
    client,
    pid,
    workspace,
    state,
    async [Symbol.asyncDispose]() {
      await client.close().catch(() => {});
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // Gone.
      }
      await Deno.remove(workspace, { recursive: true });
      await Deno.remove(state, { recursive: true });
    },
  };
}

async function startJob(served: Served, seconds: string): Promise<{ job_id: string; pid: number }> {
  const started = envelopeOf(
    await served.client.callTool({
      name: "exec",
      arguments: { shell: `sleep ${seconds}`, background: true },
    }),
  );
  assert.equal(started.ok, true, JSON.stringify(started));
  await until(async () => (await pgrep(`sleep ${seconds}`)).length === 1, "the job runs");
  return started.result as { job_id: string; pid: number };
}

for (const signal of ["SIGTERM", "SIGKILL"] as const) {
  confinedTest(`serve: a background job does not outlive toolgate (${signal})`, async () => {
    await using served = await serveBelt();
    const seconds = uniqueSleep();
    const job = await startJob(served, seconds);
    const poll = envelopeOf(
      await served.client.callTool({ name: "job", arguments: { action: "poll", job_id: job.job_id } }),
    );
    assert.equal((poll.result as { state: string }).state, "running");
    try {
      Deno.kill(served.pid, signal);
      await until(async () => (await alivePids([served.pid])).length === 0, "toolgate exits");
      await until(async () => (await pgrep(`sleep ${seconds}`)).length === 0, "the job's tree ends", 5000);
      assert.deepEqual(await alivePids([job.pid]), []);
    } finally {
      for (const pid of await pgrep(`sleep ${seconds}`)) Deno.kill(pid, "SIGKILL");
    }
  });
}

confinedTest(
  "serve: kill through the job tool ends the job's tree; a client's cancellation is killed_by user",
  async () => {
    await using served = await serveBelt();
    const seconds = uniqueSleep();
    const job = await startJob(served, seconds);
    const killed = envelopeOf(
      await served.client.callTool({ name: "job", arguments: { action: "kill", job_id: job.job_id } }),
    );
    const result = killed.result as { state: string; killed_by: string };
    assert.equal(result.state, "killed");
    // Approved by --yes, not by a person asked: the model's kill.
    assert.equal(result.killed_by, "model");
    assert.deepEqual(await pgrep(`sleep ${seconds}`), []);

    // A foreground call the client cancels: its tree ends, and the envelope (dropped by MCP) says who stopped it.
    const call = uniqueSleep();
    const controller = new AbortController();
    const pending = served.client.callTool(
      { name: "exec", arguments: { shell: `sleep ${call}` } },
      undefined,
      { signal: controller.signal },
    ).then(() => "answered", () => "cancelled");
    await until(async () => (await pgrep(`sleep ${call}`)).length === 1, "the call runs");
    controller.abort();
    assert.equal(await pending, "cancelled");
    await until(async () => (await pgrep(`sleep ${call}`)).length === 0, "the call's tree ends", 5000);
    const audit = auditDirFor({ XDG_STATE_HOME: served.state }, served.workspace);
    let stopped: Record<string, unknown> | undefined;
    await until(async () => {
      stopped = (await readAudit(audit)).find((r) => r.tool === "exec" && r.killed_by === "user");
      return stopped !== undefined;
    }, "the audit line of the cancelled call");
    assert.equal(stopped!.outcome, "execution_error");
    assert.equal(stopped!.cancelled, true);
    // The job's kill is in the log too, as the model's.
    const records = await readAudit(audit);
    assert.ok(
      records.some((r) => r.job === job.job_id && r.job_state === "killed" && r.killed_by === "model"),
    );
  },
);

confinedTest(
  "serve: a stdio client that disconnects takes its session's jobs with it (killed_by session)",
  async () => {
    await using served = await serveBelt();
    const seconds = uniqueSleep();
    const job = await startJob(served, seconds);
    try {
      // The host goes away: stdin ends, the session closes, and its job's tree ends with it.
      await served.client.close();
      await until(async () => (await alivePids([served.pid])).length === 0, "toolgate exits");
      assert.deepEqual(await pgrep(`sleep ${seconds}`), []);
      assert.deepEqual(await alivePids([job.pid]), []);
      const audit = auditDirFor({ XDG_STATE_HOME: served.state }, served.workspace);
      const end = (await readAudit(audit)).find((r) => r.job === job.job_id && r.job_state !== undefined);
      assert.equal(end?.job_state, "killed", JSON.stringify(end));
      assert.equal(end?.killed_by, "session");
    } finally {
      for (const pid of await pgrep(`sleep ${seconds}`)) Deno.kill(pid, "SIGKILL");
    }
  },
);
