/** Every way a tool can end, read as an envelope: real processes through the executor, sandbox off. */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Envelope, FailureEnvelope, SuccessEnvelope } from "../../src/contract.ts";
import {
  envelopeFromRun,
  NOT_RETRYABLE_WARNING,
  STDERR_MESSAGE_LIMIT,
} from "../../src/process/run_envelope.ts";
import type { Ended } from "../../src/process/run_terms.ts";
import { baseEnv, BIN, executorFor, executorOf, manifestOf, scratch } from "../executor_helpers.ts";

/**
 * Runs the `respond` fixture: `stdout` on stdout, `stderr` on stderr, exit `code`. A read-only tool, so that a
 * failure keeps the `retryable` of its kind or of the tool; a tool with side effects that started never retries
 * (issue 11, tested below).
 */
function respond(stdout: string, stderr = "", code = 0, readOnly = true): Promise<Envelope> {
  return executorOf({ command: ["./tools/bin/respond", stdout, stderr, String(code)], readOnly }).call(
    "t",
    "{}",
  );
}

function ok(envelope: Envelope): SuccessEnvelope {
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  return envelope as SuccessEnvelope;
}

function failed(envelope: Envelope): FailureEnvelope {
  assert.equal(envelope.ok, false, JSON.stringify(envelope));
  return envelope as FailureEnvelope;
}

Deno.test("outcome: exit 0 with one JSON value on stdout is a success carrying it", async () => {
  for (const value of [{ a: 1, b: [true, null] }, [1, 2], "text", 42, false]) {
    const envelope = ok(await respond(JSON.stringify(value) + "\n"));
    assert.deepEqual(envelope.result, value);
    assert.equal(envelope.tool, "t");
    assert.equal(envelope.warnings, undefined);
  }
});

Deno.test("outcome: a success envelope on stdout is honored, not wrapped again", async () => {
  const envelope = ok(await respond('{"ok":true,"result":{"x":1},"warnings":["slow disk"]}'));
  assert.deepEqual(envelope, { ok: true, result: { x: 1 }, tool: "t", warnings: ["slow disk"] });
});

Deno.test("outcome: a failure envelope on stdout is honored, even with exit 0", async () => {
  const envelope = failed(await respond('{"ok":false,"kind":"not_found","message":"no such file: a.txt"}'));
  assert.equal(envelope.kind, "not_found");
  assert.equal(envelope.message, "no such file: a.txt");
  assert.equal(envelope.retryable, false);
  assert.equal(envelope.tool, "t");
});

Deno.test("outcome: stdout that is not JSON is a text success with a warning", async () => {
  const envelope = ok(await respond("hello, world\n"));
  assert.deepEqual(Object.keys(envelope.result as object), ["text"]);
  assert.equal((envelope.result as { text: string }).text.trim(), "hello, world");
  assert.equal(envelope.warnings?.length, 1);
  assert.match(envelope.warnings![0], /not JSON/);
});

Deno.test("outcome: empty or blank stdout is a null result with a warning", async () => {
  for (const stdout of ["", " \n\t\n"]) {
    const envelope = ok(await respond(stdout));
    assert.equal(envelope.result, null);
    assert.equal(envelope.warnings?.length, 1);
  }
});

Deno.test("outcome: a failure envelope on stderr keeps its kind and fields, exit_code rides along", async () => {
  const stderr = '{"ok":false,"kind":"not_found","message":"gone","field":"path","retryable":true}\n';
  const envelope = failed(await respond("", stderr, 3));
  assert.equal(envelope.kind, "not_found");
  assert.equal(envelope.message, "gone");
  assert.equal(envelope.field, "path");
  assert.equal(envelope.retryable, true);
  assert.equal(envelope.exit_code, 3);
  assert.equal(envelope.tool, "t");
  assert.equal(envelope.signal, undefined);
});

