/**
 * A tool's own progress on a person's terminal (issue 26): the last line a running tool wrote to stderr shows in
 * `toolgate call`'s progress line beside its timer, made plain (escape sequences removed, not obeyed) and with its
 * secrets masked. `toolgate` (the launcher, as the installed command starts it) runs on a real pty.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { hostEnv, launcherArgv, tempDir, writeFiles } from "./support.ts";
import { NO_PTY, runInPty } from "./security/pty.ts";
import { facilityTest } from "./requires.ts";

const SECRET = "tg-progress-secret-4f7c1d9e";

/** Says three things on stderr, a pause after each, then answers. */
const TOOL = [
  "#!/bin/sh",
  "printf 'step 1/3\\n' >&2",
  "sleep 1.5",
  // An OSC window title, a screen clear and colours around the words: only the words may reach the terminal.
  "printf '\\033]0;pwned-title\\007\\033[2J\\033[31mstep 2/3 linking\\033[0m\\n' >&2",
  "sleep 1.5",
  'printf "step 3/3 token %s\\n" "$MY_TOKEN" >&2',
  "sleep 1.5",
  "echo '{\"done\":true}'",
  "",
].join("\n");

facilityTest("pty", NO_PTY, {
  name:
    "call on a terminal: the tool's last stderr line shows beside the timer, plain and with secrets masked",
  fn: async () => {
    await using dir = await tempDir();
    await writeFiles(dir.path, {
      "tools.json": {
        tools: [{
          name: "slow_steps",
          description: "Takes a while and says how far it is.",
          command: ["./tools/bin/slow_steps"],
          readOnly: true,
          permissions: "none",
          secrets: ["MY_TOKEN"],
        }],
      },
      "tools/bin/slow_steps": TOOL,
    });
    const env = hostEnv({
      XDG_STATE_HOME: join(dir.path, ".state"),
      MY_TOKEN: SECRET,
      TERM: "xterm",
    });
    const run = await runInPty(
      launcherArgv([
        "call",
        "slow_steps",
        "{}",
        "--no-audit",
        "--sandbox",
        "off",
        "--tools",
        join(dir.path, "tools.json"),
      ]),
      { env, cwd: dir.path, timeoutMs: 90_000 },
    );
    const text = run.text;
    assert.equal(run.code, 0, text);
    // The progress line: the tool's name, its timer, then what it said last.
    assert.match(text, /running slow_steps \d+\.\ds\/30s step 1\/3/, text);
    assert.match(text, /running slow_steps \d+\.\ds\/30s step 2\/3 linking/, text);
    assert.match(text, /running slow_steps \d+\.\ds\/30s step 3\/3 token \[REDACTED\]/, text);
    assert.ok(!text.includes(SECRET), `the secret reached the terminal:\n${text}`);
    assert.ok(!text.includes(SECRET.slice(0, 12)), `a part of the secret reached the terminal:\n${text}`);
    // Nothing of the tool's escape sequences: not obeyed, and not shown either.
    assert.ok(!text.includes("pwned-title"), text);
    assert.ok(!text.includes("\x1b]"), text);
    assert.ok(!text.includes("\x1b[2J"), text);
    assert.ok(!text.includes("\x1b[31m"), text);
    assert.ok(!text.includes("␛"), text);
    const envelopes = text.replaceAll("\r", "").split("\n").filter((line) => line.startsWith("{"));
    assert.deepEqual(envelopes.map((line) => JSON.parse(line)), [{
      ok: true,
      result: { done: true },
      tool: "slow_steps",
    }]);
  },
});
