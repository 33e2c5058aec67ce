/**
 * The `call` command as a real process: one envelope line, exit codes, args, timeouts, signals, audit (where it
 * goes, and the folders and keys it refuses).
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { auditFileFor } from "../src/state/audit_log.ts";
import { auditDirFor } from "../src/state/state.ts";
import {
  alivePids,
  cli,
  FIXTURES,
  IS_ROOT,
  killLeftovers,
  parsePids,
  scratch,
  spawnCli,
  waitForFile,
  waitGone,
} from "./executor_helpers.ts";
import { cliArgs, runInProcess } from "./support.ts";
import { facilityTest } from "./requires.ts";

const MANIFEST = join(FIXTURES, "call_manifest.json");
/** Every test runs unconfined: pids the tools write are host pids, and behaviour does not hinge on bwrap. */
const BASE = ["--tools", MANIFEST, "--sandbox", "off"];

/** The one line a `call` printed, parsed; fails unless stdout is exactly one line. */
function envelopeLine(stdout: string): Record<string, unknown> {
  const lines = stdout.split("\n");
  assert.equal(lines.length, 2, `expected exactly one line, got ${JSON.stringify(stdout)}`);
  assert.equal(lines[1], "");
  assert.ok(lines[0].startsWith('{"ok":'), lines[0]);
  return JSON.parse(lines[0]);
}

function noStackTrace(text: string): void {
  assert.ok(!/\n\s+at |Uncaught|Stack backtrace/.test(text), text);
}

Deno.test("call: a success prints one envelope line and exits 0", async () => {
  await using dir = await scratch();
  const run = await cli(["call", "echo", '{"n":"7","text":"hi"}', ...BASE, "--no-audit"], { cwd: dir.path });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(envelopeLine(run.stdout), { ok: true, result: { n: 7, text: "hi" }, tool: "echo" });
});

Deno.test("call: a failure prints one envelope line and exits 1", async () => {
  await using dir = await scratch();
  const run = await cli(["call", "fail", ...BASE, "--no-audit"], { cwd: dir.path });
  assert.equal(run.code, 1);
  const envelope = envelopeLine(run.stdout);
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.message, "boom");
  assert.equal(envelope.hint, "try less");
  for (const [name, args, kind] of [["nope", "{}", "tool_not_found"], ["echo", "[1]", "invalid_args"]]) {
    const other = await cli(["call", name, args, ...BASE, "--no-audit"], { cwd: dir.path });
    assert.equal(other.code, 1);
    assert.equal(envelopeLine(other.stdout).kind, kind);
    noStackTrace(other.stderr);
  }
});

Deno.test("call: `-` reads the arguments from stdin; absent means {}", async () => {
  await using dir = await scratch();
  const piped = await cli(["call", "echo", "-", ...BASE, "--no-audit"], {
    cwd: dir.path,
    stdin: '{"n": 3}\n',
  });
  assert.equal(piped.code, 0, piped.stderr);
  assert.deepEqual(envelopeLine(piped.stdout).result, { n: 3 });
  const absent = await cli(["call", "echo", ...BASE, "--no-audit"], { cwd: dir.path });
  assert.deepEqual(envelopeLine(absent.stdout).result, {});
});

Deno.test("call: --tool-timeout sets the default, a tool's timeoutSec wins", async () => {
  await using dir = await scratch();
  const defaulted = await cli([
    "call",
    "slow",
    ...BASE,
    "--no-audit",
    "--tool-timeout",
    "0.3",
    "--kill-grace",
    "0.2",
  ], {
    cwd: dir.path,
  });
  assert.equal(defaulted.code, 1);
  const envelope = envelopeLine(defaulted.stdout);
  assert.equal(envelope.kind, "timeout");
  assert.match(envelope.message as string, /0\.3 s/);
  // nap sleeps 0.6 s under its own timeoutSec of 5: the shorter default does not apply.
  const own = await cli(["call", "nap", ...BASE, "--no-audit", "--tool-timeout", "0.2"], { cwd: dir.path });
  assert.equal(own.code, 0, own.stdout);
  assert.deepEqual(envelopeLine(own.stdout).result, { slept: 0.6 });
  const help = await cli(["call", "--help"]);
  assert.match(help.stdout, /--tool-timeout SEC.*default 30/);
});

