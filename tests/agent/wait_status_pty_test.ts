/**
 * While the model answers, the agent loop on a terminal says so (issue 26): `waiting for MODEL at HOST, N s`, redrawn
 * in place on stderr, gone once the answer comes. The loop runs under `script` (util-linux), which gives it a pty,
 * against a loopback endpoint that takes 2.5 s to answer.
 */
import assert from "node:assert/strict";
import { answer, startChatServer } from "./chat_server.ts";
import { cliArgs } from "../support.ts";

const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

Deno.test("agent loop on a terminal: a status line names the model and the endpoint's host while it answers", async () => {
  const endpoint = startChatServer([{ ...answer("Here is the answer."), delayMs: 2500 }]);
  const dir = await Deno.makeTempDir({ prefix: "toolgate_wait_" });
  try {
    const cli = [
      Deno.execPath(),
      ...cliArgs(["--allow-read", "--allow-write", "--allow-env", "--allow-run", "--allow-net"], []),
      "--prompt",
      "say something",
      "--base-url",
      endpoint.baseUrl,
      "--model",
      "test-model",
      "--no-audit",
    ].map(quote).join(" ");
    const env: Record<string, string> = { XDG_STATE_HOME: dir, NO_COLOR: "1" };
    for (const name of ["PATH", "HOME", "DENO_DIR"]) {
      const value = Deno.env.get(name);
      if (value !== undefined) env[name] = value;
    }
    const result = await new Deno.Command("script", {
      args: ["-q", "-e", "-c", `exec ${cli}`, "/dev/null"],
      cwd: dir,
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const output = new TextDecoder().decode(result.stdout).replaceAll("\r", "");
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
