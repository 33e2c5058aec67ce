/**
 * The stop button on a real terminal (issue 14): the agent loop runs under `script` (util-linux), which gives it a
 * pty, against a scripted endpoint, with the belt's `exec` confined by bubblewrap. A Ctrl-C typed on the pty stops
 * the call in flight (its tree ends) and answers it `killed_by: "user"`, and the loop goes on to the model; two
 * Ctrl-C within 2 s end toolgate (exit 130) with every tree, a background job's included. A running call shows as
 * one live line with its limit (`running exec 1.2s/120s`), and no standing heartbeat line (issue 26).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { answer, callTools, type Reply, startChatServer, toolMessages } from "./chat_server.ts";
import { confinedTest } from "../security/helpers.ts";
import { cliArgs, GRANTS, hostEnv, REPO } from "../support.ts";
import { killAll, pgrep, sleep, uniqueSleep as uniqueSleepFrom, until } from "../processes.ts";
import { openTerminal, type Terminal } from "../terminal.ts";
import { cliArgv } from "./run_cli.ts";

/** A sleep length no other process uses: pgrep finds exactly that process, inside the sandbox or not. */
const uniqueSleep = () => uniqueSleepFrom(900);

/** The agent loop on a pty against the endpoint at `baseUrl`, every call approved, the belt confined or not. */
function agentOnPty(
  baseUrl: string,
  dir: string,
  state: string,
  sandbox: "require" | "off" = "require",
): Terminal {
  const cli = cliArgv([
    "--prompt",
    "build it",
    "--base-url",
    baseUrl,
    "--model",
    "test-model",
    "--tools",
    join(REPO, "tools.json"),
    "--sandbox",
    sandbox,
    "--yes",
    "--kill-grace",
    "0.5",
    "--cwd",
    dir,
  ]);
  return openTerminal(cli, { cwd: dir, env: hostEnv({ XDG_STATE_HOME: state }) });
}

function ptyTest(name: string, fn: (dir: string, state: string) => Promise<void>): void {
  confinedTest(name, async () => {
    const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_stop_" }));
    const state = await Deno.makeTempDir({ prefix: "toolgate_stop_state_" });
    try {
      await fn(dir, state);
    } finally {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(state, { recursive: true });
    }
  });
}

// Confined, the terminal's Ctrl-C also reaches bwrap (it shares toolgate's process group); unconfined, the call
// leads a session of its own and only the stop button ends it: both must answer killed_by user.
for (const sandbox of ["require", "off"] as const) {
  ptyTest(
    `stop button (sandbox ${sandbox}): the first Ctrl-C stops the call in flight (killed_by user) and the loop goes on to the model`,
    async (dir, state) => {
      const seconds = uniqueSleep();
      const script: Reply[] = [
        callTools([{ id: "x1", name: "exec", args: { shell: `sleep ${seconds}`, timeout_ms: 120_000 } }]),
        answer("Stopped, as you asked."),
      ];
      const endpoint = startChatServer(script);
      await using terminal = agentOnPty(endpoint.baseUrl, dir, state, sandbox);
      try {
        await until(async () => (await pgrep(`sleep ${seconds}`)).length === 1, "the tool runs");
        // The live line: the call, its elapsed time and exec's own limit.
        await until(() => /running exec \d+\.\ds\/120s/.test(terminal.output()), "the call's live line");
        await terminal.type("\x03");
        const status = await terminal.status;
        const output = terminal.output();
        assert.equal(status.code, 0, output);
        assert.match(output, /toolgate: stopping 1 call \(Ctrl-C again within 2 s quits\)/);
        assert.match(
          output,
          /Stopped, as you asked\./,
          "the loop went on to the model and printed its answer",
        );
        assert.doesNotMatch(output, /elapsed=/, "no standing heartbeat line on a terminal");
        assert.equal(endpoint.requests.length, 2);
        const [message] = toolMessages(endpoint.requests[1].body);
        const envelope = JSON.parse(message.content);
        assert.equal(envelope.ok, false);
        assert.equal(envelope.kind, "execution_error");
        assert.equal(envelope.killed_by, "user");
        assert.equal(envelope.retryable, false);
        assert.deepEqual(await pgrep(`sleep ${seconds}`), [], "the call's tree is gone");
      } finally {
        killAll(await pgrep(`sleep ${seconds}`));
        await endpoint.close();
      }
    },
  );
}

