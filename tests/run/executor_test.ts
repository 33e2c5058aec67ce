/** The executor's pipeline with real processes (sandbox off): environment, stdin, trees, load, memory. */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Envelope, FailureEnvelope } from "../../src/contract.ts";
import { failure } from "../../src/contract.ts";
import { ProcessRegistry } from "../../src/process/process_tree.ts";
import {
  alivePids,
  baseEnv,
  envWritten,
  executorFor,
  executorOf,
  FIXTURES,
  isAlive,
  killLeftovers,
  manifestOf,
  parsePids,
  peakMemory,
  readAudit,
  scratch,
  waitForFile,
  waitGone,
} from "../executor_helpers.ts";

function resultOf(envelope: Envelope): unknown {
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  return envelope.ok ? envelope.result : undefined;
}

/** `NAME=VALUE` lines of `/usr/bin/env` (no shell in between) as an object. */
function envFrom(envelope: Envelope): Record<string, string> {
  const text = (resultOf(envelope) as { text: string }).text;
  return Object.fromEntries(
    text.trim().split("\n").map((line) => {
      const at = line.indexOf("=");
      return [line.slice(0, at), line.slice(at + 1)];
    }),
  );
}

Deno.test("executor: the child sees only PATH, HOME and the passthrough names that are set", async () => {
  await using dir = await scratch();
  // Written to a file: a passthrough value is a secret, taken out of the envelope (issue 11).
  const command = ["/bin/sh", "-c", "exec /usr/bin/env > env.txt"];
  const executor = executorOf({ command, envPassthrough: ["MY_TOKEN", "tz", "NOT_SET"] }, {
    cwd: dir.path,
    env: baseEnv({ MY_TOKEN: "tok-1234", OTHER_SECRET: "nope", LANG: "C.UTF-8", OPENAI_API_KEY: "sk-x" }),
  });
  resultOf(await executor.call("t", "{}"));
  const env = await envWritten(dir.path);
  delete env.PWD; // sh's own
  assert.deepEqual(env, { PATH: baseEnv().PATH, HOME: baseEnv().HOME, MY_TOKEN: "tok-1234" });
  const withTz = executorOf({ command, envPassthrough: ["tz"] }, {
    cwd: dir.path,
    env: baseEnv({ TZ: "Europe/Helsinki" }),
  });
  resultOf(await withTz.call("t", "{}"));
  assert.equal((await envWritten(dir.path)).TZ, "Europe/Helsinki");
});

Deno.test("executor: without PATH in the parent the child still gets a PATH; without HOME, none", async () => {
  const executor = executorOf({ command: ["/usr/bin/env"] }, { env: { SOMETHING: "x" } });
  const env = envFrom(await executor.call("t", "{}"));
  assert.deepEqual(Object.keys(env), ["PATH"]);
  assert.match(env.PATH, /\/usr\/bin/);
});

Deno.test("executor: the fixture manifest's env_dump sees its allowlist only", async () => {
  const { loadManifest } = await import("../../src/manifest/manifest.ts");
  const loaded = await loadManifest(join(FIXTURES, "manifest.json"));
  assert.ok(loaded.ok);
  const executor = executorFor(loaded.manifest, {
    env: baseEnv({ MY_TOKEN: "abc-123", TZ: "UTC", AWS_SECRET_ACCESS_KEY: "never" }),
  });
  const env = resultOf(await executor.call("env_dump", "{}")) as Record<string, string>;
  delete env.PWD; // sh's own
  // MY_TOKEN's value is a secret, taken out of the envelope (issue 11); TZ's is too short to be one.
  assert.deepEqual(env, { PATH: baseEnv().PATH, HOME: baseEnv().HOME, MY_TOKEN: "[REDACTED]", TZ: "UTC" });
});

Deno.test("executor: the working directory is the executor's cwd", async () => {
  await using dir = await scratch();
  const executor = executorOf({ command: ["/bin/pwd"] }, { cwd: dir.path });
  assert.equal((resultOf(await executor.call("t", "{}")) as { text: string }).text.trim(), dir.path);
});

Deno.test("executor: an unknown tool is tool_not_found, without a list of near names", async () => {
  const executor = executorFor(manifestOf([
    { name: "get_time", command: ["/bin/cat"] },
    { name: "get_times", command: ["/bin/cat"] },
  ]));
  const envelope = await executor.call("get_tim", "{}") as FailureEnvelope;
  assert.equal(envelope.kind, "tool_not_found");
  assert.equal(envelope.retryable, false);
  assert.equal(envelope.tool, "get_tim");
  assert.ok(!envelope.message.includes("get_time"), envelope.message);
});

