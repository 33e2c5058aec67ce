// How a call's tree ends through its cgroup (src/sandbox/cgroup_end.ts), on the kernel's own files: under cgroup
// v2 (`cgroup.kill`, `cgroup.events`) and v1 (`cgroup.procs` alone), every process the cgroup holds ends, the ones
// that left their process group and session (setsid) included, and the end waits until the cgroup is empty; a
// call cgroup whose toolgate is gone is emptied and removed by the next one.
import assert from "node:assert/strict";
import { cgroupTreeEnd, reapLeftCgroups } from "../../src/sandbox/cgroup_end.ts";
import { CGROUP_ENV, type CgroupSupport, detectCgroups } from "../../src/sandbox/cgroups.ts";
import { CgroupWatch } from "../../src/sandbox/cgroup_watch.ts";
import { hostTest } from "../security/helpers.ts";
import { pgrep, uniqueSleep, until, within } from "../processes.ts";
import { killLeftovers } from "../executor_helpers.ts";

/** A folder for this test's cgroups under a hierarchy's mount, or why there is none writable here. */
function place(mount: string): { base?: string; missing?: string } {
  const base = `${mount}/toolgate-test-${Deno.pid}`;
  const made = new Deno.Command("mkdir", { args: ["-p", base], stderr: "null" }).outputSync();
  return made.success
    ? { base }
    : { missing: `cannot make a cgroup under ${mount} (root, or a delegated cgroup)` };
}

const V2 = place("/sys/fs/cgroup/unified");
const V1 = place("/sys/fs/cgroup/pids");