Deno.test("outcome: a failure envelope with an unknown kind is read as plain text", async () => {
  const stderr = '{"ok":false,"kind":"exploded","message":"boom"}';
  const envelope = failed(await respond("", stderr, 1));
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.message, stderr);
  assert.equal(envelope.exit_code, 1);
});

Deno.test("outcome: agentcli's {error, hint} becomes the message and the hint, never JSON in JSON", async () => {
  const envelope = failed(await respond("", '{"error":"timezone not found","hint":"use Area/City"}\n', 1));
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.message, "timezone not found");
  assert.equal(envelope.hint, "use Area/City");
  assert.equal(envelope.exit_code, 1);
  const bare = failed(await respond("", '{"error":"no hint here"}', 2));
  assert.equal(bare.message, "no hint here");
  assert.equal("hint" in bare, false);
});

Deno.test("outcome: log lines before the JSON error on stderr do not hide it", async () => {
  const envelope = failed(await respond("", 'Warning: something noisy\n{"error":"the real error"}\n', 1));
  assert.equal(envelope.message, "the real error");
  const kinded = failed(
    await respond("", 'debug: starting\n{"ok":false,"kind":"invalid_args","message":"bad","field":"x"}', 1),
  );
  assert.equal(kinded.kind, "invalid_args");
  assert.equal(kinded.field, "x");
});

Deno.test("outcome: plain-text stderr is trimmed", async () => {
  const envelope = failed(await respond("", "\n  something broke  \n\n", 5));
  assert.equal(envelope.message, "something broke");
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.exit_code, 5);
  assert.equal(envelope.retryable, true);
});

Deno.test("outcome: plain-text stderr is capped at 10,000 characters", async () => {
  const long = "e".repeat(6000) + "🙂" + "f".repeat(20_000) + "END";
  const envelope = failed(await respond("", long, 1));
  assert.ok(envelope.message.length <= STDERR_MESSAGE_LIMIT, `${envelope.message.length} characters`);
  assert.ok(envelope.message.length > STDERR_MESSAGE_LIMIT - 200);
  assert.ok(envelope.message.startsWith("eeee"));
  assert.equal(envelope.message.isWellFormed(), true);
});

Deno.test("outcome: no stderr at all says the exit status", async () => {
  const envelope = failed(await respond("", "", 4));
  assert.equal(envelope.message, "exit status 4");
  assert.equal(envelope.exit_code, 4);
});

Deno.test("outcome: a failure envelope on stdout with nothing on stderr is honored, not lost", async () => {
  const printed = JSON.stringify({
    ok: false,
    kind: "not_found",
    message: "no such file: a.txt",
    field: "path",
  });
  const envelope = failed(await respond(printed + "\n", "", 3));
  assert.equal(envelope.kind, "not_found");
  assert.equal(envelope.field, "path");
  assert.equal(envelope.message, "no such file: a.txt");
  assert.equal(envelope.exit_code, 3);
  // Anything else on stdout is still not a reason: the exit status speaks.
  assert.equal(failed(await respond('{"partial": true}\n', "", 3)).message, "exit status 3");
});

Deno.test("outcome: stdout is ignored when the tool failed with an error on stderr", async () => {
  const envelope = failed(await respond('{"partial":true}', "it failed", 1));
  assert.equal(envelope.message, "it failed");
});

Deno.test("outcome: killed by a signal toolgate did not send is an execution_error naming it", async () => {
  for (const signal of ["SEGV", "KILL"]) {
    const envelope = failed(
      await executorOf({ command: ["./tools/bin/self_signal", signal] }).call("t", "{}"),
    );
    assert.equal(envelope.kind, "execution_error");
    assert.match(envelope.message, new RegExp(`SIG${signal}`));
    assert.equal(envelope.signal, `SIG${signal}`);
    assert.equal(envelope.exit_code, undefined);
  }
});

