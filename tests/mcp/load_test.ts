/**
 * `toolgate serve --http` under load, untimed: 64 sessions of mixed calls (a concurrent tool, a tool that writes
 * and runs alone, a large answer, `tools/list`) at once, the audit log on; exactly one audit line per call, no
 * error, every session answered. And a client that stops reading its stream holds no worker: with the server's
 * call slots all taken by calls whose large answers nobody reads, other sessions' calls are still answered.
 *
 * The timings of the same load are the load bench's (tests/bench/load_bench.ts); this test only counts.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { launcherArgs } from "../../src/build/install.ts";
import { auditLines, LoadSession, REPO, startServe } from "../bench/load_client.ts";
import { within } from "../processes.ts";
import { tempDir } from "../support.ts";
import { probeSandbox } from "../../src/sandbox/sandbox.ts";

/**
 * How serve confines its tools here: as it would by default where bubblewrap works; unconfined where it does not
 * (the writing tool would be refused, and what is held here is the accounting under load, not confinement).
 */
const SANDBOX = (await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin")).ok ? [] : ["--sandbox", "off"];

const TOKEN = "load-test-token-0123456789abcdef";
/** The large answer's size: past what a socket buffers, so that a client that stops reading stops its writer. */
const BIG_BYTES = 3 * 1024 * 1024;

/** A trusted project: `echo` (concurrent), `note` (writes the workspace, runs alone), `big` (a large answer). */
async function project(dir: string) {
  const bin = join(dir, "tools", "bin");
  await Deno.mkdir(bin, { recursive: true });
  const scripts: Record<string, string> = {
    echo: "#!/bin/sh\ncat\n",
    note: '#!/bin/sh\ncat >> notes\necho "{\\"noted\\":true}"\n',
    big: `#!/bin/sh\nhead -c ${BIG_BYTES} /dev/zero | tr '\\0' a\n`,
  };
  for (const [name, text] of Object.entries(scripts)) {
    await Deno.writeTextFile(join(bin, name), text, { mode: 0o755 });
  }
  const schema = {
    type: "object",
    properties: { text: { type: "string" } },
    additionalProperties: false,
  };
  await Deno.writeTextFile(
    join(dir, "tools.json"),
    JSON.stringify({
      tools: [
        {
          name: "echo",
          command: ["./tools/bin/echo"],
          schema,
          permissions: "none",
          readOnly: true,
          concurrent: true,
        },
        { name: "note", command: ["./tools/bin/note"], schema, permissions: "workspace" },
        { name: "big", command: ["./tools/bin/big"], permissions: "none", readOnly: true, concurrent: true },
      ],
    }),
  );
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: dir,
    XDG_STATE_HOME: join(dir, ".state"),
    XDG_CONFIG_HOME: join(dir, ".config"),
    NO_COLOR: "1",
    DENO_DIR: Deno.env.get("DENO_DIR") ?? join(Deno.env.get("HOME") ?? "/root", ".cache", "deno"),
  };
  const trusted = await new Deno.Command(Deno.execPath(), {
    args: [...launcherArgs({ source: REPO }), "trust"],
    cwd: dir,
    clearEnv: true,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(trusted.success, new TextDecoder().decode(trusted.stderr));
  return env;
}

Deno.test("serve --http under load: 64 sessions of mixed calls, one audit line per call, no error, every session answered", async () => {
  await using dir = await tempDir();
  const env = await project(dir.path);
  const audit = join(dir.path, ".audit");
  await using served = await startServe(dir.path, env, TOKEN, [
    ...SANDBOX,
    "--max-sessions",
    "80",
    "--allow-tools",
    "note",
    "--audit-dir",
    audit,
  ]);
  const sessions = await Promise.all(Array.from({ length: 64 }, () => LoadSession.open(served.url, TOKEN)));
  const errors: string[] = [];
  let calls = 0;
  let answered = 0;
  await Promise.all(sessions.map(async (session, s) => {
    let all = true;
    for (let i = 0; i < 6; i++) {
      // Mixed: mostly the concurrent tool, a write every few calls, a large answer now and then, a listing.
      const kind = (s + i) % 6;
      if (kind === 5) {
        const listed = await session.request("tools/list", {});
        const names = (listed.result?.tools as { name: string }[] | undefined)?.map((tool) => tool.name) ??
          [];
        if (!names.includes("echo")) (all = false, errors.push(`tools/list: ${JSON.stringify(listed)}`));
        continue;
      }
      const [name, args] = kind === 4
        ? ["note", { text: `s${s} c${i}` }]
        : kind === 3 && s % 4 === 0
        ? ["big", {}]
        : ["echo", { text: `s${s} c${i}` }];
      calls++;
      const outcome = await session.call(name as string, args as Record<string, unknown>);
      if (outcome.error !== undefined) (all = false, errors.push(`${name}: ${outcome.error}`));
    }
    if (all) answered++;
  }));
  await Promise.all(sessions.map((session) => session.close()));
  assert.deepEqual(errors, []);
  assert.equal(answered, 64, "every session answered");
  // Each line is on disk before its answer leaves: counted at once, no wait.
  assert.equal(await auditLines(audit), calls, "one audit line per call");
  // Every note is there, once: each session wrote one ((s + i) % 6 is 4 for one i of six).
  const notes = await Deno.readTextFile(join(dir.path, "notes"));
  assert.equal(notes.match(/"text"/g)?.length, 64);
});

Deno.test("serve --http under load: a session that stops reading its streams holds no worker; others are answered", async () => {
  await using dir = await tempDir();
  const env = await project(dir.path);
  await using served = await startServe(dir.path, env, TOKEN, [
    ...SANDBOX,
    "--max-calls",
    "2",
    "--audit-dir",
    join(dir.path, ".audit"),
  ]);
  // The stalled client: as many calls with a large answer as the server runs at once, their streams never read.
  const stalled = await LoadSession.open(served.url, TOKEN);
  const unread = await Promise.all([stalled.startCall("big", {}), stalled.startCall("big", {})]);
  try {
    // Other sessions still get every answer (bounded: a stall fails the test instead of hanging it).
    const others = await Promise.all(Array.from({ length: 8 }, () => LoadSession.open(served.url, TOKEN)));
    const outcomes = await within(
      Promise.all(
        others.flatMap((session) =>
          Array.from({ length: 3 }, (_, i) => session.call("echo", { text: `after ${i}` }))
        ),
      ),
      60_000,
      "the other sessions' answers while one client reads nothing",
    );
    assert.deepEqual(outcomes.filter((outcome) => outcome.error !== undefined), []);
    await Promise.all(others.map((session) => session.close()));
  } finally {
    for (const response of unread) await response.body?.cancel();
    await stalled.close();
  }
});