ptyTest(
  "stop button: two Ctrl-C within 2 s end toolgate (exit 130), every tree with it, a background job's too",
  async (dir, state) => {
    const job = uniqueSleep();
    const call = uniqueSleep();
    const endpoint = startChatServer([
      callTools([{ id: "j1", name: "exec", args: { shell: `sleep ${job}`, background: true } }]),
      callTools([{ id: "x2", name: "exec", args: { shell: `sleep ${call}` } }]),
      // After the first press the loop asks the model again: the answer is slow, so that the second press comes
      // while toolgate waits for it (the stop button is not armed then; the registry still takes the press).
      { ...answer("never printed"), delayMs: 3000 },
    ]);
    await using terminal = agentOnPty(endpoint.baseUrl, dir, state);
    try {
      await until(async () => (await pgrep(`sleep ${call}`)).length === 1, "the call runs");
      assert.equal((await pgrep(`sleep ${job}`)).length, 1, "the background job runs beside it");
      // The job answered at once, and the loop went on to the model with it.
      const [started] = toolMessages(endpoint.requests[1].body);
      assert.equal(JSON.parse(started.content).result.background, true);
      await terminal.type("\x03");
      await until(() => terminal.output().includes("toolgate: stopping 1 call"), "the first press");
      await sleep(200);
      await terminal.type("\x03");
      const status = await terminal.status;
      assert.equal(status.code, 130, terminal.output());
      assert.deepEqual(await pgrep(`sleep ${call}`), [], "the call's tree is gone");
      assert.deepEqual(
        await pgrep(`sleep ${job}`),
        [],
        "the job's tree is gone: jobs never outlive toolgate",
      );
      assert.doesNotMatch(terminal.output(), /never printed/, "toolgate quit before the model's answer");
    } finally {
      killAll([...await pgrep(`sleep ${job}`), ...await pgrep(`sleep ${call}`)]);
      await endpoint.close();
    }
  },
);

Deno.test("progress: `toolgate call` on a terminal shows one live line with the limit (`running exec 1.2s/5s`), no standing heartbeat line", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_beat_" }));
  const state = await Deno.makeTempDir({ prefix: "toolgate_beat_state_" });
  try {
    await using terminal = openTerminal([
      Deno.execPath(),
      ...cliArgs(GRANTS.broad, [
        "call",
        "exec",
        JSON.stringify({ shell: "sleep 1.5; echo built", timeout_ms: 5000 }),
        "--tools",
        join(REPO, "tools.json"),
        "--sandbox",
        "off",
        "--cwd",
        dir,
      ]),
    ], { cwd: dir, env: hostEnv({ XDG_STATE_HOME: state }) });
    const status = await terminal.status;
    const raw = terminal.raw();
    const text = terminal.output();
    assert.equal(status.code, 0, text);
    // Issue 26: the live line, redrawn in place, is the only sign of a running call, and carries its limit.
    assert.match(text, /running exec \d+\.\ds\/5s/, "the live line shows the call's limit");
    assert.doesNotMatch(text, /elapsed=/, "no heartbeat line");
    // Nothing about the running call stays: each drawing is erased by the next, and only the finished line ends.
    assert.doesNotMatch(
      raw,
      // deno-lint-ignore no-control-regex
      /running exec[^\r\n\x1b]*\r?\n/,
      `a standing line about the running call:\n${text}`,
    );
    assert.match(text, /✓ exec \d+\.\ds ok\n/, "the finished call leaves its one line");
    assert.match(text, /"stdout":"built\\n"/, "the envelope still comes whole");
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(state, { recursive: true });
  }
});