Deno.test("call: --max-output-bytes caps a flood", async () => {
  await using dir = await scratch();
  const run = await cli(["call", "flood", ...BASE, "--no-audit", "--max-output-bytes", "5000"], {
    cwd: dir.path,
  });
  assert.equal(run.code, 1);
  const envelope = envelopeLine(run.stdout);
  assert.equal(envelope.truncated, true);
  assert.match(envelope.message as string, /5000 bytes/);
});

Deno.test("call: usage errors exit 2 with a message and no stack trace", async () => {
  await using dir = await scratch();
  const cases: [string[], RegExp][] = [
    [["call", ...BASE], /needs a tool name/],
    [["call", "echo", ...BASE, "--max-output-bytes", "0"], /--max-output-bytes/],
    [["call", "echo", ...BASE, "--max-output-bytes", "lots"], /--max-output-bytes/],
    [["call", "echo", ...BASE, "--max-output-bytes", "1.5"], /--max-output-bytes/],
    [
      ["call", "echo", "--tools", MANIFEST, "--sandbox", "maybe"],
      /--sandbox must be one of auto, require, off/,
    ],
    [["call", "echo", ...BASE, "--tool-timeout", "-1"], /--tool-timeout/],
    [["call", "echo", "{}", "extra", ...BASE], /unexpected argument "extra"/],
    [["call", "echo", ...BASE, "--cwd", "/nonexistent/dir"], /--cwd/],
    // A usage error wins over a manifest that cannot be read.
    [
      ["call", "echo", "--tools", "/nonexistent/tools.json", "--sandbox", "maybe"],
      /--sandbox must be one of/,
    ],
  ];
  for (const [args, message] of cases) {
    const run = await runInProcess(args, { cwd: dir.path });
    assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
    assert.equal(run.stdout, "");
    assert.match(run.stderr, message);
    noStackTrace(run.stderr);
  }
});

/** Today's UTC day, as the audit files are named. */
function day(): string {
  return new Date().toISOString().slice(0, 10).replaceAll("-", "");
}

Deno.test("call: the audit log defaults to the workspace's folder under XDG_STATE_HOME, never inside the workspace", async () => {
  await using state = await scratch();
  await using dir = await scratch();
  await using work = await scratch();
  const env = { XDG_STATE_HOME: state.path };
  const run = await cli(["call", "echo", '{"n":1}', ...BASE], { cwd: dir.path, env });
  assert.equal(run.code, 0, run.stderr);
  const own = auditDirFor(env, dir.path);
  assert.ok(own.startsWith(join(state.path, "toolgate", "workspaces") + "/"), own);
  const line = JSON.parse(await Deno.readTextFile(join(own, `${day()}.log`)));
  assert.equal(line.tool, "echo");
  assert.equal(line.outcome, "ok");
  assert.equal(line.cwd, dir.path);
  assert.match(line.argsHmac, /^[0-9a-f]{64}$/);
  // Every folder of toolgate's own is 0700, the key 0600.
  for (let folder = own; folder !== state.path; folder = dirname(folder)) {
    assert.equal((await Deno.stat(folder)).mode! & 0o777, 0o700, folder);
  }
  assert.equal((await Deno.stat(join(state.path, "toolgate", "audit.key"))).mode! & 0o777, 0o600);

  // --cwd names the workspace: its log is its own, and nothing lands in either workspace.
  await cli(["call", "echo", ...BASE, "--cwd", work.path], { cwd: dir.path, env });
  const other = auditDirFor(env, work.path);
  assert.notEqual(other, own);
  const moved = (await Deno.readTextFile(join(other, `${day()}.log`))).trim().split("\n");
  assert.equal(JSON.parse(moved[moved.length - 1]).cwd, work.path);
  assert.deepEqual([...Deno.readDirSync(work.path)], []);
  assert.deepEqual([...Deno.readDirSync(dir.path)], []);

  // --audit-dir overrides (made 0700 when missing); --no-audit writes nothing, the state folder included.
  await cli(["call", "echo", ...BASE, "--audit-dir", "elsewhere"], { cwd: dir.path, env });
  assert.ok((await Deno.stat(join(dir.path, "elsewhere", `${day()}.log`))).isFile);
  assert.equal((await Deno.stat(join(dir.path, "elsewhere"))).mode! & 0o777, 0o700);
  await using quiet = await scratch();
  await using quietState = await scratch();
  await cli(["call", "echo", ...BASE, "--no-audit"], {
    cwd: quiet.path,
    env: { XDG_STATE_HOME: quietState.path },
  });
  assert.deepEqual([...Deno.readDirSync(quiet.path)], []);
  assert.deepEqual([...Deno.readDirSync(quietState.path)], []);
});

