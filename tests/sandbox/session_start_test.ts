// The session starter (src/sandbox/session_start.c): built by the machine's C compiler into a user's data folder,
// it starts an unconfined call in a session of its own and inside its cgroup slot with one exec, and keeps every
// promise of the setsid(1) and shell it stands in for: the tool cannot end toolgate with `kill 0`, a process that
// left the tool's session ends with the call, a program that cannot be executed is the same start failure.
import assert from "node:assert/strict";
import { join } from "node:path";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { type Manifest } from "../../src/manifest/manifest_types.ts";
import { ToolLauncher } from "../../src/sandbox/tool_launch.ts";
import { controlPlane } from "../../src/sandbox/control_plane.ts";
import { detectCgroups } from "../../src/sandbox/cgroups.ts";
import { SESSION_START_SOURCE_DIGEST } from "../../src/sandbox/session_start.ts";
import { buildSessionStart, SESSION_START_SOURCE } from "../../src/build/native.ts";
import { sha256Hex } from "../../src/base/sha256_hex.ts";
import { type Envelope } from "../../src/contract.ts";
import { realTempDir } from "../security/helpers.ts";
import { writeFiles } from "../support.ts";
import { pgrep } from "../processes.ts";
import { start, userWithStarter } from "./starter_helpers.ts";
import { facilityTest, whyMissing } from "../requires.ts";

const PATH = Deno.env.get("PATH") ?? "/usr/local/bin:/usr/bin:/bin";
const NO_CC = await whyMissing("cc");

Deno.test("session starter: its source is the one whose digest names the program toolgate looks for", async () => {
  assert.equal(await sha256Hex(await Deno.readFile(SESSION_START_SOURCE)), SESSION_START_SOURCE_DIGEST);
});

facilityTest("cc", NO_CC, {
  name: "session starter: built once, freestanding where it can be, and found again without a build",
  fn: async () => {
    const home = await realTempDir("toolgate_starter_home_");
    const env = { PATH, HOME: home };
    const built = await buildSessionStart(env);
    assert.ok(built.ok, built.ok ? "" : built.reason);
    // Its own entry and system calls on the processors its source has them for: no C library to start.
    const freestanding = Deno.build.arch === "x86_64" || Deno.build.arch === "aarch64";
    assert.equal(built.built, freestanding ? "freestanding" : "static");
    const starter = built.path;
    assert.equal((await Deno.stat(starter)).mode! & 0o777, 0o755);
    const again = await buildSessionStart(env);
    assert.deepEqual(again, { ok: true, path: starter, built: "before" });
    // Nothing half-written is left beside it.
    const names = [];
    for await (const entry of Deno.readDir(join(starter, ".."))) names.push(entry.name);
    assert.deepEqual(names, [starter.split("/").at(-1)]);
  },
});

facilityTest("cc", NO_CC, {
  name: "session starter: a session of its own, its steps done in order, then the program in its place",
  fn: async () => {
    const { starter } = await userWithStarter();
    const dir = await realTempDir("toolgate_starter_steps_");
    await Deno.writeTextFile(join(dir, "limit"), "64");
    // A cgroup's files are there once its folder is: here, the file to join is made beforehand.
    await Deno.writeTextFile(join(dir, "procs"), "");
    // The shell reads its own /proc/self/stat: pid, process group and session (fields 1, 5, 6).
    // The limit's path goes through the slot's folder, as a cgroup's files are in theirs: its first write fails
    // while the folder is not there, which makes the folder and starts the steps over.
    const result = await start(starter, [
      ...[
        "-d",
        join(dir, "slot"),
        "-w",
        `${join(dir, "slot")}/../limit`,
        "max",
        "-o",
        join(dir, "absent"),
        "max",
      ],
      ...["-j", join(dir, "procs"), "--", "/bin/sh", "-c"],
      'read -r pid comm state ppid pgrp session rest < /proc/self/stat; echo "$$ $pid $pgrp $session"',
    ]);
    assert.equal(result.code, 0, result.err);
    const [shell, pid, pgrp, session] = result.out.trim().split(" ");
    assert.equal(pid, shell);
    assert.equal(pgrp, pid, "the program leads its own process group");
    assert.equal(session, pid, "the program leads its own session");
    assert.equal(await Deno.readTextFile(join(dir, "procs")), pid, "the pid it joined with is the program's");
    assert.ok((await Deno.stat(join(dir, "slot"))).isDirectory);
    assert.equal(await Deno.readTextFile(join(dir, "limit")), "max");
    await assert.rejects(Deno.stat(join(dir, "absent")), Deno.errors.NotFound);
    // A folder is made only when a step needs it (a slot's folder is there at every call but its first).
    const unneeded = await start(starter, [
      "-d",
      join(dir, "unneeded"),
      "-j",
      join(dir, "procs"),
      "--",
      "/bin/true",
    ]);
    assert.equal(unneeded.code, 0, unneeded.err);
    await assert.rejects(Deno.stat(join(dir, "unneeded")), Deno.errors.NotFound);
  },
});

