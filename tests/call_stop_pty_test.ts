/**
 * Ctrl-C during `toolgate call` on a real terminal (issue 26): `call` promises exactly one envelope line on stdout,
 * and a person's stop is no exception. `toolgate` (the launcher, as the installed command starts it) runs under
 * `script` (util-linux), which gives it a pty; a Ctrl-C typed there while the tool sleeps ends the tool's tree and
 * prints the envelope that says so (`killed_by: "user"`), and the exit is 130, as for any Ctrl-C.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { probeSandbox } from "../src/sandbox/sandbox.ts";
import { launcherFlags, REPO } from "./support.ts";

const SUPPORT = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin");
const REQUIRED = Deno.env.get("TOOLGATE_REQUIRE_BWRAP") === "1";
const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A sleep length no other process uses: pgrep finds exactly that process, inside the sandbox or not. */
function uniqueSleep(): string {
  return `${800 + Math.floor(Math.random() * 90)}.${Math.floor(Math.random() * 1000)}`;
}

async function pgrep(command: string): Promise<number[]> {
  const out = await new Deno.Command("pgrep", {
    args: ["-x", "-f", command],
    stdout: "piped",
    stderr: "null",
  })
    .output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.trim() !== "").map(Number);
}

async function until(check: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

for (const sandbox of ["off", "require"] as const) {
  Deno.test({
    name:
      `call (sandbox ${sandbox}): Ctrl-C on the terminal stops the tool and still prints one envelope line, ` +
      'killed_by "user", exit 130',
    // Unconfined needs nothing; confined needs bubblewrap (required in CI).
    ignore: sandbox === "require" && !SUPPORT.ok && !REQUIRED,
    fn: async () => {
      if (sandbox === "require") {
        assert.ok(SUPPORT.ok, `bubblewrap is required here (TOOLGATE_REQUIRE_BWRAP=1): ${SUPPORT.ok || ""}`);
      }
      const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_call_stop_" }));
      const seconds = uniqueSleep();
      const cli = [
        Deno.execPath(),
        "run",
        ...launcherFlags(),
        "--config",
        join(REPO, "deno.json"),
        join(REPO, "src", "launch.ts"),
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
      ].map(quote).join(" ");
      const env: Record<string, string> = { XDG_STATE_HOME: join(dir, ".state"), NO_COLOR: "1" };
      for (const name of ["PATH", "HOME", "DENO_DIR"]) {
        const value = Deno.env.get(name);
        if (value !== undefined) env[name] = value;
      }
      // `exec`: the shell becomes the launcher, so the pty's Ctrl-C reaches toolgate with no shell in between.
      const child = new Deno.Command("script", {
        args: ["-q", "-e", "-c", `exec ${cli}`, "/dev/null"],
        cwd: dir,
        env,
        clearEnv: true,
        stdin: "piped",
        stdout: "piped",
        stderr: "null",
      }).spawn();
      const writer = child.stdin.getWriter();
      let text = "";
      const reading = (async () => {
        const decoder = new TextDecoder();
        for await (const chunk of child.stdout) text += decoder.decode(chunk, { stream: true });
      })();
      const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
      try {
        await until(async () => (await pgrep(`sleep ${seconds}`)).length === 1, "the tool runs")
          .catch((error) => {
            throw new Error(`${error.message}; the terminal showed:\n${text}`);
          });
        await writer.write(new TextEncoder().encode("\x03"));
        const status = await child.status;
        await reading;
        const output = text.replaceAll("\r", "");
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
        clearTimeout(timer);
        for (const pid of await pgrep(`sleep ${seconds}`)) Deno.kill(pid, "SIGKILL");
        try {
          child.kill("SIGKILL");
        } catch {
          // Ended already.
        }
        await writer.close().catch(() => {});
        await child.status;
        await reading;
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
