/**
 * The approval question on a real terminal (issue 11, item 2): the CLI runs under `script` (util-linux), which
 * gives it a pty, so it asks. The model sends exec's arguments with a long `env` before `argv`: argv must still
 * show first and whole, the env value folded whole with its length, an escape sequence in argv visible and inert,
 * and the person's "n" must keep the program from running.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { answer, callTools, startChatServer, toolMessages } from "./chat_server.ts";
import { cliArgv, scriptedRunArgs } from "./run_cli.ts";
import { hostEnv, REPO } from "../support.ts";
import { openTerminal } from "../terminal.ts";

Deno.test("approval on a pty: exec's argv shows first and whole although the model sent a long env before it", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_pty_" }));
  const state = await Deno.makeTempDir({ prefix: "toolgate_pty_state_" });
  const noise = "N".repeat(3000);
  const argv = ["sh", "-c", "echo pwned > pwned.txt # \x1b]0;pwned\x07"];
  // The arguments as the model wrote them, in its key order: env first.
  const argsText = JSON.stringify({ env: [{ name: "NOISE", value: noise }], argv });
  const endpoint = startChatServer([
    callTools([{ id: "x1", name: "exec", args: argsText }]),
    answer("Done."),
  ]);
  const cli = cliArgv(scriptedRunArgs(endpoint.baseUrl, join(REPO, "tools.json"), dir, "tidy up"));
  let answered = false;
  const terminal = openTerminal(cli, {
    cwd: dir,
    env: hostEnv({ XDG_STATE_HOME: state }),
    killAfterMs: 60_000,
    respond: (shown) => {
      if (answered || !shown.includes("[a]lways for exec: ")) return undefined;
      answered = true;
      return "n\n";
    },
  });
  try {
    const status = await terminal.status;
    const text = terminal.output();
    assert.ok(answered, `the question never came:\n${text}`);
    assert.equal(status.code, 0, text);

    // What the terminal shows: a line cleared and drawn over (the status line while the model answers) is gone.
    const lines = text.split("\n").map((line) => line.split("\x1b[2K").at(-1) ?? "");
    const header = lines.findIndex((line) => line.startsWith("toolgate: the model asks to run exec"));
    assert.ok(header >= 0, text);
    // argv right after the tool's name, whole, its escape sequence written out rather than sent to the terminal.
    assert.equal(
      lines[header + 1],
      `  argv: ["sh","-c","echo pwned > pwned.txt # \\u001b]0;pwned\\u0007"]`,
    );
    assert.ok(!text.includes("\x1b]0;pwned"), "the raw escape sequence reached the terminal");
    // The long env value comes after, folded but whole, with its length.
    const envText = JSON.stringify([{ name: "NOISE", value: noise }]);
    assert.match(lines[header + 2], /^ {2}env \(3,029 characters, in \d+ lines\):$/);
    const folded: string[] = [];
    for (const line of lines.slice(header + 3)) {
      if (!line.startsWith("    ")) break;
      folded.push(line.slice(4));
    }
    assert.equal(folded.join(""), envText);
    assert.ok(folded.every((line) => line.length <= 76), "every line fits the terminal");
    // The prompt says to end the answer with Enter, and the decision stays on screen.
    assert.match(text, /Run exec\? \(a letter, then Enter\) \[y\]es \/ \[n\]o \/ \[a\]lways for exec: /);
    assert.match(text, /\ntoolgate: denied: exec does not run; the model is told so\n/);
    // The person said no: nothing ran, and the model hears user_denied.
    await assert.rejects(Deno.stat(join(dir, "pwned.txt")), Deno.errors.NotFound);
    const [result] = toolMessages(endpoint.requests[1].body);
    assert.equal(JSON.parse(result.content).kind, "user_denied");
  } finally {
    await terminal[Symbol.asyncDispose]();
    await endpoint.close();
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(state, { recursive: true });
  }
});
