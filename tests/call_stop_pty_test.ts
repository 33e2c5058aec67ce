/**
 * Ctrl-C during `toolgate call` on a real terminal (issue 26): `call` promises exactly one envelope line on stdout,
 * and a person's stop is no exception. `toolgate` (the launcher, as the installed command starts it) runs under
 * `script` (util-linux), which gives it a pty; a Ctrl-C typed there while the tool sleeps ends the tool's tree and
 * prints the envelope that says so (`killed_by: "user"`), and the exit is 130, as for any Ctrl-C.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { hostTest, NO_BWRAP } from "./security/helpers.ts";
import { hostEnv, launcherArgv, REPO } from "./support.ts";
import { killAll, pgrep, uniqueSleep, until } from "./processes.ts";
import { openTerminal } from "./terminal.ts";

for (const sandbox of ["off", "require"] as const) {
  // Unconfined needs nothing; confined needs bubblewrap (required in CI).
  hostTest(
    `call (sandbox ${sandbox}): Ctrl-C on the terminal stops the tool and still prints one envelope line, ` +
      'killed_by "user", exit 130',
    sandbox === "require" ? NO_BWRAP : undefined,
    async () => {
      const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_call_stop_" }));
      // A sleep length no other process uses: pgrep finds exactly that process, inside the sandbox or not.
      const seconds = uniqueSleep(800);
      const cli = launcherArgv([
        "call",
        "exec",
        JSON.stringify({ shell: `sleep ${seconds}`, timeout_ms: 120_000 }),
        "--tools",
        join(REPO, "tools.json"),
        "--sandbox",
        sandbox,
        "--no-audit",
        "--kill-grace",
        "0.5",
      ]);
      // The launcher starts toolgate, which gets the pty's Ctrl-C with no shell in between.
      const terminal = openTerminal(cli, { cwd: dir, env: hostEnv({ XDG_STATE_HOME: join(dir, ".state") }) });
      try {
        await until(async () => (await pgrep(`sleep ${seconds}`)).length === 1, "the tool runs")
          .catch((error) => {
            throw new Error(`${error.message}; the terminal showed:\n${terminal.raw()}`);
          });
        await terminal.type("\x03");
        const status = await terminal.status;
        const output = terminal.output();
        assert.equal(status.code, 130, output);
        // The pty mixes stdout and stderr: exactly one line is an envelope, and it is the stop's.
        const envelopes = output.split("\n").filter((line) => line.startsWith("{"));
        assert.equal(envelopes.length, 1, output);
        const envelope = JSON.parse(envelopes[0]);
        assert.equal(envelope.ok, false);
        assert.equal(envelope.kind, "execution_error");
        assert.equal(envelope.killed_by, "user");
        assert.equal(envelope.cancelled, true);
        assert.equal(envelope.retryable, false);
        assert.deepEqual(await pgrep(`sleep ${seconds}`), [], "the call's tree is gone");
      } finally {
        killAll(await pgrep(`sleep ${seconds}`));
        await terminal[Symbol.asyncDispose]();
        await Deno.remove(dir, { recursive: true });
      }
    },
  );
}
