/**
 * The agent loop on a terminal (issue 26): one progress line per running tool, each with its timer and the last
 * line its tool wrote to stderr. Two calls of a concurrent tool run at once in one turn; the loop runs on a real
 * pty against a scripted loopback endpoint.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { answer, callTools, startChatServer } from "./chat_server.ts";
import { hostEnv, tempDir, writeFiles } from "../support.ts";
import { cliArgv } from "./run_cli.ts";
import { NO_PTY, runInPty } from "../security/pty.ts";
import { facilityTest } from "../requires.ts";

/** Reads its label from the arguments, says how far it is on stderr, waits, answers. */
const TOOL = [
  "#!/bin/sh",
  'label=$(sed -n \'s/.*"label":"\\([a-z]*\\)".*/\\1/p\')',
  'printf "%s: step 1/2\\n" "$label" >&2',
  "sleep 2",
  'printf "%s: step 2/2\\n" "$label" >&2',
  "sleep 1",
  "echo '{\"done\":true}'",
  "",
].join("\n");

facilityTest("pty", NO_PTY, {
  name: "agent loop on a terminal: a line per running tool, each showing its tool's last stderr line",
  fn: async () => {
    await using dir = await tempDir();
    await writeFiles(dir.path, {
      "tools.json": {
        tools: [{
          name: "steps",
          description: "Takes a while and says how far it is.",
          command: ["./tools/bin/steps"],
          readOnly: true,
          concurrent: true,
          permissions: "none",
          parameters: {
            type: "object",
            properties: { label: { type: "string" } },
            required: ["label"],
            additionalProperties: false,
          },
        }],
      },
      "tools/bin/steps": TOOL,
    });
    await using endpoint = startChatServer([
      callTools([{ id: "c1", name: "steps", args: { label: "alpha" } }, {
        id: "c2",
        name: "steps",
        args: { label: "beta" },
      }]),
      answer("Both done."),
    ]);
    const env = hostEnv({
      XDG_STATE_HOME: join(dir.path, ".state"),
      TERM: "xterm",
    });
    const run = await runInPty(
      cliArgv([
        "--prompt",
        "run both",
        "--base-url",
        endpoint.baseUrl,
        "--model",
        "test-model",
        "--tools",
        join(dir.path, "tools.json"),
        "--sandbox",
        "off",
        "--no-audit",
      ]),
      { env, cwd: dir.path, timeoutMs: 90_000 },
    );
    const text = run.text;
    assert.equal(run.code, 0, text);
    assert.match(text, /Both done\./, text);
    // Both tools at once, a line each: the block that shows the second step of both.
    const line = (label: string) => `  running steps \\d+\\.\\ds/30s ${label}: step 2/2`;
    assert.match(
      text,
      new RegExp(`${line("alpha")}\\r?\\n${line("beta")}|${line("beta")}\\r?\\n${line("alpha")}`),
      text,
    );
    assert.match(text, /running steps \d+\.\ds\/30s alpha: step 1\/2/, text);
    assert.match(text, /running steps \d+\.\ds\/30s beta: step 1\/2/, text);
  },
});
