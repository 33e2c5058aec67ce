/**
 * The runner with real processes: stdin, caps, timeouts that end whole trees, start failures. Each test runs
 * twice: its processes started on the test's own thread, then from a spawn thread, as `serve` starts them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ProcessRegistry } from "../../src/process/process_tree.ts";
import { runProcess } from "../../src/process/runner.ts";
import type { RunRequest, RunResult } from "../../src/process/run_terms.ts";
import { SpawnThread } from "../../src/process/spawn_thread.ts";
import { GATE_CLOSED_EXIT, GATE_LINE } from "../../src/sandbox/gate.ts";
import {
  baseEnv,
  BIN,
  killLeftovers,
  parsePids,
  scratch,
  waitForFile,
  waitGone,
} from "../executor_helpers.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The thread the running test starts its processes from (in its second run), or none. */
let spawner: SpawnThread | undefined;

/** Registers a test twice: processes started here, then from a spawn thread. */
function test(name: string, fn: () => Promise<void>): void {
  Deno.test(name, fn);
  Deno.test(`${name} (from a spawn thread)`, async () => {
    spawner = new SpawnThread();
    try {
      await fn();
    } finally {
      await spawner.close();
      spawner = undefined;
    }
  });
}

function request(program: string, overrides: Partial<RunRequest> = {}): RunRequest {
  return {
    program: program.startsWith("/") ? program : join(BIN, program),
    args: [],
    env: baseEnv(),
    cwd: BIN,
    stdin: encoder.encode("{}"),
    timeoutMs: 10_000,
    graceMs: 500,
    maxOutputBytes: 1 << 20,
    spawner,
    ...overrides,
  };
}

/** Runs, then checks that every pid the fixture printed on stderr is gone, and cleans up if not. */
async function runAndCheckTree(req: RunRequest): Promise<{ result: RunResult; pids: number[] }> {
  const result = await runProcess(req);
  const pids = parsePids(decoder.decode(result.stderr));
  const alive = await waitGone(pids);
  killLeftovers(alive);
  assert.deepEqual(alive, [], `processes of the tree still alive: ${alive.join(", ")}`);
  return { result, pids };
}

test("runProcess: the arguments reach stdin whole and come back on stdout", async () => {
  const payload = JSON.stringify({ text: "héllo ✓ 👋", n: 1 });
  const result = await runProcess(request("echo_stdin", { stdin: encoder.encode(payload) }));
  assert.equal(result.code, 0);
  assert.equal(result.signal, null);
  assert.deepEqual(decoder.decode(result.stdout), payload);
  assert.deepEqual(result.stdoutBytes, encoder.encode(payload).length);
  assert.equal(result.timedOut, false);
});

test("runProcess: 1 MiB through stdin and back arrives byte for byte", async () => {
  const payload = new Uint8Array(1 << 20);
  for (let i = 0; i < payload.length; i++) payload[i] = 97 + (i * 7) % 26;
  const result = await runProcess(request("echo_stdin", { stdin: payload, maxOutputBytes: 2 << 20 }));
  assert.equal(result.code, 0);
  assert.deepEqual(result.stdout.length, payload.length);
  assert.ok(result.stdout.every((b, i) => b === payload[i]));
});

test("runProcess: a tool that exits without reading 1 MiB of stdin is not a failure", async () => {
  const result = await runProcess(request("no_read", { stdin: new Uint8Array(1 << 20).fill(65) }));
  assert.equal(result.code, 0);
  assert.deepEqual(decoder.decode(result.stdout).trim(), '{"done":true}');
  assert.equal(result.spawnError, undefined);
});

test("runProcess: the child's environment is exactly the one given", async () => {
  const result = await runProcess(request("env_dump", { env: { PATH: "/usr/bin:/bin", ONLY_THIS: "1" } }));
  const env = JSON.parse(decoder.decode(result.stdout));
  // sh itself may add PWD; nothing of the parent's environment may appear.
  delete env.PWD;
  assert.deepEqual(env, { PATH: "/usr/bin:/bin", ONLY_THIS: "1" });
});

test("runProcess: a timeout ends the tool and its grandchild", async () => {
  const { result } = await runAndCheckTree(request("sleeper", { timeoutMs: 300 }));
  assert.equal(result.timedOut, true);
  assert.equal(result.signal, "SIGTERM");
  assert.equal(result.code, null);
  assert.ok(result.durationMs < 5000, `took ${result.durationMs} ms`);
});

test("runProcess: a tree that ignores SIGTERM is SIGKILLed after the grace period", async () => {
  const { result } = await runAndCheckTree(request("stubborn", { timeoutMs: 300, graceMs: 300 }));
  assert.equal(result.timedOut, true);
  assert.equal(result.signal, "SIGKILL");
  assert.ok(result.durationMs >= 550, `SIGKILL came before the grace period ended (${result.durationMs} ms)`);
  assert.ok(result.durationMs < 5000, `took ${result.durationMs} ms`);
});

