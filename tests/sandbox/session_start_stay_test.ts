// The session starter that stays (`-s`, src/sandbox/session_start.c): in front of a confined call's bwrap it is
// the sandbox's parent, a subreaper, until everything below it is gone. bwrap exits as soon as its tool has, and
// its pid namespace, with whatever the tool left, is killed a moment later: the starter's exit, not bwrap's, is
// the tree's end. It dies with toolgate, as bwrap did when toolgate was its parent (`--die-with-parent`).
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { detectCgroups } from "../../src/sandbox/cgroups.ts";
import { type Envelope } from "../../src/contract.ts";
import { realTempDir } from "../security/helpers.ts";
import { denoDir, REPO, writeFiles } from "../support.ts";
import { pgrep, sleep } from "../processes.ts";
import { start, userWithStarter } from "./starter_helpers.ts";
import { facilityTest, whyMissing } from "../requires.ts";

const NO_CC = await whyMissing("cc");
const NO_BWRAP = await whyMissing("bwrap");
const CGROUPS = detectCgroups(Deno.env.toObject());
/** Without a cgroup (the namespace alone ends the tree), and with one where toolgate may make it. */
const MODES: Record<string, string>[] = [{ TOOLGATE_CGROUP: "none" }, ...CGROUPS === undefined ? [] : [{}]];

function result(envelope: Envelope): Record<string, unknown> {
  assert.ok(envelope.ok, JSON.stringify(envelope));
  return envelope.result as Record<string, unknown>;
}

/** A sleep length no other process uses. */
function uniqueSeconds(): string {
  return `${300 + Math.floor(Math.random() * 600)}.${Math.floor(Math.random() * 1000)}`;
}

/** The pids of `sleep SECONDS` once none is left, or those still there after two seconds. */
async function goneSoon(seconds: string): Promise<number[]> {
  let left = await pgrep(`sleep ${seconds}`);
  for (let round = 0; round < 20 && left.length > 0; round++) {
    await sleep(100);
    left = await pgrep(`sleep ${seconds}`);
  }
  return left;
}

facilityTest("cc", NO_CC, {
  name:
    "session starter: staying (-s), it exits once everything started under it is gone, as its program ended, " +
    "deaf to SIGTERM, holding no descriptor",
  fn: async () => {
    const { starter } = await userWithStarter();
    const dir = await realTempDir("toolgate_starter_stays_");
    // A process that left the program's session, with nothing of the program's open, writes a file 0.3 s after
    // the program exited: the starter, its subreaper, exits after it.
    const late = join(dir, "late");
    const orphan = `setsid sh -c 'sleep 0.3; echo late > ${late}' < /dev/null > /dev/null 2>&1 &`;
    const left = await start(starter, ["-k", "-s", "--", "/bin/sh", "-c", `${orphan} echo early; exit 3`]);
    assert.deepEqual(left, { code: 3, out: "early\n", err: "" });
    assert.equal(await Deno.readTextFile(late), "late\n", "the starter exited before the orphan did");
    // Killed by a signal: the starter ends by the same signal.
    const killed = await new Deno.Command(starter, {
      args: ["-k", "-s", "--", "/bin/sh", "-c", "kill -TERM $$"],
      clearEnv: true,
      stdin: "null",
    }).output();
    assert.equal(killed.signal, "SIGTERM");
    // A SIGTERM to the starter itself is the program's to hear (through its group or its cgroup), not its own.
    const child = new Deno.Command(starter, {
      args: ["-k", "-s", "--", "/bin/sh", "-c", "sleep 0.5; exit 5"],
      clearEnv: true,
      stdin: "null",
    }).spawn();
    await new Promise((resolve) => setTimeout(resolve, 150));
    child.kill("SIGTERM");
    assert.deepEqual({ ...await child.status }, { success: false, code: 5, signal: null });
    // Its own descriptors, listed by its program once it had the time to close them: none.
    const held = await start(starter, ["-k", "-s", "--", "/bin/sh", "-c", 'sleep 0.2; ls "/proc/$PPID/fd"']);
    assert.deepEqual(held, { code: 0, out: "", err: "" });
  },
});

/**
 * Calls in a row of a tool that leaves a process in a session of its own (setsid) and exits, each looked at the
 * moment it answered, then one that stays and times out: in each mode, behind a starter, none of them is left.
 */
async function leaversEnd(sandbox: "require" | "off", calls: number): Promise<void> {
  const { env } = await userWithStarter();
  const dir = await realTempDir("toolgate_starter_leavers_");
  const seconds = uniqueSeconds();
  // Its grandchild leaves its session and holds nothing of the call's: only the tree's end ends it.
  const leave = `setsid sleep ${seconds} < /dev/null > /dev/null 2>&1 &`;
  await writeFiles(dir, {
    "tools.json": {
      tools: [
        { name: "leaver", command: ["./tools/bin/leaver"], permissions: "none", timeoutSec: 10 },
        { name: "stays", command: ["./tools/bin/stays"], permissions: "none", timeoutSec: 1 },
      ],
    },
    "tools/bin/leaver": `#!/bin/sh\n${leave}\necho '{"left":true}'\n`,
    "tools/bin/stays": `#!/bin/sh\n${leave}\nsleep ${seconds}\n`,
  });
  for (const name of ["leaver", "stays"]) await Deno.chmod(join(dir, "tools", "bin", name), 0o755);
  const loaded = await loadManifest(join(dir, "tools.json"));
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  try {
    for (const mode of MODES) {
      const run: Executor = new Executor({
        manifest: loaded.manifest,
        env: { ...env, ...mode },
        cwd: dir,
        auditDir: null,
        auditKey: new Uint8Array(32),
        sandbox,
        graceMs: 200,
        residentHelpers: true,
      });
      try {
        for (let call = 0; call < calls; call++) {
          assert.deepEqual(result(await run.call("leaver", "{}")), { left: true });
          assert.deepEqual(
            await pgrep(`sleep ${seconds}`),
            [],
            `${JSON.stringify(mode)} call ${call}: one outlived it`,
          );
        }
        const timedOut: Envelope = await run.call("stays", "{}");
        assert.equal(!timedOut.ok && timedOut.kind, "timeout", JSON.stringify(timedOut));
        assert.deepEqual(
          await pgrep(`sleep ${seconds}`),
          [],
          `${JSON.stringify(mode)}: one outlived its timeout`,
        );
      } finally {
        await run.close();
      }
    }
  } finally {
    await new Deno.Command("pkill", { args: ["-KILL", "-f", `sleep ${seconds}`] }).output();
  }
}

