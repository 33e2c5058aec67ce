/**
 * `run --console` on a real terminal (issue 29): the agent loop's approval question is asked on the terminal and
 * in the console at once, and the first answer wins. Under `script` (util-linux, a pty) the CLI asks on the
 * terminal; the first question is answered in the console (the terminal says so, and the next question still
 * reads the terminal: the withdrawn question's read of stdin is taken over, not raced), the second on the
 * terminal (the console's question is withdrawn). The audit lines say who approved: `console`, then `person`.
 */
import assert from "node:assert/strict";
import { answer, callTools, startChatServer } from "./agent/chat_server.ts";
import { cliArgv } from "./agent/run_cli.ts";
import { cliArgs, GRANTS, runProgram } from "./support.ts";
import { consoleApi, trustedWorkspace, until } from "./console_helpers.ts";
import { openTerminal } from "./terminal.ts";

const QUESTION = "[a]lways for report: ";

Deno.test("console and terminal asked at once: the console's answer wins the first question, the terminal's the second", async () => {
  await using ws = await trustedWorkspace();
  await using chat = startChatServer([
    callTools([{ id: "c1", name: "report", args: { topic: "first" } }]),
    callTools([{ id: "c2", name: "report", args: { topic: "second" } }]),
    answer("both reported"),
  ]);
  const cli = cliArgv([
    "run",
    "--prompt",
    "go",
    "--model",
    "m",
    "--base-url",
    chat.baseUrl,
    "--console",
    "0",
  ]);
  {
    await using terminal = openTerminal(cli, { cwd: ws.workspace, env: { ...ws.env, NO_COLOR: "1" } });
    const questions = () => terminal.raw().split(QUESTION).length - 1;
    await until(
      () => /console at http:\/\/\S+/.test(terminal.raw()) && questions() === 1,
      "the link, then the question",
    );
    const link = new URL(/console at (http:\/\/\S+)/.exec(terminal.raw())![1]);
    const api = await consoleApi(link.origin, link);
    const [waiting] = (await api.get("/api/state")).approvals;
    assert.equal(waiting.tool, "report", "the same question waits in the console");
    assert.equal(await api.post("/api/approve", { id: waiting.id, answer: "yes" }), 200);
    await until(
      () => terminal.raw().includes("in the console: approved: report runs this once"),
      "the terminal is told",
    );

    // The second question: answered on the terminal; the console's copy is withdrawn.
    await until(() => questions() === 2, "the second question on the terminal", 30_000);
    await until(async () => (await api.get("/api/state")).approvals.length === 1, "and in the console");
    await terminal.type("y\n");
    await until(
      async () => (await api.get("/api/state")).approvals.length === 0,
      "withdrawn from the console",
    );
    const status = await terminal.status;
    assert.equal(status.code, 0, terminal.raw());
    assert.match(terminal.raw(), /both reported/);
  }
  const log = await runProgram(Deno.execPath(), cliArgs(GRANTS.broad, ["log", "--json"]), {
    cwd: ws.workspace,
    env: ws.env,
    clearEnv: true,
  });
  const records = log.stdout.trim().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(
    records.filter((r) => r.tool === "report").map((r) => [r.outcome, r.approved_by]),
    [["ok", "console"], ["ok", "person"]],
  );
});