Deno.test("outcome: a timeout is kind timeout, naming the limit", async () => {
  const executor = executorOf({ command: ["/bin/sleep", "30"], timeoutSec: 1, readOnly: true }, {
    graceMs: 200,
  });
  const envelope = failed(await executor.call("t", "{}"));
  assert.equal(envelope.kind, "timeout");
  assert.match(envelope.message, /\b1 s\b/);
  assert.equal(envelope.retryable, true);
  assert.equal(envelope.signal, "SIGTERM");
});

Deno.test("outcome: the default timeout applies when the tool has none, and names a fraction", async () => {
  const executor = executorOf({ command: ["/bin/sleep", "30"] }, { defaultTimeoutSec: 0.3, graceMs: 200 });
  const envelope = failed(await executor.call("t", "{}"));
  assert.equal(envelope.kind, "timeout");
  assert.match(envelope.message, /0\.3 s/);
});

Deno.test("outcome: output past the cap is a truncated execution_error with a hint", async () => {
  const executor = executorOf({ command: ["./tools/bin/flood"] }, { maxOutputBytes: 100_000 });
  const envelope = failed(await executor.call("t", "{}"));
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.truncated, true);
  assert.match(envelope.message, /100000 bytes on stdout/);
  assert.equal(typeof envelope.hint, "string");
});

Deno.test("outcome: bytes that are not UTF-8 become replacement characters, on stdout and stderr", async () => {
  const success = ok(await executorOf({ command: ["./tools/bin/bad_utf8"] }).call("t", "{}"));
  assert.equal((success.result as { text: string }).text.trim(), "bad \uFFFD\uFFFD bytes");
  const failure = failed(await executorOf({ command: ["./tools/bin/bad_utf8", "fail"] }).call("t", "{}"));
  assert.equal(failure.message, "bad \uFFFD\uFFFD bytes");
  assert.equal(failure.exit_code, 3);
});

Deno.test("outcome: a missing program is unavailable, not retryable, naming the resolved path", async () => {
  await using dir = await scratch();
  await Deno.mkdir(join(dir.path, "tools", "bin"), { recursive: true });
  const manifest = manifestOf(
    [{ name: "t", command: ["./tools/bin/missing"] }],
    join(dir.path, "tools.json"),
  );
  const envelope = failed(await executorFor(manifest).call("t", "{}"));
  assert.equal(envelope.kind, "unavailable");
  assert.equal(envelope.retryable, false);
  assert.ok(envelope.message.includes(join(dir.path, "tools", "bin", "missing")), envelope.message);
});

Deno.test("outcome: a file that is not executable and a directory are unavailable, naming the path", async () => {
  await using dir = await scratch();
  const bin = join(dir.path, "tools", "bin");
  await Deno.mkdir(join(bin, "folder"), { recursive: true });
  await Deno.writeTextFile(join(bin, "plain"), "#!/bin/sh\necho '{}'\n", { mode: 0o644 });
  const manifest = manifestOf([
    { name: "plain", command: ["./tools/bin/plain"] },
    { name: "folder", command: ["./tools/bin/folder"] },
  ], join(dir.path, "tools.json"));
  const executor = executorFor(manifest);
  for (const name of ["plain", "folder"]) {
    const envelope = failed(await executor.call(name, "{}"));
    assert.equal(envelope.kind, "unavailable", name);
    assert.equal(envelope.retryable, false);
    assert.ok(envelope.message.includes(join(bin, name)), envelope.message);
  }
});

Deno.test("outcome: a command[0] symlink swapped after validation to leave tools/bin is rejected", async () => {
  await using dir = await scratch();
  const bin = join(dir.path, "tools", "bin");
  await Deno.mkdir(bin, { recursive: true });
  await Deno.writeTextFile(join(bin, "real"), "#!/bin/sh\necho '{\"inside\":true}'\n", { mode: 0o755 });
  await Deno.symlink("real", join(bin, "link"));
  const manifest = manifestOf([{ name: "t", command: ["./tools/bin/link"] }], join(dir.path, "tools.json"));
  const executor = executorFor(manifest);
  assert.deepEqual(ok(await executor.call("t", "{}")).result, { inside: true });

  const outside = join(dir.path, "outside");
  await Deno.writeTextFile(outside, "#!/bin/sh\necho '{\"escaped\":true}'\n", { mode: 0o755 });
  await Deno.remove(join(bin, "link"));
  await Deno.symlink(outside, join(bin, "link"));
  const envelope = failed(await executor.call("t", "{}"));
  assert.equal(envelope.kind, "rejected");
  assert.equal(envelope.retryable, false);
  assert.ok(envelope.message.includes(outside), envelope.message);
});

