/**
 * The server's voice reaches the client: an upstream MCP server's log messages (at the level the client set, which
 * the server is asked for too) and its own progress notifications, with their messages, reach the MCP client of
 * `toolgate serve` on the call that caused them, redacted of the server's secrets, and toolgate's own heartbeat does
 * not get in their way. Shown with the gateway tests' own server (tests/fixtures/gateway/shifting_server.mjs) and
 * with the real server-everything (`toggle-simulated-logging`, `trigger-long-running-operation`).
 *
 * @module
 */
import assert from "node:assert/strict";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { LoggingMessageNotificationSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { callWithProgress, EVERYTHING_STDIO, nodeServersMissing, project } from "./gateway_support.ts";
import { consoleApi, spawnConsole, until } from "./console_helpers.ts";
import { answer, callTools, startChatServer } from "./agent/chat_server.ts";
import { denoDir, hostEnv, launcherArgv } from "./support.ts";
import { NO_PTY, runInPty } from "./security/pty.ts";
import { facilityTest } from "./requires.ts";
import { serveClient, shiftingProject } from "./gateway_shifting.ts";

const ignore = await nodeServersMissing("gateway_voice_test") !== undefined;

/** A log message as the client got it, and when (ms since the epoch). */
interface Heard {
  readonly level: string;
  readonly logger?: string;
  readonly data: unknown;
  readonly at: number;
}

Deno.test({
  name:
    "voice: a server's log messages at the client's level and its progress messages reach serve's client, redacted",
  ignore,
  async fn() {
    const token = { SHIFT_TOKEN: "shift-s3cret-value" };
    await using p = await shiftingProject([], { secrets: ["SHIFT_TOKEN"] }, token);
    const client = await serveClient(p.dir.path, { ...p.env, ...token }, ["--allow-tools", "mcp__own__*"]);
    try {
      const heard: Heard[] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
        heard.push({ ...notification.params, at: Date.now() });
      });
      await client.setLoggingLevel("warning");
      const { answer, progress } = await callWithProgress(client, "mcp__own__report", {});
      assert.equal(answer.isError, undefined, JSON.stringify(answer));

      // The client asked for warning and up: the server was asked for it, and only those reached the client.
      const levels = (await p.received()).filter((entry) => entry.method === "logging/setLevel");
      assert.deepEqual(levels.map((entry) => entry.level), ["warning"]);
      assert.deepEqual(heard.map((log) => log.level), ["warning", "error", "critical", "alert", "emergency"]);
      for (const log of heard) {
        assert.equal(log.logger, "own/reporter");
        assert.match(String(log.data), new RegExp(`^${log.level} from the server \\[REDACTED`));
      }
      // The server's own progress, its messages kept (its secret masked), and no heartbeat of toolgate's between.
      assert.deepEqual(progress.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]]);
      assert.match(String(progress[0].message), /^step 1 of 3 \[REDACTED/);
      assert.ok(!JSON.stringify([heard, progress]).includes(token.SHIFT_TOKEN));
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name: "voice: server-everything's simulated logs and long-running progress reach a client of serve",
  ignore,
  async fn() {
    await using p = await project({ ev: EVERYTHING_STDIO });
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 0, trust.stderr);
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__ev__*"]);
    try {
      const heard: Heard[] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
        heard.push({ ...notification.params, at: Date.now() });
      });
      await client.setLoggingLevel("debug");
      const toggled = await client.callTool({ name: "mcp__ev__toggle-simulated-logging", arguments: {} });
      assert.equal(toggled.isError, undefined, JSON.stringify(toggled));
      // It logs every 5 s from now on: an 8-second call sees at least one, and its own four steps.
      const started = Date.now();
      const { answer: long, progress } = await callWithProgress(
        client,
        "mcp__ev__trigger-long-running-operation",
        { duration: 8, steps: 4 },
      );
      const ended = Date.now();
      assert.equal(long.isError, undefined, JSON.stringify(long));
      assert.deepEqual(progress.map((p) => [p.progress, p.total]), [[1, 4], [2, 4], [3, 4], [4, 4]]);
      assert.ok(progress.every((p) => !/running|elapsed=/.test(p.message ?? "")), JSON.stringify(progress));
      const during = heard.filter((log) => log.at >= started && log.at <= ended);
      assert.ok(during.length >= 1, `no log message during the call: ${JSON.stringify(heard)}`);
      // Its simulated messages name no logger (the server's name alone); what it says of the roots toolgate gave
      // it names its own (`ev/everything-server`).
      for (const log of heard) {
        if (log.logger === "ev") assert.match(String(log.data), /-level message|level-message/);
        else assert.equal(log.logger, "ev/everything-server", JSON.stringify(log));
      }
      assert.ok(heard.some((log) => log.logger === "ev"), JSON.stringify(heard));
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name:
    "voice: in the agent loop, a server's log and progress messages reach the console's view of the call, redacted",
  ignore,
  sanitizeResources: false,
  async fn() {
    const token = { SHIFT_TOKEN: "shift-s3cret-value" };
    await using p = await shiftingProject([], { secrets: ["SHIFT_TOKEN"] }, token);
    // The model calls report (allowed), then echo, which waits in the console while the view is read.
    await using chat = startChatServer([
      callTools([{ id: "c1", name: "mcp__own__report", args: {} }]),
      callTools([{ id: "c2", name: "mcp__own__echo", args: { text: "later" } }]),
      answer("done"),
    ]);
    const env = {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      DENO_DIR: denoDir(),
      NO_COLOR: "1",
      ...p.env,
      ...token,
    };
    await using run = await spawnConsole(
      [
        "run",
        "--prompt",
        "go",
        "--model",
        "m",
        "--base-url",
        chat.baseUrl,
        "--console",
        "0",
        "--allow-tools",
        "mcp__own__report",
      ],
      { cwd: p.dir.path, env },
    );
    const api = await consoleApi(run.origin, run.link);
    await until(async () => (await api.get("/api/state")).approvals.length === 1, "the second call waits");
    const calls = (await api.get("/api/state")).calls as { tool: string; events: string[] }[];
    const report = calls.find((call) => call.tool === "mcp__own__report");
    assert.ok(report, JSON.stringify(calls));
    const shown = report.events.join("\n");
    assert.match(shown, /^\[warning\] own\/reporter: warning from the server \[REDACTED/m);
    assert.match(shown, /^\[debug\] own\/reporter: debug from the server/m);
    assert.match(shown, /^progress 3\/3 step 3 of 3 \[REDACTED/m);
    assert.ok(!shown.includes(token.SHIFT_TOKEN), shown);
  },
});

/** A test that needs a pty besides the gateway's servers: ignored, as the file's others, where the servers cannot run. */
function ptyTest(options: Omit<Deno.TestDefinition, "ignore">): void {
  if (ignore) Deno.test({ ...options, ignore });
  else facilityTest("pty", NO_PTY, options);
}

ptyTest({
  name: "voice: on a terminal, call's progress line shows the server's log and progress messages, redacted",
  fn: async () => {
    const token = { SHIFT_TOKEN: "shift-s3cret-value" };
    await using p = await shiftingProject([], { secrets: ["SHIFT_TOKEN"] }, token);
    const run = await runInPty(
      launcherArgv(["call", "mcp__own__report", '{"pauseMs":700}']),
      { env: hostEnv({ ...p.env, ...token, TERM: "xterm" }), cwd: p.dir.path, timeoutMs: 90_000 },
    );
    const text = run.text;
    assert.equal(run.code, 0, text);
    assert.match(text, /running mcp__own__report \S+ emergency from the server \[REDACTED/, text);
    assert.match(text, /running mcp__own__report \S+ 33% step 1 of 3 \[REDACTED/, text);
    assert.match(text, /running mcp__own__report \S+ 66% step 2 of 3 \[REDACTED/, text);
    assert.ok(!text.includes(token.SHIFT_TOKEN), text);
  },
});