facilityTest("cc", NO_CC, {
  name:
    "session starter: a step that fails twice runs nothing and says which cgroup; a bad line runs nothing",
  fn: async () => {
    const { starter } = await userWithStarter();
    const dir = await realTempDir("toolgate_starter_fail_");
    const marker = join(dir, "ran");
    const run = ["--", "/bin/sh", "-c", `echo > ${marker}`];
    const missing = await start(starter, ["-w", join(dir, "gone", "pids.max"), "max", ...run]);
    assert.equal(missing.code, 125);
    assert.equal(missing.err, `toolgate: cannot set up the cgroup ${join(dir, "gone")}\n`);
    for (
      const bad of [["-x", "y", ...run], ["-w", join(dir, "f"), ...run.slice(0, 1)], ["-j", join(dir, "p")]]
    ) {
      const refused = await start(starter, bad);
      assert.equal(refused.code, 125, bad.join(" "));
    }
    await assert.rejects(Deno.stat(marker), Deno.errors.NotFound, "a program ran after a failed step");
  },
});

facilityTest("cc", NO_CC, {
  name:
    "session starter: at its gate (-g) the program runs only after a newline, its stdin whole after it; " +
    "an end of stdin or another byte runs nothing",
  fn: async () => {
    const { starter } = await userWithStarter();
    const dir = await realTempDir("toolgate_starter_gate_");
    const marker = join(dir, "ran");
    /** The starter at its gate, `stdin` written, then closed; its exit code and stdout. */
    const gated = async (stdin: string) => {
      const child = new Deno.Command(starter, {
        args: ["-g", "--", "/bin/sh", "-c", `echo > ${marker}; cat`],
        clearEnv: true,
        env: { PATH: "/usr/bin:/bin" },
        stdin: "piped",
        stdout: "piped",
      }).spawn();
      const out = new Response(child.stdout).text();
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(stdin)).catch(() => {});
      await writer.close().catch(() => {});
      return { code: (await child.status).code, out: await out };
    };
    for (const refused of ["", "x{}"]) {
      assert.deepEqual(await gated(refused), { code: 125, out: "" }, JSON.stringify(refused));
      await assert.rejects(Deno.stat(marker), Deno.errors.NotFound, "a program ran without its gate");
    }
    assert.deepEqual(await gated('\n{"n":1}\n'), { code: 0, out: '{"n":1}\n' });
    await Deno.stat(marker);
  },
});

facilityTest("cc", NO_CC, {
  name: "session starter: a program it cannot execute is reported in setsid(1)'s words, 127 when not there",
  fn: async () => {
    const { starter } = await userWithStarter();
    const dir = await realTempDir("toolgate_starter_exec_");
    const badInterpreter = join(dir, "bad");
    await Deno.writeTextFile(badInterpreter, "#!/nonexistent/interpreter\n", { mode: 0o755 });
    const notThere = await start(starter, ["--", join(dir, "missing")]);
    assert.equal(notThere.code, 127);
    assert.match(notThere.err, /^session-start: failed to execute .*missing: No such file or directory\n$/);
    const bad = await start(starter, ["--", badInterpreter]);
    assert.equal(bad.code, 127);
    assert.match(bad.err, /^session-start: failed to execute /);
  },
});

facilityTest("cc", NO_CC, {
  name:
    "session starter: a name without a slash is looked for along PATH, a script with no #! line runs in the " +
    "shell, as execvp(3) does",
  fn: async () => {
    const { starter } = await userWithStarter();
    const dir = await realTempDir("toolgate_starter_path_");
    const found = await start(starter, ["--", "sh", "-c", "echo found"]);
    assert.deepEqual(found, { code: 0, out: "found\n", err: "" });
    await Deno.writeTextFile(join(dir, "plain"), 'echo "plain $1"\n', { mode: 0o755 });
    const plain = await start(starter, ["--", join(dir, "plain"), "arg"]);
    assert.deepEqual(plain, { code: 0, out: "plain arg\n", err: "" });
    await Deno.writeTextFile(join(dir, "closed"), "#!/bin/sh\necho no\n", { mode: 0o644 });
    const closed = await start(starter, ["--", join(dir, "closed")]);
    assert.equal(closed.code, 126);
    assert.match(closed.err, /^session-start: failed to execute .*closed: Permission denied\n$/);
  },
});