test("runProcess: a grandchild left behind by a tool that exited is ended with the call", async () => {
  const { result } = await runAndCheckTree(request("orphaner"));
  assert.equal(result.code, 0);
  assert.equal(result.timedOut, false);
  assert.deepEqual(JSON.parse(decoder.decode(result.stdout)), { left: "a grandchild" });
});

test("runProcess: an abort ends the tree and says so", async () => {
  await using dir = await scratch();
  const controller = new AbortController();
  const running = runProcess(request("sleeper_pidfile", { cwd: dir.path, signal: controller.signal }));
  // The tree is whole once the tool wrote its pids (itself and its grandchild): abort then, not after a guess.
  const pids = parsePids(await waitForFile(join(dir.path, "pids")));
  controller.abort();
  const result = await running;
  const alive = await waitGone(pids);
  killLeftovers(alive);
  assert.deepEqual(alive, [], `processes of the tree still alive: ${alive.join(", ")}`);
  assert.equal(result.aborted, true);
  assert.equal(result.timedOut, false);
});

test("runProcess: an abort right after the start still ends the tool", async () => {
  // The tool may not lead its own group yet (setsid(1) has not run): the signal must reach it anyway.
  for (let i = 0; i < 5; i++) {
    const controller = new AbortController();
    const running = runProcess(request("sleeper", { signal: controller.signal, timeoutMs: 5000 }));
    controller.abort();
    const result = await running;
    assert.equal(result.aborted, true);
    assert.equal(result.timedOut, false, "the abort was lost; the timeout ended the tool");
    const pids = /pids (\d+) (\d+)/.exec(decoder.decode(result.stderr));
    if (pids) killLeftovers(await waitGone([Number(pids[1]), Number(pids[2])]));
  }
});

test("runProcess: an already-aborted signal starts nothing", async () => {
  const controller = new AbortController();
  controller.abort();
  const result = await runProcess(request("echo_stdin", { signal: controller.signal }));
  assert.equal(result.aborted, true);
  assert.equal(result.code, null);
});

test("runProcess: stdout past the cap stops the tool; the kept bytes are exactly the cap", async () => {
  const result = await runProcess(request("flood", { maxOutputBytes: 64 * 1024 }));
  assert.equal(result.overflow, "stdout");
  assert.deepEqual(result.stdout.length, 64 * 1024);
  assert.ok(result.stdoutBytes > 64 * 1024);
  assert.equal(result.timedOut, false);
});

test("runProcess: output of exactly the cap is not an overflow", async () => {
  const result = await runProcess(request("flood", { args: ["4096"], maxOutputBytes: 4096 }));
  assert.equal(result.overflow, undefined);
  assert.equal(result.code, 0);
  assert.equal(result.stdout.length, 4096);
});

test("runProcess: stderr past the cap stops the tool too", async () => {
  const result = await runProcess(
    request("/bin/sh", { args: ["-c", "yes 'err err err' >&2"], maxOutputBytes: 10_000 }),
  );
  assert.equal(result.overflow, "stderr");
  assert.equal(result.stderr.length, 10_000);
});

test("runProcess: a flood that ignores SIGTERM is still stopped, within the grace period", async () => {
  const result = await runProcess(request("flood_stubborn", { maxOutputBytes: 64 * 1024, graceMs: 300 }));
  assert.equal(result.overflow, "stdout");
  assert.deepEqual(result.stdout.length, 64 * 1024);
  assert.ok(result.durationMs < 5000, `took ${result.durationMs} ms`);
});

test("runProcess: a descendant that leaves the group cannot hold the call open", async () => {
  const result = await runProcess(request("escapee", { graceMs: 300 }));
  const { escapee } = JSON.parse(decoder.decode(result.stdout));
  try {
    assert.equal(result.code, 0);
    assert.equal(result.escaped, true);
    assert.ok(result.durationMs < 5000, `took ${result.durationMs} ms`);
  } finally {
    // It left the group, so only a pid namespace (the sandbox) could have ended it; end it here.
    killLeftovers([escapee]);
  }
});

test("runProcess: a busy event loop never cuts off output the tool already printed", async () => {
  // Blocks the event loop for 100 ms every 10 ms, far longer than the 10 ms grace period: the wait for the pipes
  // to close must not mistake reads queued behind it for a descendant holding them open.
  const busy = setInterval(() => {
    const until = performance.now() + 100;
    while (performance.now() < until) { /* busy */ }
  }, 10);
  try {
    const results = await Promise.all(
      Array.from({ length: 40 }, () => runProcess(request("flood", { args: ["65000"], graceMs: 10 }))),
    );
    assert.deepEqual(results.map((r) => r.stdout.length).filter((n) => n !== 65000), []);
    assert.equal(results.filter((r) => r.escaped).length, 0);
  } finally {
    clearInterval(busy);
  }
});