Deno.test("executor: 1,000 calls, 32 at a time, each payload arrives whole and matching", async () => {
  const executor = executorOf({ command: ["/bin/cat"] }, { graceMs: 2000 });
  const payload = (i: number) => ({ i, pad: `${i}:`.repeat(i % 100 === 0 ? 40_000 : 1 + (i % 37)) });
  let next = 0;
  const mismatches: number[] = [];
  const worker = async () => {
    while (next < 1000) {
      const i = next++;
      const envelope = await executor.call("t", JSON.stringify(payload(i)));
      if (!envelope.ok || JSON.stringify(envelope.result) !== JSON.stringify(payload(i))) mismatches.push(i);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  assert.deepEqual(mismatches, []);
});

Deno.test("executor: a tool that exits without reading 1 MiB of arguments succeeds", async () => {
  const executor = executorOf({ command: ["./tools/bin/no_read"] });
  const args = JSON.stringify({ blob: "z".repeat(1 << 20) });
  assert.deepEqual(resultOf(await executor.call("t", args)), { done: true });
});

/** Runs `sleeper_pidfile` (or its stubborn form) to its timeout; returns the envelope and the tree's pids. */
async function timeoutTree(
  stubborn: boolean,
): Promise<{ envelope: FailureEnvelope; pids: number[]; ms: number }> {
  await using dir = await scratch();
  const executor = executorOf({
    command: ["./tools/bin/sleeper_pidfile", ...(stubborn ? ["stubborn"] : [])],
    timeoutSec: 1,
  }, { cwd: dir.path, graceMs: 300 });
  const started = performance.now();
  const envelope = await executor.call("t", "{}") as FailureEnvelope;
  const ms = performance.now() - started;
  const pids = parsePids(await Deno.readTextFile(join(dir.path, "pids")));
  return { envelope, pids, ms };
}

for (const stubborn of [false, true]) {
  Deno.test(`executor: after a timeout no process of the tree is alive (${stubborn ? "SIGTERM ignored" : "grandchild"})`, async () => {
    const { envelope, pids, ms } = await timeoutTree(stubborn);
    const alive = await waitGone(pids);
    killLeftovers(alive);
    assert.deepEqual(alive, [], `alive after the call: ${alive.join(", ")}`);
    assert.equal(envelope.kind, "timeout");
    assert.match(envelope.message, /1 s/);
    assert.equal(envelope.signal, stubborn ? "SIGKILL" : "SIGTERM");
    assert.ok(ms < 5000, `${ms} ms`);
  });
}

Deno.test("executor: a cancelled call ends the tree and says it was cancelled", async () => {
  await using dir = await scratch();
  const executor = executorOf({ command: ["./tools/bin/sleeper_pidfile"] }, { cwd: dir.path });
  const controller = new AbortController();
  const call = executor.call("t", "{}", { signal: controller.signal });
  const pids = parsePids(await waitForFile(join(dir.path, "pids")));
  // Alive before: the check after is not vacuous.
  assert.deepEqual(await alivePids(pids), pids);
  controller.abort();
  const envelope = await call as FailureEnvelope;
  const alive = await waitGone(pids);
  killLeftovers(alive);
  assert.deepEqual(alive, []);
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.cancelled, true);
});

Deno.test("executor: the registry ends running trees (what SIGINT to toolgate does)", async () => {
  await using dir = await scratch();
  let exitCode: number | undefined;
  const registry = new ProcessRegistry(300, (code) => exitCode = code);
  const executor = executorOf({ command: ["./tools/bin/sleeper_pidfile", "stubborn"] }, {
    cwd: dir.path,
    registry,
  });
  const call = executor.call("t", "{}");
  const pids = parsePids(await waitForFile(join(dir.path, "pids")));
  assert.equal(registry.size, 1);
  assert.deepEqual(await alivePids(pids), pids);
  await registry.endAll();
  await call;
  const alive = await waitGone(pids);
  killLeftovers(alive);
  assert.deepEqual(alive, []);
  assert.equal(registry.size, 0);
  assert.equal(exitCode, undefined);
});

Deno.test("executor: a tool's timeoutSec wins over the default", async () => {
  const quick = executorOf({ command: ["/bin/sleep", "3"], timeoutSec: 1 }, {
    defaultTimeoutSec: 60,
    graceMs: 100,
  });
  // How soon the timeout ends it is a benchmark figure (tests/bench/executor_bench.ts, timeout_stop_ms).
  assert.equal((await quick.call("t", "{}") as FailureEnvelope).kind, "timeout");
  const patient = executorOf({ command: ["/bin/sleep", "0.5"], timeoutSec: 5 }, { defaultTimeoutSec: 0.1 });
  assert.equal((await patient.call("t", "{}")).ok, true);
});

Deno.test("executor: prepare, refuse and run: a refused call is audited and never runs", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  const executor = executorOf({ command: ["./tools/bin/sleeper_pidfile"] }, { cwd: dir.path, auditDir });
  const prepared = await executor.prepare("t", "{}");
  assert.ok(prepared.ok);
  const refusal = await executor.refuse(
    prepared.call,
    failure("user_denied", "The user said no.", { tool: "t" }),
  );
  assert.equal(refusal.kind, "user_denied");
  const [record] = await readAudit(auditDir);
  assert.equal(record.outcome, "user_denied");
  assert.equal(record.argv, null);
  assert.equal(await Deno.stat(join(dir.path, "pids")).catch(() => undefined), undefined);
});