/** A project of shell tools, run unconfined through an executor whose user has the starter. */
async function project(): Promise<{ dir: string; manifest: Manifest }> {
  const dir = await realTempDir("toolgate_starter_project_");
  const tool = (name: string, timeoutSec = 10) => ({
    name,
    command: [`./tools/bin/${name}`],
    permissions: "none",
    timeoutSec,
  });
  await writeFiles(dir, {
    "tools.json": { tools: [tool("where"), tool("kill_group"), tool("escaper", 1), tool("bad")] },
    // Its pid, group and session, and whether it is in a call cgroup of toolgate's.
    "tools/bin/where": [
      "#!/bin/sh",
      "read -r pid comm state ppid pgrp session rest < /proc/self/stat",
      'if grep -q "/toolgate/call-" /proc/self/cgroup; then slot=true; else slot=false; fi',
      'printf \'{"pid":%s,"ppid":%s,"pgrp":%s,"session":%s,"slot":%s}\\n\' "$pid" "$ppid" "$pgrp" "$session" "$slot"',
    ].join("\n"),
    // The usual cleanup of a shell script: every process of its group, which must not be toolgate's.
    "tools/bin/kill_group": "#!/bin/sh\nkill -TERM 0\nsleep 5\n",
    "tools/bin/escaper": [
      "#!/bin/sh",
      `seconds=$(sed -n 's/.*"seconds" *: *"\\([0-9.]*\\)".*/\\1/p')`,
      'setsid sleep "$seconds" < /dev/null > /dev/null 2>&1 &',
      'sleep "$seconds"',
    ].join("\n"),
    "tools/bin/bad": "#!/nonexistent/interpreter\n",
  });
  for (const name of ["where", "kill_group", "escaper", "bad"]) {
    await Deno.chmod(join(dir, "tools", "bin", name), 0o755);
  }
  const loaded = await loadManifest(join(dir, "tools.json"));
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  return { dir, manifest: loaded.manifest };
}

function executor(manifest: Manifest, env: Record<string, string>, cwd: string): Executor {
  return new Executor({
    manifest,
    env,
    cwd,
    auditDir: null,
    auditKey: new Uint8Array(32),
    sandbox: "off",
    graceMs: 200,
  });
}

function result(envelope: Envelope): Record<string, unknown> {
  assert.ok(envelope.ok, JSON.stringify(envelope));
  return envelope.result as Record<string, unknown>;
}

const CGROUPS = detectCgroups(Deno.env.toObject());
const NO_STARTER = NO_CC ?? (CGROUPS === undefined ? "toolgate cannot make cgroups here" : undefined);

facilityTest("cc", NO_STARTER, {
  name: "session starter: an unconfined call starts through it, in its own session and its call's cgroup",
  fn: async () => {
    const { env, starter } = await userWithStarter();
    const p = await project();
    const launcher = new ToolLauncher({
      manifest: p.manifest,
      env,
      workspace: p.dir,
      controlPlane: controlPlane(p.manifest, env),
      sandbox: "off",
    });
    const launch = await launcher.launch(p.manifest.byName.get("where")!);
    assert.ok(launch.ok && !launch.confined, JSON.stringify(launch));
    assert.equal(launcher.groupLauncher(launch)[0], starter, "the call does not start through the starter");
    assert.equal(launch.program, join(p.dir, "tools", "bin", "where"), "a shell stands in front of the tool");
    launcher.release(launch);
    await launcher.close();

    const run = executor(p.manifest, env, p.dir);
    try {
      const where = result(await run.call("where", "{}"));
      // The starter, its parent (it stays), leads the session and group the tool is in: toolgate's are not theirs.
      assert.equal(where.pgrp, where.ppid);
      assert.equal(where.session, where.ppid);
      // This process's session (only --allow-all reads /proc/self here).
      const ps = await new Deno.Command("ps", {
        args: ["-o", "sess=", "-p", String(Deno.pid)],
        stdout: "piped",
      })
        .output();
      const own = new TextDecoder().decode(ps.stdout).trim();
      assert.match(own, /^\d+$/);
      assert.notEqual(String(where.session), own, "the tool is in toolgate's session");
      assert.equal(where.slot, true, "the tool is not in its call's cgroup");
    } finally {
      await run.close();
    }
  },
});

const NO_BWRAP = await whyMissing("bwrap");

