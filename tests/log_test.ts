// `toolgate log`: the audit log that real calls wrote, read back through the launcher under the least permission
// set: one line per call (time, tool, outcome, duration, who approved), filters, --json, --follow, and every line's
// digest checked, so that an edited line and a torn one are named.
import assert from "node:assert/strict";
import { join } from "node:path";
import { hasStackTrace, launcherArgs, runToolgate, tempDir } from "./support.ts";

/** A workspace with the starter in it, and a state folder of its own. */
async function workspace(): Promise<
  { dir: string; env: Record<string, string>; dispose: () => Promise<void> }
> {
  const dir = await Deno.makeTempDir({ prefix: "toolgate_log_" });
  const state = await Deno.makeTempDir({ prefix: "toolgate_log_state_" });
  const env = { XDG_STATE_HOME: state };
  const init = await runToolgate(["init"], dir, env);
  assert.equal(init.code, 0, init.stderr);
  const trust = await runToolgate(["trust"], dir, env);
  assert.equal(trust.code, 0, trust.stderr);
  return {
    dir,
    env,
    dispose: async () => {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(state, { recursive: true });
    },
  };
}

async function call(dir: string, env: Record<string, string>, args: string): Promise<void> {
  const result = await runToolgate(["call", "greet_person", args, "--sandbox", "off"], dir, env);
  assert.ok(result.code === 0 || result.code === 1, result.stderr);
  assert.doesNotMatch(
    result.stdout,
    /"kind":"rejected"/,
    "the call ran (a refused call writes no audit line)",
  );
}

/** The one day file the calls wrote. */
async function auditFile(env: Record<string, string>): Promise<string> {
  const root = join(env.XDG_STATE_HOME, "toolgate", "workspaces");
  for await (const ws of Deno.readDir(root)) {
    for await (const file of Deno.readDir(join(root, ws.name, "audit"))) {
      return join(root, ws.name, "audit", file.name);
    }
  }
  throw new Error("no audit file");
}

Deno.test("log shows the calls of this workspace, oldest first, one readable line each, under the least set", async () => {
  const ws = await workspace();
  try {
    await call(ws.dir, ws.env, '{"name":"Ada"}');
    await call(ws.dir, ws.env, '{"name":"a\\"b"}');
    const log = await runToolgate(["log", "--locked"], ws.dir, ws.env);
    assert.equal(log.code, 0, log.stderr);
    assert.equal(log.stderr, "");
    const lines = log.stdout.trim().split("\n");
    assert.equal(lines.length, 2, log.stdout);
    assert.match(
      lines[0],
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ {2}greet_person +ok +\d+m?s +approved: read-only/,
    );
    assert.match(lines[1], /greet_person +invalid_args +0ms +not run/);

    const json = await runToolgate(["log", "--json", "--locked"], ws.dir, ws.env);
    assert.equal(json.code, 0, json.stderr);
    const records = json.stdout.trim().split("\n").map((line) => JSON.parse(line));
    assert.deepEqual(records.map((r) => [r.tool, r.outcome, r.integrity]), [
      ["greet_person", "ok", "verified"],
      ["greet_person", "invalid_args", "verified"],
    ]);
    assert.equal(records[0].approved_by, "read-only");
    assert.equal(records[0].mac, undefined, "the digest is checked, not shown");

    const filtered = async (...args: string[]) => {
      const result = await runToolgate(["log", "--json", ...args], ws.dir, ws.env);
      assert.equal(result.code, 0, result.stderr);
      return result.stdout.trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l).outcome);
    };
    assert.deepEqual(await filtered("--outcome", "failed"), ["invalid_args"]);
    assert.deepEqual(await filtered("--outcome", "ok"), ["ok"]);
    assert.deepEqual(await filtered("--tool", "other"), []);
    assert.deepEqual(await filtered("--since", "1h"), ["ok", "invalid_args"]);
    assert.deepEqual(await filtered("--since", "2999-01-01"), []);

    const bad = await runToolgate(["log", "--since", "yesterday"], ws.dir, ws.env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--since takes an age/);
    assert.ok(!hasStackTrace(bad.stderr));

    // Another workspace has a log of its own.
    await using other = await tempDir();
    const none = await runToolgate(["log"], other.path, ws.env);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, "");
    assert.match(none.stderr, /no calls recorded for /);
  } finally {
    await ws.dispose();
  }
});

Deno.test("log names an edited line (its digest does not match) and a torn one, and exits 1", async () => {
  const ws = await workspace();
  try {
    await call(ws.dir, ws.env, '{"name":"Ada"}');
    await call(ws.dir, ws.env, '{"name":"Bob"}');
    const file = await auditFile(ws.env);
    const lines = (await Deno.readTextFile(file)).split("\n");
    // Someone rewrites the first call's outcome, and a write is torn at the end.
    lines[0] = lines[0].replace('"outcome":"ok"', '"outcome":"timeout"');
    await Deno.writeTextFile(file, lines.join("\n") + '{"ts":"2026-11-26T05:1');
    const log = await runToolgate(["log", "--locked"], ws.dir, ws.env);
    assert.equal(log.code, 1, log.stderr);
    assert.ok(!hasStackTrace(log.stderr), log.stderr);
    const shown = log.stdout.trim().split("\n");
    assert.equal(shown.length, 2);
    assert.match(shown[0], /timeout.*ALTERED: its digest does not match/);
    assert.doesNotMatch(shown[1], /ALTERED/);
    assert.ok(log.stderr.includes(`${file}:1: altered: its digest does not match its text`), log.stderr);
    assert.ok(log.stderr.includes(`${file}:3: damaged: not JSON`), log.stderr);
  } finally {
    await ws.dispose();
  }
});

Deno.test("log --follow prints each call as it is recorded, and ends on SIGTERM", async () => {
  const ws = await workspace();
  try {
    await call(ws.dir, ws.env, '{"name":"Ada"}');
    const child = new Deno.Command(Deno.execPath(), {
      args: launcherArgs(["log", "-f"]),
      cwd: ws.dir,
      env: { ...ws.env, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    // A line that never comes fails the test (and ends the follower) instead of hanging the suite.
    const until = async (count: number) => {
      const deadline = setTimeout(() => child.kill("SIGKILL"), 20_000);
      try {
        while (seen.split("\n").filter((l) => l !== "").length < count) {
          const { value, done } = await reader.read();
          if (done) {
            throw new Error(`log --follow ended (or gave nothing in 20 s) before line ${count}: ${seen}`);
          }
          seen += value;
        }
      } finally {
        clearTimeout(deadline);
      }
    };
    await until(1);
    await call(ws.dir, ws.env, '{"name":"Bob"}');
    await until(2);
    assert.match(seen.trim().split("\n")[1], /greet_person +ok/);
    child.kill("SIGTERM");
    const status = await child.status;
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    const stderr = await new Response(child.stderr).text();
    assert.equal(status.code, 0, stderr);
  } finally {
    await ws.dispose();
  }
});
