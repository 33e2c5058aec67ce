/**
 * `src/mcp/tasks.ts` following a call's questions (`question_rounds.ts`'s `WaitingCall`), without a server: an
 * answer that comes while the task is between two waits is never lost, and a task whose questions were all
 * answered goes on to its end, whatever the order in which the answers came.
 */
import assert from "node:assert/strict";
import { WaitingCall } from "../../src/mcp/question_rounds.ts";
import { Tasks } from "../../src/mcp/tasks.ts";
import type { StatelessAnswer } from "../../src/mcp/stateless_wire.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";

const CALLER = "http|follow-test";
const ELICITATION = { elicitation: {} };
const LOADED = validateManifest({ tools: [{ name: "asker", command: ["/bin/cat"] }] }, "/tmp/tools.json", {
  allowAbsoluteCommands: true,
});
if (!LOADED.ok) throw new Error(LOADED.errors.join("\n"));
const TOOL = LOADED.manifest.tools[0];

/**
 * A call that asks `keys` of its user at once and, a moment after its last answer (a real tool reads it, then
 * exits), ends with the keys it was answered.
 */
function askingCall(keys: readonly string[]): WaitingCall {
  const call = new WaitingCall();
  const user = call.questions(ELICITATION).user!;
  const signal = call.stop.signal;
  call.result = Promise.all(
    keys.map((id) =>
      user({ message: `Your ${id}?`, requestedSchema: { type: "object", properties: {} } }, {
        id,
        signal,
        tool: TOOL,
      })
    ),
  ).then(async (): Promise<StatelessAnswer> => {
    await new Promise((resolve) => setTimeout(resolve, 50));
    return {
      status: 200,
      response: { jsonrpc: "2.0", id: 1, result: { resultType: "complete", content: [], answered: keys } },
    };
  });
  return call;
}

/** Polls `tasks/get` until the task ends, or fails after `ms`. */
async function ended(tasks: Tasks, id: unknown, ms = 5_000): Promise<Record<string, unknown>> {
  const deadline = performance.now() + ms;
  for (;;) {
    const task = tasks.get(CALLER, id)!;
    if (task.status !== "working" && task.status !== "input_required") return task;
    if (performance.now() > deadline) {
      throw new Error(`the task is still ${task.status}: ${JSON.stringify(task)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Lets the task's follower run until it waits on something that takes a turn of the event loop. */
async function settleMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

Deno.test("tasks: a second answer that comes while the task is between two waits is not lost; the task ends", async () => {
  const tasks = new Tasks();
  const call = askingCall(["name", "confirm"]);
  const { taskId } = tasks.start(CALLER, call);
  // Both questions open, the task shows them.
  for (let i = 0; i < 100 && tasks.get(CALLER, taskId)!.status !== "input_required"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.deepEqual(Object.keys(tasks.get(CALLER, taskId)!.inputRequests as object).sort(), [
    "confirm",
    "name",
  ]);
  // The first answer wakes the follower; the second comes before it has waited again.
  tasks.update(CALLER, taskId, { name: { action: "accept", content: {} } });
  await settleMicrotasks();
  tasks.update(CALLER, taskId, { confirm: { action: "accept", content: {} } });
  const done = await ended(tasks, taskId);
  assert.equal(done.status, "completed", JSON.stringify(done));
  assert.deepEqual((done.result as Record<string, unknown>).answered, ["name", "confirm"]);
  assert.equal(done.inputRequests, undefined);
});

Deno.test("tasks: answers in one update, or one after the other with time between, end the task as well", async () => {
  for (const spaced of [false, true]) {
    const tasks = new Tasks();
    const { taskId } = tasks.start(CALLER, askingCall(["a", "b"]));
    for (let i = 0; i < 100 && tasks.get(CALLER, taskId)!.status !== "input_required"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    if (spaced) {
      tasks.update(CALLER, taskId, { a: { action: "accept", content: {} } });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const partial = tasks.get(CALLER, taskId)!;
      assert.equal(partial.status, "input_required");
      assert.deepEqual(Object.keys(partial.inputRequests as object), ["b"]);
      tasks.update(CALLER, taskId, { b: { action: "accept", content: {} } });
    } else {
      tasks.update(CALLER, taskId, {
        a: { action: "accept", content: {} },
        b: { action: "accept", content: {} },
      });
    }
    assert.equal((await ended(tasks, taskId)).status, "completed");
  }
});