/** Runs `script` in sh. */
async function sh(script: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("sh", { args: ["-c", script, "sh", ...args], stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout);
}

/**
 * Starts, inside the cgroup `dir`, a tree of three sleeps: one of the first process, one in its process group,
 * one in a session of its own (setsid); resolves once all three run.
 */
async function treeIn(dir: string, seconds: string): Promise<Deno.ChildProcess> {
  await sh('mkdir -p "$1"', dir);
  const child = new Deno.Command("sh", {
    args: [
      "-c",
      'echo $$ > "$1/cgroup.procs" && { setsid sleep "$2" & sleep "$2" & exec sleep "$2"; }',
      "sh",
      dir,
      seconds,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  await until(async () => (await pgrep(`sleep ${seconds}`)).length === 3, "the three sleeps running");
  return child;
}

for (const [version, found] of [[2, V2], [1, V1]] as const) {
  hostTest(
    `cgroup end (v${version}): a settle ends every process of the cgroup, setsid ones included, and waits until it is empty`,
    found.missing,
    async () => {
      const support: CgroupSupport = { version, pids: found.base, shell: "/bin/sh" };
      const seconds = uniqueSleep(3500);
      const dir = `${found.base}/call-${Deno.pid}-1`;
      try {
        const child = await treeIn(dir, seconds);
        await cgroupTreeEnd(support, `call-${Deno.pid}-1`).settle(child.pid);
        // Resolved only once nobody is left: no wait here.
        assert.equal(await sh('cat "$1/cgroup.procs"', dir), "");
        if (version === 2) assert.match(await sh('cat "$1/cgroup.events"', dir), /populated 0/);
        assert.deepEqual(await pgrep(`sleep ${seconds}`), []);
        assert.equal((await child.status).signal, "SIGKILL");
      } finally {
        killLeftovers(await pgrep(`sleep ${seconds}`));
        await sh('rmdir "$1" 2>/dev/null; exit 0', dir);
      }
    },
  );

  hostTest(
    `cgroup end (v${version}): with the resident watch, a settle of a cgroup a tool left a tree in still ends it all; an empty one's is at once`,
    found.missing,
    async () => {
      const support: CgroupSupport = { version, pids: found.base, shell: "/bin/sh" };
      const seconds = uniqueSleep(3800);
      const dir = `${found.base}/call-${Deno.pid}-4`;
      await using watch = new CgroupWatch("/bin/sh");
      try {
        const child = await treeIn(dir, seconds);
        assert.equal(await watch.empty(dir), false);
        await cgroupTreeEnd(support, `call-${Deno.pid}-4`, watch).settle(child.pid);
        assert.equal(await sh('cat "$1/cgroup.procs"', dir), "");
        assert.deepEqual(await pgrep(`sleep ${seconds}`), []);
        assert.equal((await child.status).signal, "SIGKILL");
        // Emptied: the watch says so, and the next settle has nothing to do.
        assert.equal(await watch.empty(dir), true);
        await cgroupTreeEnd(support, `call-${Deno.pid}-4`, watch).settle(child.pid);
      } finally {
        killLeftovers(await pgrep(`sleep ${seconds}`));
        await sh('rmdir "$1" 2>/dev/null; exit 0', dir);
      }
    },
  );

  hostTest(
    `cgroup end (v${version}): a signal sent before the call's first process joined its cgroup still ends it`,
    found.missing,
    async () => {
      const support: CgroupSupport = { version, pids: found.base, shell: "/bin/sh" };
      const seconds = uniqueSleep(3700);
      const dir = `${found.base}/call-${Deno.pid}-3`;
      try {
        await sh('mkdir -p "$1"', dir);
        for (const signal of ["SIGTERM", "SIGKILL"] as const) {
          // The first process as the cgroup wrapper's shell is before it joins (slow under load): not in the
          // cgroup yet, it would then join it and become the tool.
          const child = new Deno.Command("sh", {
            args: ["-c", 'read -r go; echo $$ > "$1/cgroup.procs" && exec sleep "$2"', "sh", dir, seconds],
            stdin: "piped",
            stdout: "null",
            stderr: "null",
          }).spawn();
          await cgroupTreeEnd(support, `call-${Deno.pid}-3`).signal(child.pid, signal);
          // Before the fix the empty cgroup was all it looked at: the shell waited on, and a close waited forever.
          const status = await within(child.status, 10_000, `the first process's end after ${signal}`);
          assert.equal(status.signal, signal);
          await child.stdin.close().catch(() => {});
        }
        assert.deepEqual(await pgrep(`sleep ${seconds}`), []);
      } finally {
        killLeftovers(await pgrep(`sleep ${seconds}`));
        await sh('rmdir "$1" 2>/dev/null; exit 0', dir);
      }
    },
  );

  hostTest(
    `cgroup end (v${version}): the call cgroups of a toolgate that is gone are emptied and removed, a live one's kept`,
    found.missing,
    async () => {
      const support: CgroupSupport = { version, pids: found.base, shell: "/bin/sh" };
      const seconds = uniqueSleep(3600);
      // A pid no process has (past the kernel's largest), and this process's own.
      const gone = `${found.base}/call-4194305-1`;
      const live = `${found.base}/call-${Deno.pid}-2`;
      try {
        const left = await treeIn(gone, seconds);
        await sh('mkdir -p "$1"', live);
        await reapLeftCgroups(support);
        assert.deepEqual(await pgrep(`sleep ${seconds}`), [], "what the dead run left runs on");
        assert.equal((await left.status).signal, "SIGKILL");
        assert.equal(await sh('[ -d "$1" ] && echo left', gone), "", "the dead run's cgroup is left");
        assert.equal(await sh('[ -d "$1" ] && echo kept', live), "kept\n", "a live run's cgroup went");
      } finally {
        killLeftovers(await pgrep(`sleep ${seconds}`));
        await sh('rmdir "$1" "$2" 2>/dev/null; exit 0', gone, live);
      }
    },
  );
}

hostTest(
  "cgroup probe (v1): the sweep of call cgroups older than a minute removes a gone toolgate's, never a live one's idle slot",
  V1.missing,
  async () => {
    // The probe of another toolgate on the same machine (a test, a second `serve`) sweeps the shared folder: a
    // live run's slot, made more than a minute ago and idle between two calls, went, and the next call found it
    // removed between its check and its join ("cannot set up the cgroup" under load).
    const own = `${V1.base!.slice("/sys/fs/cgroup/pids".length)}/probe`;
    const dir = `/sys/fs/cgroup/pids${own}/toolgate`;
    const live = `${dir}/call-${Deno.pid}-test-1`;
    const gone = `${dir}/call-4194305-test-1`;
    try {
      await sh('mkdir -p "$1" "$2" && touch -d "5 minutes ago" "$1" "$2"', live, gone);
      const support = detectCgroups({ [CGROUP_ENV]: `8:pids:${own}\n` });
      assert.equal(support?.pids, dir);
      assert.equal(await sh('[ -d "$1" ] && echo kept', live), "kept\n", "a live run's idle slot was swept");
      assert.equal(await sh('[ -d "$1" ] && echo left', gone), "", "a gone run's slot is left");
    } finally {
      await sh(
        'rmdir "$1" "$2" "$3" "$4" 2>/dev/null; exit 0',
        live,
        gone,
        dir,
        dir.slice(0, -"/toolgate".length),
      );
    }
  },
);

// The test's own folders go once every test of this file has run.
globalThis.addEventListener("unload", () => {
  for (const found of [V2, V1]) {
    if (found.base !== undefined) {
      new Deno.Command("rmdir", { args: [found.base], stderr: "null" }).outputSync();
    }
  }
});

Deno.test("cgroup slots: two launchers of one process never hold the same slot", async () => {
  const { CgroupSlots } = await import("../../src/sandbox/cgroups.ts");
  const first = new CgroupSlots();
  const second = new CgroupSlots();
  const taken = [first.take(), second.take(), first.take(), second.take()];
  assert.equal(new Set(taken).size, taken.length, taken.join(" "));
  first.give(taken[0]);
  assert.equal(second.take(), taken[0], "a freed slot is reused, by whichever launcher asks next");
});

Deno.test("cgroup slots: two isolates of one process (workers, deno test --parallel) never hold the same slot", async () => {
  const { CgroupSlots } = await import("../../src/sandbox/cgroups.ts");
  const module = new URL("../../src/sandbox/cgroups.ts", import.meta.url).href;
  const source = `import { CgroupSlots } from ${
    JSON.stringify(module)
  };\nself.postMessage(new CgroupSlots().take());\n`;
  const url = URL.createObjectURL(new Blob([source], { type: "application/javascript" }));
  const worker = new Worker(url, { type: "module" });
  try {
    const theirs = await new Promise<string>((resolve) => worker.onmessage = (event) => resolve(event.data));
    const ours = new CgroupSlots().take();
    assert.equal(theirs.split("-")[1], ours.split("-")[1], "the same process");
    assert.notEqual(theirs, ours);
  } finally {
    worker.terminate();
    URL.revokeObjectURL(url);
  }
});