Deno.test("call: an audit log that cannot be written is reported once on stderr; the call still succeeds", async () => {
  await using state = await scratch();
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  await Deno.mkdir(auditDir, { mode: 0o700 });
  // Today's file (and tomorrow's, should the day turn mid-test) is a folder: every write fails.
  for (const when of [new Date(), new Date(Date.now() + 60_000)]) {
    await Deno.mkdir(auditFileFor(auditDir, when), { recursive: true });
  }
  const run = await cli(["call", "echo", '{"n":1}', ...BASE, "--audit-dir", "audit"], {
    cwd: dir.path,
    env: { XDG_STATE_HOME: state.path },
  });
  assert.equal(run.code, 0);
  assert.deepEqual(envelopeLine(run.stdout).result, { n: 1 });
  const reports = run.stderr.split("\n").filter((line) => line.includes("cannot write the audit log"));
  assert.equal(reports.length, 1, run.stderr);
  assert.ok(reports[0].includes(auditDir), reports[0]);
  noStackTrace(run.stderr);
});

Deno.test("call: a symlink planted as today's log is not followed under scoped grants; the target keeps bytes and mode", async () => {
  await using state = await scratch();
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  await Deno.mkdir(auditDir, { mode: 0o700 });
  const target = join(dir.path, "precious");
  await Deno.writeTextFile(target, "keep\n");
  await Deno.chmod(target, 0o644);
  // Today's and (should the day turn mid-test) tomorrow's file.
  for (const when of [new Date(), new Date(Date.now() + 60_000)]) {
    await Deno.symlink(target, auditFileFor(auditDir, when)).catch(() => {});
  }
  // Not --allow-all: Deno then resolves links itself before it opens, so O_NOFOLLOW alone would not hold.
  const run = await cli(["call", "echo", '{"n":1}', ...BASE, "--audit-dir", "audit"], {
    cwd: dir.path,
    env: { XDG_STATE_HOME: state.path },
  });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(envelopeLine(run.stdout).result, { n: 1 });
  assert.match(run.stderr, /is a symbolic link; toolgate never follows one there/);
  assert.equal(await Deno.readTextFile(target), "keep\n");
  assert.equal((await Deno.stat(target)).mode! & 0o777, 0o644);
});

Deno.test("call: an audit folder toolgate may not use is refused at start: exit 1, the folder and the fix named", async () => {
  await using state = await scratch();
  await using dir = await scratch();
  const env = { XDG_STATE_HOME: state.path };
  const open = join(dir.path, "open");
  await Deno.mkdir(open);
  await Deno.chmod(open, 0o755);
  const real = join(dir.path, "real");
  await Deno.mkdir(real, { mode: 0o700 });
  await Deno.symlink(real, join(dir.path, "link"));
  await Deno.writeTextFile(join(dir.path, "file"), "");
  const cases: [string, RegExp][] = [
    ["open", /open has mode 0755; toolgate wants 0700 \(chmod 700 it\)/],
    ["link", /link is a symbolic link; toolgate never follows one there/],
    ["file", /file is not a directory/],
  ];
  for (const [name, reason] of cases) {
    const run = await cli(["call", "echo", '{"n":1}', ...BASE, "--audit-dir", name], { cwd: dir.path, env });
    assert.equal(run.code, 1, `${name}: ${run.stderr}`);
    assert.equal(run.stdout, "", "no tool ran");
    assert.match(run.stderr, /^toolgate: no audit log can be kept: /m);
    assert.ok(run.stderr.includes(join(dir.path, name)), run.stderr);
    assert.match(run.stderr, reason);
    assert.match(run.stderr, /--audit-dir DIR \(your own, mode 0700\), or run with --no-audit/);
    noStackTrace(run.stderr);
  }
  assert.equal((await Deno.stat(open)).mode! & 0o777, 0o755, "never chmod-ed");
  assert.deepEqual([...Deno.readDirSync(real)], []);
  assert.deepEqual([...Deno.readDirSync(open)], []);
});

