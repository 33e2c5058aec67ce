// The sandbox: tools confined by bubblewrap cannot write outside their writable paths, reach the network when
// their profile says no, or leave a process behind; without bubblewrap, `require` refuses and `auto` warns.
import { findSessionStart } from "../../src/sandbox/session_start.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Envelope } from "../../src/contract.ts";
import { Executor } from "../../src/run/executor.ts";
import { type ExecutorOptions } from "../../src/run/call_options.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { type Manifest } from "../../src/manifest/manifest_types.ts";
import { confinedTest, SUPPORT } from "../security/helpers.ts";
import { detectCgroups } from "../../src/sandbox/cgroups.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/sandbox/tools.json", import.meta.url));

async function fixtureManifest(): Promise<Manifest> {
  const loaded = await loadManifest(FIXTURE);
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  return loaded.manifest;
}

async function executor(cwd: string, options: Partial<ExecutorOptions> = {}): Promise<Executor> {
  return new Executor({
    manifest: await fixtureManifest(),
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" },
    cwd,
    auditDir: null,
    // A fixed digest key: no test makes one in the real home.
    auditKey: new Uint8Array(32),
    sandbox: "require",
    ...options,
  });
}

function result(envelope: Envelope): Record<string, unknown> {
  assert.ok(envelope.ok, JSON.stringify(envelope));
  return envelope.result as Record<string, unknown>;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

confinedTest("a workspace tool writes in its cwd but nowhere else", async () => {
  const workspace = await Deno.makeTempDir();
  const outside = await Deno.makeTempDir();
  const run = await executor(workspace);
  assert.deepEqual(result(await run.call("writer_workspace", JSON.stringify({ path: "inside.txt" }))), {
    wrote: true,
  });
  assert.equal(await Deno.readTextFile(join(workspace, "inside.txt")), "hello");
  const target = join(outside, "outside.txt");
  assert.deepEqual(result(await run.call("writer_workspace", JSON.stringify({ path: target }))), {
    wrote: false,
  });
  assert.equal(await exists(target), false);
});

confinedTest("a tool without a profile gets the default one: the workspace", async () => {
  const workspace = await Deno.makeTempDir();
  const outside = await Deno.makeTempDir();
  const run = await executor(workspace);
  assert.deepEqual(result(await run.call("writer_default", JSON.stringify({ path: "a.txt" }))), {
    wrote: true,
  });
  const target = join(outside, "b.txt");
  assert.deepEqual(result(await run.call("writer_default", JSON.stringify({ path: target }))), {
    wrote: false,
  });
  assert.equal(await exists(target), false);
});

confinedTest(
  "a readOnly tool that names no profile gets none: its word is held, it writes nowhere",
  async () => {
    const workspace = await Deno.makeTempDir();
    const run = await executor(workspace);
    assert.deepEqual(result(await run.call("writer_readonly", JSON.stringify({ path: "x.txt" }))), {
      wrote: false,
    });
    assert.equal(await exists(join(workspace, "x.txt")), false, "a readOnly tool wrote the workspace");
  },
);

confinedTest("the none profile cannot write even in its cwd, and its /tmp is private", async () => {
  const workspace = await Deno.makeTempDir();
  const run = await executor(workspace);
  assert.deepEqual(result(await run.call("writer_none", JSON.stringify({ path: "x.txt" }))), {
    wrote: false,
  });
  assert.equal(await exists(join(workspace, "x.txt")), false);
  const marker = `/tmp/toolgate-private-${crypto.randomUUID()}`;
  assert.deepEqual(result(await run.call("writer_none", JSON.stringify({ path: marker }))), { wrote: true });
  assert.equal(await exists(marker), false, "a write to the sandbox's /tmp must not reach the host's");
});

confinedTest("network: refused when the profile says no, reached when it says yes", async () => {
  let connections = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    connections++;
    return new Response("hi");
  });
  try {
    const port = server.addr.port;
    const run = await executor(await Deno.makeTempDir());
    assert.deepEqual(result(await run.call("probe_offline", JSON.stringify({ port }))), { connected: false });
    assert.equal(connections, 0);
    assert.deepEqual(result(await run.call("probe_online", JSON.stringify({ port }))), { connected: true });
    assert.deepEqual(result(await run.call("probe_inline", JSON.stringify({ port }))), { connected: true });
  } finally {
    await server.shutdown();
  }
});

