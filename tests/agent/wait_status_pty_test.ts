/**
 * While the model answers, the agent loop on a terminal says so (issue 26): `waiting for MODEL at HOST, N s`, redrawn
 * in place on stderr, gone once the answer comes. The loop runs under `script` (util-linux), which gives it a pty,
 * against a loopback endpoint that takes 2.5 s to answer.
 */
import assert from "node:assert/strict";
import { answer, startChatServer } from "./chat_server.ts";
import { hostEnv } from "../support.ts";
import { openTerminal } from "../terminal.ts";
import { cliArgv } from "./run_cli.ts";

Deno.test("agent loop on a terminal: a status line names the model and the endpoint's host while it answers", async () => {
  const endpoint = startChatServer([{ ...answer("Here is the answer."), delayMs: 2500 }]);
  const dir = await Deno.makeTempDir({ prefix: "toolgate_wait_" });
  try {
    const cli = cliArgv([
      "--prompt",
      "say something",
      "--base-url",
      endpoint.baseUrl,
      "--model",
      "test-model",
      "--no-audit",
    ]);
    await using terminal = openTerminal(cli, { cwd: dir, env: hostEnv({ XDG_STATE_HOME: dir }) });
    const result = await terminal.status;
    const output = terminal.output();
    assert.equal(result.code, 0, output);
    const host = new URL(endpoint.baseUrl).host;
    assert.match(output, new RegExp(`waiting for test-model at ${host.replaceAll(".", "\\.")}, 0 s`), output);
    assert.match(output, new RegExp(`waiting for test-model at ${host.replaceAll(".", "\\.")}, 2 s`), output);
    // The wait ends before the answer is printed.
    assert.ok(output.lastIndexOf("waiting for") < output.indexOf("Here is the answer."), output);
  } finally {
    await endpoint.close();
    await Deno.remove(dir, { recursive: true });
  }
});