function fakeRun(overrides: Partial<Ended>): Ended {
  return {
    started: true,
    code: 0,
    signal: null,
    stdout: new Uint8Array(),
    stderr: new Uint8Array(),
    stdoutBytes: 0,
    stderrBytes: 0,
    timedOut: false,
    aborted: false,
    escaped: false,
    durationMs: 1,
    ...overrides,
  };
}

const context = { tool: "t", program: "/p", timeoutMs: 2500, maxOutputBytes: 10 };

Deno.test("envelopeFromRun: a timeout wins over the signal it caused, and names a fractional limit", () => {
  const envelope = envelopeFromRun(fakeRun({ code: null, signal: "SIGKILL", timedOut: true }), context);
  assert.equal(envelope.ok, false);
  assert.equal((envelope as FailureEnvelope).kind, "timeout");
  assert.match((envelope as FailureEnvelope).message, /2\.5 s/);
});

Deno.test("envelopeFromRun: a cancelled call says it was cancelled", () => {
  const envelope = envelopeFromRun(fakeRun({ code: null, signal: "SIGTERM", aborted: true }), context);
  assert.equal((envelope as FailureEnvelope).kind, "execution_error");
  assert.equal((envelope as FailureEnvelope).cancelled, true);
});

Deno.test("envelopeFromRun: an escaped descendant adds a warning to a success", () => {
  const stdout = new TextEncoder().encode('{"a":1}');
  const envelope = envelopeFromRun(fakeRun({ stdout, stdoutBytes: stdout.length, escaped: true }), context);
  assert.equal(envelope.ok, true);
  assert.equal(envelope.warnings?.length, 1);
});

// Honest retries (issue 11, "What was seen" 7): a call of a tool that is not read-only is never retryable once the
// tool started, whatever its kind's default or the tool itself says; a call that never started keeps its kind's.

Deno.test("retries: a tool with side effects that overflowed its output cap is not retryable; a read-only one is", async () => {
  await using dir = await scratch();
  // It writes, then floods: running it again would write again.
  const command = ["/bin/sh", "-c", 'echo once >> written.txt; exec "$0"', join(BIN, "flood")];
  const writer = failed(
    await executorOf({ command }, { cwd: dir.path, maxOutputBytes: 100_000 }).call("t", "{}"),
  );
  assert.equal(writer.kind, "execution_error");
  assert.equal(writer.truncated, true);
  assert.equal(writer.retryable, false);
  assert.ok((writer.warnings as string[]).includes(NOT_RETRYABLE_WARNING), JSON.stringify(writer));
  assert.equal(await Deno.readTextFile(join(dir.path, "written.txt")), "once\n");
  const reader = failed(
    await executorOf({ command, readOnly: true }, { cwd: dir.path, maxOutputBytes: 100_000 }).call("t", "{}"),
  );
  assert.equal(reader.retryable, true);
  assert.equal(reader.warnings, undefined);
});

Deno.test("retries: a tool with side effects that timed out, failed or was killed is not retryable", async () => {
  const timedOut = failed(
    await executorOf({ command: ["/bin/sleep", "30"], timeoutSec: 1 }, { graceMs: 200 }).call("t", "{}"),
  );
  assert.equal(timedOut.kind, "timeout");
  assert.equal(timedOut.retryable, false);
  const failedPlain = failed(await respond("", "it broke halfway", 1, false));
  assert.equal(failedPlain.kind, "execution_error");
  assert.equal(failedPlain.retryable, false);
  const killed = failed(await executorOf({ command: ["./tools/bin/self_signal", "KILL"] }).call("t", "{}"));
  assert.equal(killed.signal, "SIGKILL");
  assert.equal(killed.retryable, false);
});