async function survivors(pattern: string): Promise<string[]> {
  const out = await new Deno.Command("pgrep", { args: ["-f", pattern], stdout: "piped", stderr: "null" })
    .output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((line) => line.trim() !== "");
}

async function reap(pattern: string): Promise<void> {
  await new Deno.Command("pkill", { args: ["-KILL", "-f", pattern], stdout: "null", stderr: "null" })
    .output();
}

confinedTest("a grandchild that escaped with setsid is gone after a confined timeout", async () => {
  // A sleep length no other process on the machine uses, so pgrep finds exactly this tree.
  const seconds = `${300 + Math.floor(Math.random() * 600)}.${Math.floor(Math.random() * 1000)}`;
  const pattern = `sleep ${seconds}`;
  const run = await executor(await Deno.makeTempDir(), { graceMs: 200 });
  try {
    const envelope = await run.call("escaper", JSON.stringify({ seconds }));
    assert.equal(envelope.ok, false);
    assert.equal(!envelope.ok && envelope.kind, "timeout");
    assert.deepEqual(await survivors(pattern), []);
  } finally {
    await reap(pattern);
  }
});

confinedTest(
  "a confined tool that exits leaving a setsid grandchild: none is alive when its call answers",
  async () => {
    // bwrap exits as soon as the tool has (its namespace's init tells it the tool's status), while that init, which
    // holds the grandchild, is only then killed as its parent dies: the answer waits for the call's cgroup to be
    // empty, not for bwrap. Calls in a row, as `serve` makes them (the resident helper asks the cgroup), each looked
    // at the moment it answered.
    const seconds = `${300 + Math.floor(Math.random() * 600)}.${Math.floor(Math.random() * 1000)}`;
    const pattern = `sleep ${seconds}`;
    const run = await executor(await Deno.makeTempDir(), { residentHelpers: true });
    try {
      for (let call = 0; call < 12; call++) {
        assert.deepEqual(result(await run.call("leaver", JSON.stringify({ seconds }))), { left: true });
        assert.deepEqual(await survivors(pattern), [], `call ${call}: the grandchild outlived its call`);
      }
    } finally {
      await run.close();
      await reap(pattern);
    }
  },
);

Deno.test("unconfined, the same setsid grandchild ends with the call where toolgate makes cgroups or has its session starter, and escapes the group kill where it has neither", async () => {
  const seconds = `${300 + Math.floor(Math.random() * 600)}.${Math.floor(Math.random() * 1000)}`;
  const pattern = `sleep ${seconds}`;
  const run = await executor(await Deno.makeTempDir(), { graceMs: 200, sandbox: "off" });
  // A cgroup holds the unconfined call's tree where toolgate may make one, and the session starter (staying, it
  // kills what the tool left) where it is built; without either, only its process group does.
  const env = { HOME: Deno.env.get("HOME") ?? "/root" };
  const held = detectCgroups(Deno.env.toObject()) !== undefined || findSessionStart(env) !== undefined;
  try {
    const envelope = await run.call("escaper", JSON.stringify({ seconds }));
    assert.equal(!envelope.ok && envelope.kind, "timeout");
    assert.equal(
      (await survivors(pattern)).length,
      held ? 0 : 1,
      held
        ? "the escaped grandchild outlived its call's cgroup or session starter"
        : "the escaped grandchild should still be running",
    );
  } finally {
    await reap(pattern);
  }
});

confinedTest("the profile's file-size limit holds inside the sandbox", async () => {
  assert.ok(SUPPORT.ok && SUPPORT.prlimit, "prlimit should be present inside the sandbox here");
  const workspace = await Deno.makeTempDir();
  const run = await executor(workspace);
  assert.deepEqual(result(await run.call("big_file", "{}")), { complete: false });
  assert.ok((await Deno.stat(join(workspace, "big.bin"))).size <= 1024);
});