facilityTest("root", IS_ROOT ? undefined : "giving a folder to another user takes root", {
  name:
    "call: an audit folder of another user is refused, also without --allow-sys (the uid comes from a probe)",
  fn: async () => {
    await using state = await scratch();
    await using dir = await scratch();
    const theirs = join(dir.path, "theirs");
    await Deno.mkdir(theirs, { mode: 0o700 });
    await Deno.chown(theirs, 65534, 65534);
    const run = await cli(["call", "echo", ...BASE, "--audit-dir", "theirs"], {
      cwd: dir.path,
      env: { XDG_STATE_HOME: state.path },
    });
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /theirs belongs to uid 65534, not to this user \(uid 0\)/);
    assert.deepEqual([...Deno.readDirSync(theirs)], [], "no probe left behind");
  },
});

Deno.test("call: a state folder or key that is a link is refused at start, its target untouched", async () => {
  await using state = await scratch();
  await using dir = await scratch();
  await using outside = await scratch();
  const env = { XDG_STATE_HOME: state.path };
  // The default audit folder's chain: a link as the toolgate folder itself.
  await Deno.symlink(outside.path, join(state.path, "toolgate"));
  const linked = await cli(["call", "echo", ...BASE], { cwd: dir.path, env });
  assert.equal(linked.code, 1, linked.stderr);
  assert.match(linked.stderr, /toolgate is a symbolic link; toolgate never follows one there/);
  assert.deepEqual([...Deno.readDirSync(outside.path)], []);
  // A link as the key.
  await Deno.remove(join(state.path, "toolgate"));
  await Deno.mkdir(join(state.path, "toolgate"), { mode: 0o700 });
  const chosen = join(outside.path, "chosen.key");
  await Deno.writeFile(chosen, new Uint8Array(32), { mode: 0o600 });
  await Deno.symlink(chosen, join(state.path, "toolgate", "audit.key"));
  const keyed = await cli(["call", "echo", ...BASE], { cwd: dir.path, env });
  assert.equal(keyed.code, 1, keyed.stderr);
  assert.match(keyed.stderr, /the audit key .*audit\.key is a symbolic link/);
  assert.deepEqual(await Deno.readFile(chosen), new Uint8Array(32));
  noStackTrace(keyed.stderr);
});

Deno.test("call: --cwd is the tools' working directory", async () => {
  await using dir = await scratch();
  await using work = await scratch();
  const child = spawnCli(
    ["call", "hang", ...BASE, "--no-audit", "--cwd", work.path, "--tool-timeout", "0.5"],
    {
      cwd: dir.path,
    },
  );
  await child.stdin.close();
  const output = await child.output();
  const pids = parsePids(await Deno.readTextFile(join(work.path, "pids")));
  killLeftovers(await waitGone(pids));
  assert.equal(output.code, 1);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.test(`call: ${signal} to toolgate ends the tool's tree, then toolgate exits`, async () => {
    await using dir = await scratch();
    const child = spawnCli(["call", "hang_stubborn", ...BASE, "--no-audit", "--kill-grace", "0.3"], {
      cwd: dir.path,
    });
    await child.stdin.close();
    let pids: number[] = [];
    try {
      pids = parsePids(await waitForFile(join(dir.path, "pids")));
      assert.deepEqual(await alivePids(pids), pids);
      child.kill(signal);
      const output = await child.output();
      assert.equal(output.code, signal === "SIGINT" ? 130 : 143);
      const alive = await waitGone(pids);
      assert.deepEqual(alive, [], `alive after toolgate exited: ${alive.join(", ")}`);
    } finally {
      killLeftovers(pids);
      try {
        child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    }
  });
}

Deno.test("call: under a scoped --allow-run (the `kill` program ends trees), a timeout still ends the tree", async () => {
  await using dir = await scratch();
  const tool = join(FIXTURES, "tools", "bin", "sleeper_pidfile");
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      ...cliArgs(["--allow-read", "--allow-write", "--allow-env", `--allow-run=kill,${tool}`], []),
      "call",
      "hang_stubborn",
      ...BASE,
      "--no-audit",
      "--tool-timeout",
      "0.5",
      "--kill-grace",
      "0.5",
    ],
    cwd: dir.path,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const elapsed = performance.now() - started;
  const pids = parsePids(await Deno.readTextFile(join(dir.path, "pids")));
  const alive = await waitGone(pids);
  killLeftovers(alive);
  assert.deepEqual(alive, []);
  const envelope = envelopeLine(new TextDecoder().decode(output.stdout));
  assert.equal(envelope.kind, "timeout");
  assert.equal(envelope.signal, "SIGKILL");
  assert.ok(elapsed < 10_000, `${elapsed} ms`);
});