Deno.test("retries: a tool with side effects cannot declare its own failure retryable; a read-only tool can", async () => {
  const said = '{"ok":false,"kind":"unavailable","message":"busy, try again","retryable":true}';
  for (const [where, stdout, stderr] of [["stderr", "", said], ["stdout", said, ""]] as const) {
    const writer = failed(await respond(stdout, stderr, 1, false));
    assert.equal(writer.kind, "unavailable", where);
    assert.equal(writer.message, "busy, try again");
    assert.equal(writer.retryable, false, where);
    const reader = failed(await respond(stdout, stderr, 1, true));
    assert.equal(reader.retryable, true, where);
  }
  // A failure envelope with exit 0 is the same: the tool ran.
  assert.equal(failed(await respond(said, "", 0, false)).retryable, false);
});

Deno.test("retries: a call that never started keeps its kind's default, side effects or not", async () => {
  const executor = executorFor(manifestOf([{
    name: "t",
    command: ["./tools/bin/respond", "{}", "", "0"],
    schema: { type: "object", properties: { n: { type: "integer" } }, additionalProperties: false },
  }]));
  const invalid = failed(await executor.call("t", '{"n":"many"}'));
  assert.equal(invalid.kind, "invalid_args");
  assert.equal(invalid.retryable, true);
  assert.equal(invalid.warnings, undefined);
  const unconfined = failed(
    await executorFor(manifestOf([{ name: "t", command: ["./tools/bin/respond", "{}", "", "0"] }]), {
      sandbox: "require",
      bwrap: "/nonexistent/bwrap",
    }).call("t", "{}"),
  );
  assert.equal(unconfined.kind, "unavailable");
  assert.equal(unconfined.retryable, false, "the executor's own refusal says so already");
});

Deno.test("envelopeFromRun: a cancelled or timed-out run of a tool with side effects is not retryable", () => {
  const writer = { ...context, readOnly: false };
  for (const run of [{ timedOut: true }, { aborted: true }, { overflow: "stdout" as const }]) {
    const envelope = envelopeFromRun(
      fakeRun({ code: null, signal: "SIGTERM", ...run }),
      writer,
    ) as FailureEnvelope;
    assert.equal(envelope.retryable, false, JSON.stringify(run));
    const reader = envelopeFromRun(fakeRun({ code: null, signal: "SIGTERM", ...run }), {
      ...context,
      readOnly: true,
    });
    assert.equal((reader as FailureEnvelope).retryable, true, JSON.stringify(run));
  }
  // Without the fact, the safe answer: no retry.
  assert.equal((envelopeFromRun(fakeRun({ code: 1 }), context) as FailureEnvelope).retryable, false);
});

Deno.test("outcome: a secret across the cut of a long stderr leaves no fragment in the message", async () => {
  const secret = "Zk4-Qw8-Lp2-Vx6-Rn0";
  // Copies of the secret on both sides of where the 10,000-character message is cut (40% from the head).
  const stderr = "e".repeat(3950) + `${secret} `.repeat(8) + "f".repeat(20_000);
  const envelope = failed(
    await executorOf({ command: ["./tools/bin/respond", "", stderr, "1"], readOnly: true }, {
      env: baseEnv({ DEPLOY_PASSWORD: secret }),
    }).call("t", "{}"),
  );
  assert.ok(envelope.message.length <= STDERR_MESSAGE_LIMIT);
  assert.match(envelope.message, /\[REDACTED\]/);
  for (let i = 0; i + 4 <= secret.length; i++) {
    const piece = secret.slice(i, i + 4);
    assert.ok(!envelope.message.includes(piece), `${piece} left in the message`);
  }
});
