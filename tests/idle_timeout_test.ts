/**
 * Idle timeouts (issue 14): a manifest tool's `idleTimeoutSec` stops a call that printed nothing for that long,
 * whatever its wall clock; every byte resets the clock; `timeoutSec: 0` beside it means no wall-clock limit. Real
 * processes, unconfined and (where bubblewrap works) confined.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { FailureEnvelope } from "../src/contract.ts";
import { validateManifest } from "../src/manifest/manifest.ts";
import { envelopeFromRun } from "../src/process/run_envelope.ts";
import { runProcess } from "../src/process/runner.ts";
import { executorFor, manifestOf, scratch, waitGone } from "./executor_helpers.ts";
import { writeFiles } from "./support.ts";
import { confinedTest } from "./security/helpers.ts";
import { loadSchemaEngine } from "../src/manifest/schema.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

/** Each test runs unconfined and confined (ignored with its reason where bubblewrap does not work). */
const MODES = ["off", "require"] as const;
const modeTest = (sandbox: string, name: string, fn: () => Promise<void>) =>
  sandbox === "off" ? Deno.test(name, fn) : confinedTest(name, fn);

/** Prints a line every 0.2 s, 10 times (2 s in all): never quiet for 1 s. */
const TICKER =
  "#!/bin/sh\ni=0\nwhile [ $i -lt 10 ]; do echo tick $i; i=$((i+1)); sleep 0.2; done\necho '{\"ticks\":10}'\n";
/** Prints its pid, then goes quiet for a minute. */
const QUIET = "#!/bin/sh\necho started >&2\nsleep 60\n";

async function toolsDir(): Promise<AsyncDisposable & { path: string }> {
  const dir = await scratch();
  await writeFiles(dir.path, { "tools/bin/ticker": TICKER, "tools/bin/quiet": QUIET });
  return dir;
}

Deno.test("runProcess: output every 0.2 s outlives an idle timeout of 1 s; each byte resets the clock", async () => {
  const result = await runProcess({
    program: "/bin/sh",
    args: ["-c", TICKER.split("\n").slice(1).join("\n")],
    env: { PATH: "/usr/bin:/bin" },
    cwd: ".",
    stdin: new Uint8Array(),
    timeoutMs: Infinity,
    idleTimeoutMs: 1000,
    graceMs: 500,
    maxOutputBytes: 1 << 20,
  });
  assert.equal(result.code, 0);
  assert.equal(result.idleTimedOut, false);
  assert.equal(result.timedOut, false);
  assert.match(new TextDecoder().decode(result.stdout), /tick 9/);
});

Deno.test("runProcess: a program that goes quiet is stopped by its idle timeout, tree and all", async () => {
  const started = performance.now();
  const result = await runProcess({
    program: "/bin/sh",
    args: ["-c", "echo one; sleep 60 & echo $!; wait"],
    env: { PATH: "/usr/bin:/bin" },
    cwd: ".",
    stdin: new Uint8Array(),
    timeoutMs: 30_000,
    idleTimeoutMs: 800,
    graceMs: 300,
    maxOutputBytes: 1 << 20,
  });
  const ms = performance.now() - started;
  assert.equal(result.idleTimedOut, true);
  assert.equal(result.timedOut, false, "the wall clock did not fire");
  assert.ok(ms >= 750 && ms < 5000, `${ms} ms`);
  const grandchild = Number(new TextDecoder().decode(result.stdout).split("\n")[1]);
  assert.deepEqual(await waitGone([grandchild]), [], "the quiet grandchild went with the tree");
  const envelope = envelopeFromRun(result, {
    tool: "t",
    program: "/bin/sh",
    timeoutMs: 30_000,
    maxOutputBytes: 1 << 20,
    idleTimeoutMs: 800,
  }) as FailureEnvelope;
  assert.equal(envelope.kind, "timeout");
  assert.equal(envelope.idle, true);
  assert.equal(envelope.idle_timeout_sec, 0.8);
  assert.equal(envelope.timeout_sec, 30);
  // A tool not known to be read-only may have done something before it went quiet: no retry invited.
  assert.equal(envelope.retryable, false);
});

