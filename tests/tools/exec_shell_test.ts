/**
 * exec grows up (issue 14): `shell` beside `argv` (exactly one), bash with pipefail, SIGPIPE's 141 as a success
 * with a warning, the empty-output warning, `idle_timeout_ms`, and `background` refused outside toolgate.
 */
import assert from "node:assert/strict";
import { assertFailure, assertOk, runTool, withWorkspace } from "./helpers.ts";

/** The result of an exec run that printed an envelope with warnings (or a plain result without any). */
// deno-lint-ignore no-explicit-any
function okWithWarnings(run: Parameters<typeof assertOk>[0]): { result: any; warnings: string[] } {
  const printed = assertOk(run);
  return printed.ok === true
    ? { result: printed.result, warnings: printed.warnings ?? [] }
    : { result: printed, warnings: [] };
}

Deno.test("exec shell: a command line runs through bash, pipes and all", async () => {
  await withWorkspace(async (w) => {
    await w.write("a.txt", "b\na\nc\n");
    const { result, warnings } = okWithWarnings(
      await runTool("exec", { shell: "sort a.txt | head -n 2 && echo $0" }, { cwd: w.ws }),
    );
    assert.equal(result.exit_code, 0);
    assert.equal(result.stdout, "a\nb\n/bin/bash\n");
    assert.deepEqual(warnings, []);
  });
});

Deno.test("exec shell: pipefail: `false | true` fails with the upstream status", async () => {
  await withWorkspace(async (w) => {
    const { result } = okWithWarnings(await runTool("exec", { shell: "false | true" }, { cwd: w.ws }));
    assert.equal(result.exit_code, 1, "without pipefail the last command's 0 would hide the failure");
    const masked = okWithWarnings(await runTool("exec", { shell: "exit 3 | cat" }, { cwd: w.ws }));
    assert.equal(masked.result.exit_code, 3);
  });
});

Deno.test("exec shell: SIGPIPE (`yes | head -n 1`) is a success with a warning", async () => {
  await withWorkspace(async (w) => {
    const { result, warnings } = okWithWarnings(
      await runTool("exec", { shell: "yes | head -n 1" }, { cwd: w.ws }),
    );
    assert.equal(result.stdout, "y\n");
    assert.equal(result.exit_code, 0);
    assert.equal(result.sigpipe, true);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /141 \(SIGPIPE\)/);
    // A plain 141 without a pipe is the program's own status, not SIGPIPE's.
    const own = okWithWarnings(await runTool("exec", { shell: "exit 141" }, { cwd: w.ws }));
    assert.equal(own.result.exit_code, 141);
    assert.deepEqual(own.warnings, []);
  });
});

Deno.test("exec shell: a zero exit with no output from a pipeline or 2>/dev/null earns the empty-output warning", async () => {
  await withWorkspace(async (w) => {
    for (const shell of ["cat /dev/null | sort", "ls no-such-file 2>/dev/null || true"]) {
      const { result, warnings } = okWithWarnings(await runTool("exec", { shell }, { cwd: w.ws }));
      assert.equal(result.exit_code, 0, shell);
      assert.equal(warnings.length, 1, shell);
      assert.match(warnings[0], /printed nothing; a pipe or 2>\/dev\/null/);
    }
    // No pipe, no redirect: silence is just silence.
    assert.deepEqual(okWithWarnings(await runTool("exec", { shell: "true" }, { cwd: w.ws })).warnings, []);
    // The same rule for an argv that spells a pipeline for sh.
    const argv = okWithWarnings(await runTool("exec", { argv: ["sh", "-c", "true | true"] }, { cwd: w.ws }));
    assert.equal(argv.warnings.length, 1);
  });
});

Deno.test("exec: exactly one of argv and shell", async () => {
  await withWorkspace(async (w) => {
    assertFailure(
      await runTool("exec", { argv: ["ls"], shell: "ls" }, { cwd: w.ws }),
      "invalid_args",
      "shell",
    );
    assertFailure(await runTool("exec", { shell: "   " }, { cwd: w.ws }), "invalid_args", "shell");
    assertFailure(await runTool("exec", { argv: [], shell: "" }, { cwd: w.ws }), "invalid_args", "argv");
    // The schema's defaults (an empty argv, an empty shell) count as absent.
    assert.equal(
      assertOk(await runTool("exec", { argv: [], shell: "echo ok" }, { cwd: w.ws })).stdout,
      "ok\n",
    );
  });
});

Deno.test("exec: idle_timeout_ms stops a program that goes quiet, each byte resetting the clock", async () => {
  await withWorkspace(async (w) => {
    const busy = assertOk(
      await runTool("exec", {
        shell: "for i in 1 2 3 4 5 6 7 8; do echo $i; sleep 0.2; done",
        idle_timeout_ms: 1000,
      }, { cwd: w.ws }),
    );
    assert.equal(busy.exit_code, 0, "output every 0.2 s outlives an idle timeout of 1 s");
    const started = Date.now();
    const quiet = assertFailure(
      await runTool("exec", { shell: "echo started; sleep 30", idle_timeout_ms: 700 }, { cwd: w.ws }),
      "timeout",
    );
    assert.ok(Date.now() - started < 10_000);
    assert.equal(quiet.idle, true);
    assert.equal(quiet.idle_timeout_ms, 700);
    assert.equal(quiet.timeout_ms, 30_000);
    assert.equal(quiet.stdout, "started\n");
  });
});

Deno.test("exec: background outside toolgate is refused (toolgate owns jobs), nothing runs", async () => {
  await withWorkspace(async (w) => {
    const envelope = assertFailure(
      await runTool("exec", { shell: "touch ran", background: true }, { cwd: w.ws }),
      "unavailable",
      "background",
    );
    assert.equal(envelope.retryable, false);
    await assert.rejects(Deno.stat(`${w.ws}/ran`), Deno.errors.NotFound);
  });
});