facilityTest(NO_BWRAP === undefined ? "cc" : "bwrap", NO_BWRAP ?? NO_STARTER, {
  name:
    "session starter: a confined call starts through it, no shell in front of bwrap, its gate inside the sandbox: " +
    "its limits, its rlimits, its seccomp filter and PWD as the shells gave them, no descriptor of the starter's",
  fn: async () => {
    const { env, starter } = await userWithStarter();
    const dir = await realTempDir("toolgate_starter_confined_");
    await writeFiles(dir, {
      "tools.json": {
        tools: [
          { name: "inside", command: ["./tools/bin/inside"], permissions: "tight", timeoutSec: 20 },
          // Not a shell, which would export a PWD of its own: what the tool was given.
          { name: "given", command: ["./tools/bin/printenv", "PWD"], permissions: "none", timeoutSec: 20 },
        ],
      },
      "permissions/tight.json": { limits: { cpuSeconds: 7, fileSizeBytes: 1_000_000, processes: 32 } },
      // Its rlimits, its seccomp mode and its open descriptors (the listing's own is 3).
      "tools/bin/inside": [
        "#!/bin/sh",
        "seccomp=$(sed -n 's/^Seccomp:[[:space:]]*//p' /proc/self/status)",
        "fds=$(ls /proc/self/fd | tr '\\n' ' ')",
        'printf \'{"cpu":"%s","fsize":"%s","seccomp":"%s","fds":"%s"}\\n\' "$(ulimit -t)" "$(ulimit -f)" "$seccomp" "$fds"',
      ].join("\n"),
    });
    await Deno.chmod(join(dir, "tools", "bin", "inside"), 0o755);
    await Deno.copyFile("/usr/bin/printenv", join(dir, "tools", "bin", "printenv"));
    const loaded = await loadManifest(join(dir, "tools.json"));
    assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
    const manifest = loaded.manifest;
    const launcher = new ToolLauncher({
      manifest,
      env,
      workspace: dir,
      controlPlane: controlPlane(manifest, env),
      sandbox: "require",
    });
    // Gated, as every call is.
    const launch = await launcher.launch(manifest.byName.get("inside")!, undefined, [], true);
    assert.ok(launch.ok && launch.confined, JSON.stringify(launch));
    assert.equal(launch.program, starter, "the call does not start through the starter");
    assert.ok(!launch.args.some((arg) => arg.includes("read -r")), "a shell stands in front of bwrap");
    // It stays in front of bwrap (its exit is the namespace's end, where bwrap's is not): the test above.
    const front = launch.args.slice(0, launch.args.indexOf("--"));
    assert.ok(front.includes("-s"), `the starter does not stay: ${front.join(" ")}`);
    // The gate: bwrap runs the starter from its descriptor, inside the sandbox, in front of the tool.
    const inside = launch.args.slice(launch.args.lastIndexOf("--") - 3);
    assert.deepEqual(inside, [
      "/proc/self/fd/4",
      "-k",
      "-g",
      "--",
      join(dir, "tools", "bin", "inside"),
    ]);
    launcher.release(launch);
    await launcher.close();

    const run = new Executor({
      manifest,
      env,
      cwd: dir,
      auditDir: null,
      auditKey: new Uint8Array(32),
      sandbox: "require",
    });
    try {
      // 512-byte blocks, as the shell's ulimit counts them: 1,000,000 bytes is 1,953 whole blocks.
      assert.deepEqual(result(await run.call("inside", "{}")), {
        cpu: "7",
        fsize: "1953",
        seccomp: "2",
        fds: "0 1 2 3 ",
      });
      assert.deepEqual(result(await run.call("given", "{}")), { text: `${dir}\n` });
    } finally {
      await run.close();
    }
  },
});

facilityTest("cc", NO_STARTER, {
  name:
    "session starter: a tool's kill 0 ends its own group only, and a process that left its session ends with the call",
  fn: async () => {
    const { env } = await userWithStarter();
    const p = await project();
    const seconds = `${300 + Math.floor(Math.random() * 600)}.${Math.floor(Math.random() * 1000)}`;
    const run = executor(p.manifest, env, p.dir);
    try {
      const killed = await run.call("kill_group", "{}");
      assert.equal(killed.ok, false, JSON.stringify(killed));
      // This process is still here to read it, and so is the executor: the next call runs.
      assert.equal(result(await run.call("where", "{}")).slot, true);
      const escaped = await run.call("escaper", JSON.stringify({ seconds }));
      assert.equal(!escaped.ok && escaped.kind, "timeout", JSON.stringify(escaped));
      assert.deepEqual(
        await pgrep(`sleep ${seconds}`),
        [],
        "the escaped grandchild outlived its call's cgroup",
      );
    } finally {
      await run.close();
      await new Deno.Command("pkill", { args: ["-KILL", "-f", `sleep ${seconds}`] }).output();
    }
  },
});

facilityTest("cc", NO_STARTER, {
  name: "session starter: a program with a bad interpreter line is the start failure a direct start reports",
  fn: async () => {
    const { env } = await userWithStarter();
    const p = await project();
    const run = executor(p.manifest, env, p.dir);
    try {
      const envelope = await run.call("bad", "{}");
      assert.ok(!envelope.ok, JSON.stringify(envelope));
      assert.equal(envelope.kind, "unavailable");
      assert.equal(envelope.retryable, false);
      assert.match(envelope.message, /^The tool cannot start: cannot execute \S*\/tools\/bin\/bad: /);
    } finally {
      await run.close();
    }
  },
});
