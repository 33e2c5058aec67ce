/**
 * The agent loop with `--executor`: the model gets the tool messages a local run gives it, and the approval rules
 * hold on the caller (a call nobody approved never reaches the pool).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { answer, callTools, startChatServer, toolMessages } from "../agent/chat_server.ts";
import { runAgentCli } from "../agent/run_cli.ts";
import { scratch } from "../executor_helpers.ts";
import {
  natsServer,
  POOL_ENV,
  POOL_TOOLS,
  poolTest,
  runsIn,
  startWorker,
  writePoolManifest,
} from "./helpers.ts";

const SCRIPT = [
  callTools([
    { id: "c1", name: "echo", args: { n: 7, text: "hi" } },
    { id: "c2", name: "fail", args: {} },
    { id: "c3", name: "slow_write", args: {} },
    { id: "c4", name: "hang", args: {} },
  ]),
  answer("Done."),
];

poolTest(
  "agent loop --executor: the model sees the tool messages of a local run; approval holds on the caller",
  async () => {
    await using server = await natsServer();
    await using dir = await scratch();
    await using workerDir = await scratch();
    const path = await writePoolManifest(dir.path, POOL_TOOLS);
    await using _worker = await startWorker(server.url, path, workerDir.path, "a");
    const messages: { content: string }[][] = [];
    for (const executor of [[], ["--executor", server.url]]) {
      await using chat = startChatServer(SCRIPT);
      const run = await runAgentCli([
        ...["--prompt", "hi", "--base-url", chat.baseUrl, "--model", "test-model"],
        ...["--tools", path, "--allow-absolute-commands", "--allow-tools", "fail,slow_write"],
        ...["--sandbox", "off", "--no-audit", "--cwd", dir.path, ...executor],
      ], { cwd: dir.path, env: { ...POOL_ENV } });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, "Done.\n");
      messages.push(toolMessages(chat.requests[1].body));
    }
    assert.deepEqual(messages[1], messages[0]);
    const [, fail, write, hang] = messages[1];
    assert.match(fail.content, /"kind":"execution_error"/);
    assert.equal(write.content, '{"ok":true,"result":{"slept":3},"tool":"slow_write"}');
    assert.match(hang.content, /"kind":"rejected"/, "nobody approved it");
    // slow_write ran once here (the local run) and once on the worker (in its own folder); hang nowhere.
    assert.equal((await runsIn(dir.path)).length, 1);
    assert.equal((await runsIn(workerDir.path)).length, 1);
    for (const folder of [dir.path, workerDir.path]) {
      await assert.rejects(
        Deno.stat(join(folder, "pids")),
        Deno.errors.NotFound,
        "a call nobody approved ran",
      );
    }
  },
);