for (const sandbox of MODES) {
  modeTest(
    sandbox,
    `executor (sandbox ${sandbox}): a tool printing every 0.2 s outlives idleTimeoutSec 1`,
    async () => {
      await using dir = await toolsDir();
      const executor = executorFor(
        manifestOf([{ name: "ticker", command: [join(dir.path, "tools/bin/ticker")], idleTimeoutSec: 1 }]),
        { cwd: dir.path, sandbox },
      );
      const envelope = await executor.call("ticker", "{}");
      // The last line is not the only one: non-JSON stdout comes back as text.
      assert.equal(envelope.ok, true, JSON.stringify(envelope));
    },
  );

  modeTest(
    sandbox,
    `executor (sandbox ${sandbox}): a tool that goes quiet is stopped, idle: true with both limits`,
    async () => {
      await using dir = await toolsDir();
      const executor = executorFor(
        manifestOf([{ name: "quiet", command: [join(dir.path, "tools/bin/quiet")], idleTimeoutSec: 1 }]),
        { cwd: dir.path, sandbox, defaultTimeoutSec: 20 },
      );
      const started = performance.now();
      const envelope = await executor.call("quiet", "{}") as FailureEnvelope;
      const ms = performance.now() - started;
      assert.equal(envelope.ok, false);
      assert.equal(envelope.kind, "timeout", JSON.stringify(envelope));
      assert.equal(envelope.idle, true);
      assert.equal(envelope.idle_timeout_sec, 1);
      assert.equal(envelope.timeout_sec, 20);
      assert.match(envelope.message, /printed nothing for 1 s/);
      assert.ok(ms < 5000, `${ms} ms`);
    },
  );

  modeTest(
    sandbox,
    `executor (sandbox ${sandbox}): timeoutSec 0 with an idle timeout has no wall-clock limit`,
    async () => {
      await using dir = await toolsDir();
      const ticker = join(dir.path, "tools/bin/ticker");
      // The default wall clock (1 s) is shorter than the ticker's 2 s: only timeoutSec 0 lets it finish.
      const executor = executorFor(
        manifestOf([
          { name: "unbounded", command: [ticker], timeoutSec: 0, idleTimeoutSec: 1 },
          { name: "bounded", command: [ticker], idleTimeoutSec: 1 },
        ]),
        { cwd: dir.path, sandbox, defaultTimeoutSec: 1 },
      );
      const unbounded = await executor.call("unbounded", "{}");
      assert.equal(unbounded.ok, true, JSON.stringify(unbounded));
      const bounded = await executor.call("bounded", "{}") as FailureEnvelope;
      assert.equal(bounded.kind, "timeout");
      assert.equal(bounded.idle, undefined, "the wall clock, not the idle one, stopped it");
    },
  );
}

Deno.test("manifest: idleTimeoutSec is a positive integer; timeoutSec 0 only beside it", () => {
  const tool = { name: "x", command: ["./tools/bin/x"] };
  const errors = (entry: Record<string, unknown>) => {
    const result = validateManifest({ tools: [{ ...tool, ...entry }] }, "/srv/p/tools.json");
    return result.ok ? [] : result.errors;
  };
  for (const idleTimeoutSec of [0, -1, 1.5, "5", null]) {
    assert.deepEqual(errors({ idleTimeoutSec }), [
      `tool[0] "x": idleTimeoutSec must be a positive integer (got ${JSON.stringify(idleTimeoutSec)})`,
    ]);
  }
  assert.deepEqual(errors({ idleTimeoutSec: 2_147_484 }), [
    'tool[0] "x": idleTimeoutSec must be at most 2147483 (got 2147484)',
  ]);
  assert.deepEqual(errors({ timeoutSec: 0 }), ['tool[0] "x": timeoutSec must be a positive integer (got 0)']);
  const loaded = validateManifest(
    { tools: [{ ...tool, timeoutSec: 0, idleTimeoutSec: 30 }] },
    "/srv/p/tools.json",
  );
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  assert.equal(loaded.manifest.tools[0].timeoutSec, 0);
  assert.equal(loaded.manifest.tools[0].idleTimeoutSec, 30);
  assert.deepEqual(loaded.warnings, [], "a known field, not an unknown one");
});
