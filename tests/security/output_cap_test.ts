// Output caps that fit (issue 24, item 7): `--max-output-bytes 2000000000` and a tool printing 1 GiB ended in
// `Uncaught TypeError: buffer exceeds maximum length` with a stack trace, at 2.1 GB of memory. A cap above what
// toolgate can hold (256 MiB per stream) is refused where it is given, and a flood up to the highest cap ends in an
// envelope, with memory within the bytes kept and not twice them.
import assert from "node:assert/strict";
import { Executor } from "../../src/run/executor.ts";
import { MAX_OUTPUT_BYTES } from "../../src/process/executor_defaults.ts";
import { encode, PROTOCOL_VERSION, readCall } from "../../src/pool/protocol.ts";
import { hasStackTrace, runCli } from "../support.ts";
import { executorOf, peakMemory } from "../executor_helpers.ts";

const TOO_MUCH = "2000000000";

for (const argv of [["call", "get_time", "{}"], ["run", "--prompt", "hi", "--model", "m"], ["serve"]]) {
  Deno.test(`${argv[0]} --max-output-bytes ${TOO_MUCH}: a usage error naming the limit, exit 2`, async () => {
    const result = await runCli([...argv, "--max-output-bytes", TOO_MUCH], { stdin: "" });
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stderr,
      /^toolgate: --max-output-bytes 2000000000 is more than .* at most 268435456 bytes/,
    );
    assert.equal(result.stderr.trim().split("\n").length, 2, result.stderr); // the line, and where help is
    assert.equal(hasStackTrace(result.stderr), false);
    assert.equal(result.stdout, "");
  });
}

Deno.test("the library's executor refuses a maxOutputBytes above the limit, and takes the limit itself", () => {
  assert.throws(
    () => executorOf({ command: ["/bin/cat"] }, { maxOutputBytes: Number(TOO_MUCH) }),
    (error: unknown) => error instanceof RangeError && /at most 268435456 bytes/.test(error.message),
  );
  assert.ok(executorOf({ command: ["/bin/cat"] }, { maxOutputBytes: MAX_OUTPUT_BYTES }) instanceof Executor);
});

Deno.test("a pool worker refuses a call whose caller asks for a cap above the limit", () => {
  const call = {
    v: PROTOCOL_VERSION,
    id: "c1",
    tool: "t",
    args: "{}",
    manifest: "m",
    reply: "_INBOX.abc",
    defaults: { timeoutSec: 30, graceMs: 2000, maxOutputBytes: Number(TOO_MUCH) },
    ts: Date.now(),
    wait: 30_000,
    sig: "unchecked-by-the-reader",
  };
  const parsed = readCall(encode(call));
  assert.equal(parsed.ok, false);
  assert.match(JSON.stringify(parsed), /at most 268435456/);
  const fits = readCall(encode({ ...call, defaults: { ...call.defaults, maxOutputBytes: 1024 } }));
  assert.equal(fits.ok, true, JSON.stringify(fits));
});

Deno.test("a tool printing 300 MiB with the cap at its highest (256 MiB) is stopped with an envelope, memory within the bytes kept", async () => {
  const { envelope, vmHwmKb, stderr } = await peakMemory([
    "flood",
    String(300 * 1024 * 1024),
    "2000",
    String(MAX_OUTPUT_BYTES),
  ]);
  assert.equal(hasStackTrace(stderr), false, stderr);
  assert.equal(envelope.ok, false);
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.truncated, true);
  assert.match(envelope.message, /more than 268435456 bytes on stdout/);
  // The 256 MiB kept, once, and the runtime's own (under 150 MB with the default cap): not twice the bytes kept.
  const limitKb = (MAX_OUTPUT_BYTES * 1.5) / 1024 + 150 * 1024;
  assert.ok(vmHwmKb > 0 && vmHwmKb < limitKb, `peak ${vmHwmKb} kB (limit ${limitKb} kB)`);
});
