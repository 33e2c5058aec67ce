/**
 * `worker --console` (issue 29): the console of a pool worker shows the calls it runs as they run, each with its
 * caller (the pool call), its progress and log messages and its stderr, and what confinement and trust are here.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { executorFor, manifestOf, scratch } from "../executor_helpers.ts";
import { CONSOLE_FIXTURE, consoleApi, until } from "../console_helpers.ts";
import { natsServer, poolFor, poolTest, startWorker, writePoolManifest } from "./helpers.ts";

const TOOLS: readonly Record<string, unknown>[] = [{
  name: "report",
  protocol: "toolgate/1",
  permissions: "none",
  schema: { type: "object", properties: { topic: { type: "string" } }, additionalProperties: false },
  command: [join(CONSOLE_FIXTURE, "tools", "bin", "report")],
}];
const MANIFEST = manifestOf(TOOLS);

/** A NATS server, a worker of TOOLS with its console, the console's API, and a caller on the pool. */
async function workerWithConsole() {
  const stack = new AsyncDisposableStack();
  try {
    const server = stack.use(await natsServer());
    const dir = stack.use(await scratch());
    const path = await writePoolManifest(dir.path, TOOLS);
    const worker = stack.use(
      await startWorker(server.url, path, dir.path, "w", { args: ["--console", "0"] }),
    );
    const link = new URL(/console at (http:\/\/\S+)/.exec(worker.stderr())![1]);
    const api = await consoleApi(link.origin, link);
    const pool = stack.use(await poolFor(server, MANIFEST));
    const caller = executorFor(MANIFEST, { pool });
    const moved = stack.move();
    return { api, caller, [Symbol.asyncDispose]: () => moved.disposeAsync() };
  } catch (error) {
    await stack.disposeAsync();
    throw error;
  }
}

poolTest(
  "worker --console: the calls run here, live, with their caller, messages and stderr; confinement and trust",
  async () => {
    await using world = await workerWithConsole();
    const { api, caller } = world;
    const answer = caller.call("report", '{"topic":"pooled"}');
    await until(async () => (await api.get("/api/state")).calls.length === 1, "the call shows while it runs");
    const envelope = await answer;
    assert.equal(envelope.ok, true, JSON.stringify(envelope));
    await until(async () => (await api.get("/api/state")).calls[0].outcome === "ok", "and how it ended");
    const [call] = (await api.get("/api/state")).calls;
    assert.equal(call.tool, "report");
    assert.match(call.caller, /^pool call [0-9a-f-]{8}$/);
    assert.equal(call.args, '{"topic":"pooled"}');
    assert.deepEqual(call.events, ["progress 1/2 half way", "[info] counted the lines"]);
    assert.deepEqual(call.stderr, ["report: warming up", "report: written"]);
    const confinement = await api.get("/api/confinement");
    assert.equal(confinement.mode, "off");
    assert.deepEqual(confinement.profiles.map((p: { tools: string[]; runs: string }) => [p.tools, p.runs]), [[
      ["report"],
      "unconfined",
    ]]);
    const trust = await api.get("/api/trust");
    assert.equal(trust.manifest.state, "needs-none", "a manifest named with --tools is trusted for the run");
    assert.equal(trust.pending, false);
  },
);

poolTest("worker --console: Stop ends a pool call as its user; the caller hears killed_by user", async () => {
  await using world = await workerWithConsole();
  const { api, caller } = world;
  // A report on "slow" sleeps a minute once its two stderr lines are out.
  const answer = caller.call("report", '{"topic":"slow"}');
  let calls: { id: number; outcome: string; stderr: string[]; stoppable: boolean }[] = [];
  await until(
    async () =>
      (calls = (await api.get("/api/state")).calls).some((c: { stderr: string[] }) =>
        c.stderr.includes("report: written")
      ),
    "the call runs",
  );
  assert.equal(calls[0].stoppable, true);
  assert.equal(await api.post("/api/calls/stop", { id: calls[0].id }), 200);
  const envelope = await answer;
  assert.equal(envelope.ok, false, JSON.stringify(envelope));
  assert.equal(envelope.killed_by, "user", JSON.stringify(envelope));
  await until(
    async () => (await api.get("/api/state")).calls[0].killedBy === "user",
    "the row says who stopped it",
  );
});
