/**
 * A tool's declared `outputSchema` holds wherever its result goes: `call` and the agent loop check a result against
 * it as `serve` does, and a result that breaks it is withheld as an `execution_error` the model can act on.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runToolgate, tempDir, writeFiles } from "./support.ts";
import { answer, callTools, startChatServer, toolMessages } from "./agent/chat_server.ts";
import { runAgentCli, scriptedRunArgs } from "./agent/run_cli.ts";

/** A tool that declares an integer `n` and answers a word: a result that breaks its own declaration. */
const PROJECT = {
  "tools.json": {
    tools: [{
      name: "count",
      description: "Counts the things, e.g. 3.",
      schema: { type: "object", properties: {}, additionalProperties: false },
      outputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      command: ["./tools/bin/count"],
      readOnly: true,
      permissions: "none",
    }],
  },
  "tools/bin/count": '#!/bin/sh\ncat >/dev/null\necho \'{"n":"many"}\'\n',
};

/** What a withheld result says, whoever asked for it. */
function assertWithheld(envelope: Record<string, unknown>): void {
  assert.equal(envelope.ok, false, JSON.stringify(envelope));
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.retryable, false);
  assert.match(
    String(envelope.message),
    /result is withheld: it does not match the outputSchema .*\/n must be integer/,
  );
}

Deno.test("call: a result that breaks the tool's outputSchema is withheld, as serve withholds it", async () => {
  await using dir = await tempDir();
  await using state = await tempDir();
  await writeFiles(dir.path, PROJECT);
  await Deno.chmod(join(dir.path, "tools/bin/count"), 0o755);
  const run = await runToolgate(
    ["call", "count", "{}", "--tools", join(dir.path, "tools.json"), "--sandbox", "off"],
    dir.path,
    { XDG_STATE_HOME: state.path },
  );
  assert.equal(run.code, 1, run.stderr);
  assertWithheld(JSON.parse(run.stdout));
});

Deno.test("agent loop: a result that breaks the tool's outputSchema reaches the model as a failure it can act on", async () => {
  await using dir = await tempDir();
  await using state = await tempDir();
  await writeFiles(dir.path, PROJECT);
  await Deno.chmod(join(dir.path, "tools/bin/count"), 0o755);
  await using server = startChatServer([callTools([{ id: "c1", name: "count", args: {} }]), answer("done")]);
  const run = await runAgentCli(scriptedRunArgs(server.baseUrl, join(dir.path, "tools.json"), dir.path), {
    env: { XDG_STATE_HOME: state.path },
    cwd: dir.path,
  });
  assert.equal(run.code, 0, run.stderr);
  const [message] = toolMessages(server.requests[1].body);
  assert.equal(message.tool_call_id, "c1");
  assertWithheld(JSON.parse(message.content));
});