confinedTest("the profile's CPU-time limit ends a tool that spins, long before its timeout", async () => {
  const run = await executor(await Deno.makeTempDir());
  const started = performance.now();
  const envelope = await run.call("spin", "{}");
  assert.equal(envelope.ok, false);
  assert.notEqual(!envelope.ok && envelope.kind, "timeout", JSON.stringify(envelope));
  assert.ok(performance.now() - started < 15_000, "ended by the 1 s CPU limit, not the 20 s timeout");
});

Deno.test("require without bubblewrap answers unavailable, not retryable, and runs nothing", async () => {
  const workspace = await Deno.makeTempDir();
  const run = await executor(workspace, { bwrap: "/nonexistent/bwrap", sandbox: "require" });
  const envelope = await run.call("writer_workspace", JSON.stringify({ path: "never.txt" }));
  assert.equal(envelope.ok, false);
  assert.equal(!envelope.ok && envelope.kind, "unavailable");
  assert.equal(!envelope.ok && envelope.retryable, false);
  assert.match(!envelope.ok ? envelope.message : "", /--sandbox require/);
  assert.equal(await exists(join(workspace, "never.txt")), false);
});

Deno.test("auto without bubblewrap runs a tool without side effects unconfined, with a warning in the envelope and the audit line", async () => {
  const workspace = await Deno.makeTempDir();
  const auditDir = join(workspace, "audit");
  const run = await executor(workspace, { bwrap: "/nonexistent/bwrap", sandbox: "auto", auditDir });
  const envelope = await run.call("writer_none", JSON.stringify({ path: "ran.txt" }));
  assert.ok(envelope.ok);
  assert.match(envelope.warnings?.[0] ?? "", /^not confined: /);
  const [line] =
    (await Deno.readTextFile(join(auditDir, (await Array.fromAsync(Deno.readDir(auditDir)))[0].name)))
      .trim().split("\n");
  const record = JSON.parse(line);
  assert.equal(record.sandbox, "none");
  assert.match(record.warnings[0], /^not confined: /);
});

Deno.test("off says so in every audit line, and in no envelope", async () => {
  const workspace = await Deno.makeTempDir();
  const auditDir = join(workspace, "audit");
  const run = await executor(workspace, { sandbox: "off", auditDir });
  for (const name of ["writer_workspace", "writer_none"]) {
    const envelope = await run.call(name, JSON.stringify({ path: `${name}.txt` }));
    assert.ok(envelope.ok && envelope.warnings === undefined);
  }
  const file = join(auditDir, (await Array.fromAsync(Deno.readDir(auditDir)))[0].name);
  const records = (await Deno.readTextFile(file)).trim().split("\n").map((line) => JSON.parse(line));
  assert.equal(records.length, 2);
  for (const record of records) {
    assert.deepEqual(record.warnings, ["not confined: the sandbox is off (--sandbox off)"]);
  }
});

confinedTest("a confined tool that does not exist is unavailable, naming its path", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(join(dir, "tools", "bin"), { recursive: true });
  await Deno.writeTextFile(
    join(dir, "tools.json"),
    JSON.stringify({ tools: [{ name: "ghost", command: ["./tools/bin/ghost"] }] }),
  );
  const loaded = await loadManifest(join(dir, "tools.json"));
  assert.ok(loaded.ok);
  const run = new Executor({
    manifest: loaded.manifest,
    env: { PATH: "/usr/bin:/bin" },
    cwd: dir,
    auditDir: null,
    sandbox: "require",
  });
  const envelope = await run.call("ghost", "{}");
  assert.equal(!envelope.ok && envelope.kind, "unavailable");
  assert.equal(!envelope.ok && envelope.retryable, false);
  assert.match(!envelope.ok ? envelope.message : "", /tools\/bin\/ghost/);
});