facilityTest(NO_BWRAP === undefined ? "cc" : "bwrap", NO_BWRAP ?? NO_CC, {
  name:
    "session starter: confined, it stays until the sandbox's pid namespace is gone: nothing a tool left (setsid) " +
    "is alive at its answer or its timeout's, with a cgroup and without one",
  fn: () => leaversEnd("require", 12),
});

facilityTest(NO_BWRAP === undefined ? "cc" : "bwrap", NO_BWRAP ?? NO_CC, {
  name:
    "session starter: a toolgate killed with SIGKILL while a confined call runs takes the starter, bwrap and the " +
    "sandbox with it, with a cgroup and without one",
  fn: async () => {
    const { env } = await userWithStarter();
    const dir = await realTempDir("toolgate_starter_killed_");
    const seconds = uniqueSeconds();
    await writeFiles(dir, {
      "tools.json": {
        tools: [{ name: "sleeper", command: ["./tools/bin/sleeper"], permissions: "none", timeoutSec: 900 }],
      },
      "tools/bin/sleeper": `#!/bin/sh\nexec sleep ${seconds}\n`,
    });
    await Deno.chmod(join(dir, "tools", "bin", "sleeper"), 0o755);
    const from = (path: string) => pathToFileURL(join(REPO, path)).href;
    try {
      for (const mode of MODES) {
        // A toolgate of its own (a process the test can kill), whose one call runs until it is killed.
        const script = join(dir, `${crypto.randomUUID()}.ts`);
        await Deno.writeTextFile(
          script,
          [
            `import { Executor } from "${from("src/run/executor.ts")}";`,
            `import { loadManifest } from "${from("src/manifest/manifest.ts")}";`,
            `const loaded = await loadManifest(${JSON.stringify(join(dir, "tools.json"))});`,
            "if (!loaded.ok) throw new Error(loaded.errors.join('\\n'));",
            "const run = new Executor({",
            `  manifest: loaded.manifest, env: ${JSON.stringify({ ...env, ...mode })},`,
            `  cwd: ${
              JSON.stringify(dir)
            }, auditDir: null, auditKey: new Uint8Array(32), sandbox: "require",`,
            "});",
            `await run.call("sleeper", "{}");`,
          ].join("\n"),
        );
        const toolgate = new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", "--quiet", "--config", join(REPO, "deno.json"), script],
          cwd: dir,
          clearEnv: true,
          env: { PATH: env.PATH, HOME: env.HOME, DENO_DIR: denoDir() },
          stdin: "null",
          stdout: "null",
          stderr: "null",
        }).spawn();
        let running: number[] = [];
        for (let round = 0; round < 300 && running.length === 0; round++) {
          await sleep(50);
          running = await pgrep(`sleep ${seconds}`);
        }
        assert.equal(running.length, 1, `${JSON.stringify(mode)}: the call's tool never started`);
        toolgate.kill("SIGKILL");
        await toolgate.status;
        assert.deepEqual(
          await goneSoon(seconds),
          [],
          `${JSON.stringify(mode)}: the tool outlived its toolgate`,
        );
      }
    } finally {
      await new Deno.Command("pkill", { args: ["-KILL", "-f", `sleep ${seconds}`] }).output();
    }
  },
});

facilityTest("cc", NO_CC, {
  name:
    "session starter: staying and ending what is left (-s -x), it kills what its program left once it exits " +
    "(a process that left its session, and that one's children), then exits as its program did",
  fn: async () => {
    const { starter } = await userWithStarter();
    const seconds = uniqueSeconds();
    // A process in a session of its own, and one more below a child that outlives the program.
    const left = `setsid sleep ${seconds} < /dev/null > /dev/null 2>&1 & ` +
      `(sh -c 'sleep ${seconds} & exec sleep ${seconds}' < /dev/null > /dev/null 2>&1 &) ; echo done; exit 4`;
    try {
      const ended = await start(starter, ["-s", "-x", "--", "/bin/sh", "-c", left]);
      assert.deepEqual(ended, { code: 4, out: "done\n", err: "" });
      assert.deepEqual(
        await pgrep(`sleep ${seconds}`),
        [],
        "a process the program left outlived the starter",
      );
    } finally {
      await new Deno.Command("pkill", { args: ["-KILL", "-f", `sleep ${seconds}`] }).output();
    }
  },
});

facilityTest("cc", NO_CC, {
  name:
    "session starter: an unconfined call behind it, with a cgroup and without one: a process the tool left " +
    "(setsid) is not alive at its answer, nor at its timeout's",
  fn: () => leaversEnd("off", 6),
});