test("runProcess: a missing program is a spawn error naming it", async () => {
  const result = await runProcess(request("/nonexistent/tool"));
  assert.equal(result.spawnError?.reason, "not_found");
  assert.match(result.spawnError!.message, /\/nonexistent\/tool/);
});

test("runProcess: a file without the execute bit and a directory cannot start", async () => {
  await using dir = await scratch();
  const plain = join(dir.path, "plain");
  await Deno.writeTextFile(plain, "#!/bin/sh\necho hi\n");
  await Deno.chmod(plain, 0o644);
  for (const program of [plain, dir.path]) {
    const result = await runProcess(request(program));
    assert.deepEqual(result.spawnError?.reason, "not_executable", program);
    assert.ok(result.spawnError!.message.includes(program), result.spawnError!.message);
  }
});

test("runProcess: a script whose interpreter is missing cannot start, naming the script", async () => {
  await using dir = await scratch();
  const script = join(dir.path, "bad_interpreter");
  await Deno.writeTextFile(script, "#!/nonexistent/interpreter\n", { mode: 0o755 });
  const result = await runProcess(request(script));
  assert.equal(result.spawnError?.reason, "not_executable");
  assert.ok(result.spawnError?.message.includes(script), result.spawnError?.message);
});

test("runProcess: a missing working directory is not reported as a missing program", async () => {
  const result = await runProcess(request("echo_stdin", { cwd: "/nonexistent/cwd" }));
  assert.ok(
    result.spawnError?.message.includes("/nonexistent/cwd"),
    result.spawnError?.message ?? "no error",
  );
});

test("runProcess: a timeout too long for a timer does not fire at once", async () => {
  const result = await runProcess(request("/bin/sleep", { args: ["0.2"], timeoutMs: 30 * 24 * 3600 * 1000 }));
  assert.equal(result.timedOut, false);
  assert.equal(result.code, 0);
});

test("runProcess: a killed-by-signal exit reports the signal, not a code", async () => {
  const result = await runProcess(request("self_signal", { args: ["SEGV"] }));
  assert.equal(result.signal, "SIGSEGV");
  assert.equal(result.code, null);
  assert.equal(result.timedOut, false);
});

test("ProcessRegistry: tracks a running tree and forgets it after", async () => {
  const registry = new ProcessRegistry(300, () => {});
  const spawned = Promise.withResolvers<void>();
  const running = runProcess(
    request("/bin/sleep", { args: ["0.3"], registry, onSpawn: () => spawned.resolve() }),
  );
  await spawned.promise;
  assert.equal(registry.size, 1);
  await running;
  assert.equal(registry.size, 0);
});

test("ProcessRegistry: endAll ends every running tree, SIGTERM-proof ones included", async () => {
  const registry = new ProcessRegistry(300, () => {});
  await using plain = await scratch();
  await using stubborn = await scratch();
  const runs = [
    runProcess(request("sleeper_pidfile", { registry, cwd: plain.path })),
    runProcess(request("sleeper_pidfile", { args: ["stubborn"], registry, cwd: stubborn.path })),
  ];
  // Both trees are whole (and the stubborn one ignores SIGTERM) once each tool wrote its pids.
  const pids = [
    ...parsePids(await waitForFile(join(plain.path, "pids"))),
    ...parsePids(await waitForFile(join(stubborn.path, "pids"))),
  ];
  await registry.endAll();
  const results = await Promise.all(runs);
  const alive = await waitGone(pids);
  killLeftovers(alive);
  assert.deepEqual(alive, []);
  assert.deepEqual(results.map((r) => r.signal), ["SIGTERM", "SIGKILL"]);
});

test("runProcess: a start waiting for its go gets its stdin only after a yes, its limits counted from then", async () => {
  // A gated start (src/sandbox/gate.ts) of echo_stdin: it reads its gate line, then becomes the tool.
  const gated = (goAhead: Promise<boolean>) =>
    runProcess(request("/bin/sh", {
      args: ["-c", `${GATE_LINE}\nexec "$@"`, "sh", join(BIN, "echo_stdin")],
      stdin: encoder.encode("\n{}"),
      // Shorter than the wait for the go: a limit counted from the start would end the call before its go.
      timeoutMs: 300,
      idleTimeoutMs: 300,
      goAhead,
    }));
  const yes = Promise.withResolvers<boolean>();
  const given = gated(yes.promise);
  await new Promise((resolve) => setTimeout(resolve, 600));
  yes.resolve(true);
  const ran = await given;
  assert.equal(ran.timedOut, false);
  assert.equal(ran.idleTimedOut, false);
  assert.equal(ran.code, 0);
  assert.equal(decoder.decode(ran.stdout), "{}");
  // No go: stdin closes unwritten, and the start leaves at its gate.
  const refused = await gated(Promise.resolve(false));
  assert.equal(refused.code, GATE_CLOSED_EXIT);
  assert.equal(refused.stdoutBytes, 0);
});
