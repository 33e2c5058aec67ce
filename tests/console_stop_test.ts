/**
 * The console's Stop of a call in flight (not a background job): the agent loop's call ends as its user stopped
 * it (`killed_by: "user"`, `cancelled: true`), the model is told so, and a call that ended cannot be stopped.
 * Stopping a call is a POST like any other of the console's: without the session's CSRF token, or from another
 * Origin, it is refused and the call runs on.
 */
import assert from "node:assert/strict";
import { ConsoleHub } from "../src/console/hub.ts";
import { success } from "../src/contract.ts";
import { consoleApi, spawnConsole, trustedWorkspace, until } from "./console_helpers.ts";
import { answer, callTools, startChatServer } from "./agent/chat_server.ts";

Deno.test("console hub: a call its caller can stop shows Stop while it runs; Stop stops it once; an ended call cannot be", () => {
  const hub = new ConsoleHub((text) => text);
  let stops = 0;
  const seen = hub.started({ tool: "t", caller: "model", args: {}, stop: () => stops++ });
  const other = hub.started({ tool: "u", caller: "model", args: {} });
  assert.deepEqual(hub.state().calls.map((call) => call.stoppable), [true, false]);
  const [first, second] = hub.state().calls.map((call) => call.id);
  assert.equal(hub.stopCall(second), false, "a call its caller cannot stop");
  assert.equal(hub.stopCall(first), true);
  assert.equal(hub.stopCall(first), false, "stopped once");
  assert.equal(hub.state().calls[0].stoppable, false, "no Stop once stopped, before the call has ended");
  assert.equal(stops, 1);
  seen.ended(success(null));
  other.ended(success(null));
  assert.deepEqual(hub.state().calls.map((call) => call.stoppable), [false, false]);
  const late = hub.started({ tool: "t", caller: "model", args: {}, stop: () => stops++ });
  late.ended(success(null));
  assert.equal(hub.stopCall(hub.state().calls[2].id), false, "a call that ended");
  assert.equal(stops, 1);
  hub.close();
});

Deno.test("console: Stop ends the agent loop's running call as its user, and the model is told; a forged stop is refused", async () => {
  await using ws = await trustedWorkspace();
  await using chat = startChatServer([
    callTools([{ id: "c1", name: "report", args: { topic: "slow" } }]),
    answer("stopped, as asked"),
  ]);
  await using run = await spawnConsole(
    ["run", "--prompt", "report", "--model", "m", "--base-url", chat.baseUrl, "--console", "0"],
    { cwd: ws.workspace, env: ws.env },
  );
  const api = await consoleApi(run.origin, run.link);
  // No terminal: the call waits for the console's answer.
  let state = await api.get("/api/state");
  await until(async () => (state = await api.get("/api/state")).approvals.length === 1, "the call waits");
  assert.equal(await api.post("/api/approve", { id: state.approvals[0].id, answer: "yes" }), 200);
  // Once its second stderr line shows, the tool is past its first lines and in its long sleep.
  await until(
    async () =>
      (state = await api.get("/api/state")).calls.some((c: { outcome: string; stderr: string[] }) =>
        c.outcome === "running" && c.stderr.includes("report: written")
      ),
    "the call runs",
  );
  const call = state.calls.find((c: { outcome: string }) => c.outcome === "running");
  assert.equal(call.stoppable, true);
  // A page of another site cannot stop it: a POST without the session's CSRF token, or from another Origin.
  assert.equal(await api.post("/api/calls/stop", { id: call.id }, { "x-csrf-token": "" }), 403);
  assert.equal(await api.post("/api/calls/stop", { id: call.id }, { origin: "https://evil.example" }), 403);
  assert.equal(await api.post("/api/calls/stop", { id: "1" }), 400, "an id is a number");
  assert.equal(
    (await api.get("/api/state")).calls.find((c: { id: number }) => c.id === call.id).outcome,
    "running",
  );
  assert.equal(await api.post("/api/calls/stop", { id: call.id }), 200);
  assert.equal(await run.exited, 0, run.stderr());
  assert.match(run.stdout(), /stopped, as asked/);
  const told = JSON.parse(chat.requests[1].body.messages.at(-1).content);
  assert.equal(told.ok, false, JSON.stringify(told));
  assert.equal(told.killed_by, "user", JSON.stringify(told));
  assert.equal(told.cancelled, true, JSON.stringify(told));
});