Deno.test("executor: a TOOLGATE_REDACT pattern that does not compile is a SyntaxError at construction", () => {
  assert.throws(
    () => executorOf({ command: ["/bin/cat"] }, { env: baseEnv({ TOOLGATE_REDACT: "([" }) }),
    SyntaxError,
  );
});

Deno.test("executor: with the sandbox off, a success carries no confinement warning to the model", async () => {
  const envelope = await executorOf({ command: ["/bin/cat"] }).call("t", '{"a":1}');
  assert.deepEqual(envelope, { ok: true, result: { a: 1 }, tool: "t" });
});

Deno.test("executor: a tool that prints 1 GiB fails cleanly and toolgate stays under 150 MB", async () => {
  for (const args of [["flood", String(1 << 30)], ["flood_stubborn", String(1 << 30), "2000"]]) {
    const { envelope, vmHwmKb } = await peakMemory(args);
    assert.equal(envelope.ok, false);
    assert.equal(envelope.kind, "execution_error", args[0]);
    assert.equal(envelope.truncated, true);
    assert.ok(vmHwmKb > 0 && vmHwmKb < 150 * 1024, `${args[0]}: peak ${vmHwmKb} kB`);
  }
});

Deno.test("isAlive: a running child is alive, a reaped or unknown pid is not (self-test of the helper)", async () => {
  const child = new Deno.Command("/bin/sleep", { args: ["5"], stdout: "null", stderr: "null" }).spawn();
  assert.equal(await isAlive(child.pid), true);
  child.kill("SIGKILL");
  await child.status;
  assert.equal(await isAlive(child.pid), false);
  assert.equal(await isAlive(2 ** 22 + 1), false);
});

Deno.test("executor: a call waiting for its go runs nothing before a yes, and nothing at all without one", async () => {
  await using dir = await scratch();
  const executor = executorOf({ command: ["./tools/bin/sleeper_pidfile"] }, { cwd: dir.path });
  const pidFile = join(dir.path, "pids");
  const ran = () => Deno.stat(pidFile).then(() => true, () => false);
  /** A prepared call run with a go of its own; the go and the call's stop handed back. */
  const waiting = async () => {
    const prepared = await executor.prepare("t", "{}");
    assert.ok(prepared.ok);
    const go = Promise.withResolvers<boolean>();
    const controller = new AbortController();
    const envelope = executor.run(prepared.call, { goAhead: go.promise, signal: controller.signal });
    // Time enough for the tool to write its pids, were it started.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(await ran(), false, "the tool ran before its go");
    return { go, controller, envelope };
  };
  // No go: the call is stopped, then told (as a pool worker does), and nothing ran.
  const refused = await waiting();
  refused.controller.abort();
  refused.go.resolve(false);
  assert.equal((await refused.envelope).ok, false);
  assert.equal(await ran(), false);
  // A yes: the tool runs then.
  const given = await waiting();
  given.go.resolve(true);
  const pids = parsePids(await waitForFile(pidFile));
  given.controller.abort();
  assert.equal((await given.envelope as FailureEnvelope).cancelled, true);
  killLeftovers(await waitGone(pids));
});
