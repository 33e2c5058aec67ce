/** exec: argv without a shell, cwd confinement, the timeout and its process-group kill, env, stdin, truncation. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { assertEscapesRefused, assertFailure, assertOk, runTool, withWorkspace } from "./helpers.ts";

/** Is the process alive (a zombie waiting for its reaper counts as dead)? */
async function alive(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

Deno.test("exec: runs an argv without a shell and returns exit_code, stdout, stderr, duration_ms", async () => {
  await withWorkspace(async (w) => {
    const result = assertOk(await runTool("exec", { argv: ["echo", "a  b", "$HOME", "*"] }, { cwd: w.ws }));
    assert.equal(result.exit_code, 0);
    assert.equal(result.stdout, "a  b $HOME *\n", "no word splitting, expansion or globbing");
    assert.equal(result.stderr, "");
    assert.equal(typeof result.duration_ms, "number");
    assert.equal(result.stdout_truncated, false);
  });
});

Deno.test("exec: a non-zero exit is a result, not a failure; stderr is kept apart", async () => {
  await withWorkspace(async (w) => {
    const result = assertOk(
      await runTool("exec", { argv: ["sh", "-c", "echo out; echo err >&2; exit 3"] }, { cwd: w.ws }),
    );
    assert.deepEqual([result.exit_code, result.stdout, result.stderr], [3, "out\n", "err\n"]);
  });
});

Deno.test("exec: stdin text reaches the program; a program that ignores stdin is fine", async () => {
  await withWorkspace(async (w) => {
    const cat = assertOk(await runTool("exec", { argv: ["cat"], stdin: "line 1\nline 2\n" }, { cwd: w.ws }));
    assert.equal(cat.stdout, "line 1\nline 2\n");
    const ignoring = assertOk(
      await runTool("exec", { argv: ["true"], stdin: "x".repeat(200_000) }, { cwd: w.ws }),
    );
    assert.equal(ignoring.exit_code, 0);
  });
});

Deno.test("exec: the environment is PATH, HOME and the listed variables only", async () => {
  await withWorkspace(async (w) => {
    const result = assertOk(
      await runTool(
        "exec",
        { argv: ["env"], env: [{ name: "FOO", value: "bar baz" }, { name: "CI", value: "1" }] },
        { cwd: w.ws, env: { LEAKY_SECRET: "should-not-pass" } },
      ),
    );
    const names = result.stdout.trim().split("\n").map((line: string) => line.split("=")[0]).sort();
    // No shell runs, so nothing adds PWD or SHLVL: only what was asked for arrives.
    assert.deepEqual(names, ["CI", "FOO", "HOME", "PATH"]);
    assert.match(result.stdout, /^FOO=bar baz$/m);
    assertFailure(
      await runTool("exec", { argv: ["env"], env: [{ name: "1BAD", value: "x" }] }, { cwd: w.ws }),
      "invalid_args",
      "env",
    );
    assertFailure(
      await runTool("exec", { argv: ["env"], env: { FOO: "x" } }, { cwd: w.ws }),
      "invalid_args",
      "env",
    );
  });
});

Deno.test("exec: the sandbox's way out passes on (proxy, CA bundle, a credential's placeholder); secrets do not", async () => {
  await withWorkspace(async (w) => {
    const placeholder = `toolgate-cred-${"ab".repeat(16)}`;
    const result = assertOk(
      await runTool("exec", { argv: ["env"] }, {
        cwd: w.ws,
        env: {
          HTTPS_PROXY: "http://127.0.0.1:3128",
          SSL_CERT_FILE: "/tmp/.toolgate-ca.pem",
          GH_TOKEN: placeholder,
          API_KEY: "s3cret-value",
          TOOLGATE_PROTECTED: "{}",
        },
      }),
    );
    const names = result.stdout.trim().split("\n").map((line: string) => line.split("=")[0]).sort();
    assert.deepEqual(names, ["GH_TOKEN", "HOME", "HTTPS_PROXY", "PATH", "SSL_CERT_FILE"]);
    assert.match(result.stdout, new RegExp(`^GH_TOKEN=${placeholder}$`, "m"));
  });
});

Deno.test("exec: the network variables it passes on are the ones toolgate sets in a sandbox", async () => {
  const { EXEC_NETWORK_VARIABLES } = await import("../../src/contract/exec_args.ts");
  const { PROXY_ENV } = await import("../../src/sandbox/tool_launch.ts");
  const { CA_BUNDLE_VARIABLES } = await import("../../src/sandbox/run_ca.ts");
  assert.deepEqual(
    [...EXEC_NETWORK_VARIABLES].sort(),
    [...Object.keys(PROXY_ENV), ...CA_BUNDLE_VARIABLES].sort(),
  );
});

Deno.test("exec: cwd is a directory under the workspace", async () => {
  await withWorkspace(async (w) => {
    const result = assertOk(await runTool("exec", { argv: ["pwd"], cwd: "sub" }, { cwd: w.ws }));
    assert.equal(result.stdout, `${join(w.ws, "sub")}\n`);
    assert.equal(assertOk(await runTool("exec", { argv: ["pwd"] }, { cwd: w.ws })).stdout, `${w.ws}\n`);
    assertFailure(
      await runTool("exec", { argv: ["pwd"], cwd: "missing" }, { cwd: w.ws }),
      "not_found",
      "cwd",
    );
    await w.write("f.txt", "");
    assertFailure(
      await runTool("exec", { argv: ["pwd"], cwd: "f.txt" }, { cwd: w.ws }),
      "invalid_args",
      "cwd",
    );
  });
});

Deno.test("exec: the timeout kills the whole process group and reports timeout with the partial output", async () => {
  await withWorkspace(async (w) => {
    const started = Date.now();
    const run = await runTool(
      "exec",
      { argv: ["sh", "-c", "sleep 30 & echo $!; sleep 30"], timeout_ms: 500 },
      { cwd: w.ws },
    );
    assert.ok(Date.now() - started < 15_000, "the timeout stopped the wait");
    const envelope = assertFailure(run, "timeout");
    assert.equal(envelope.retryable, true);
    assert.equal(envelope.signal, "SIGKILL");
    const grandchild = Number(String(envelope.stdout).trim());
    assert.ok(grandchild > 0, `partial stdout carries the background pid: ${envelope.stdout}`);
    assert.equal(await alive(grandchild), false, "the background grandchild was killed too");
  });
});

Deno.test("exec: background processes left behind by a finished program do not outlive it", async () => {
  await withWorkspace(async (w) => {
    const started = Date.now();
    const result = assertOk(
      await runTool("exec", { argv: ["sh", "-c", "sleep 30 & echo $!"] }, { cwd: w.ws }),
    );
    assert.ok(Date.now() - started < 15_000);
    assert.equal(await alive(Number(result.stdout.trim())), false);
  });
});

Deno.test("exec: long output keeps 40% head and 60% tail around a marker saying how much was cut", async () => {
  await withWorkspace(async (w) => {
    const result = assertOk(
      await runTool("exec", { argv: ["seq", "1", "100000"], max_output_chars: 1000 }, { cwd: w.ws }),
    );
    const full = Array.from({ length: 100_000 }, (_, i) => `${i + 1}\n`).join("");
    assert.equal(result.stdout_truncated, true);
    assert.ok(result.stdout.length <= 1000, String(result.stdout.length));
    const match = /\n…\[truncated (\d+) of (\d+) characters\]…\n/.exec(result.stdout);
    assert.ok(match, "marker present");
    assert.equal(Number(match[2]), full.length);
    const head = result.stdout.slice(0, match.index);
    const tail = result.stdout.slice(match.index + match[0].length);
    assert.ok(full.startsWith(head) && full.endsWith(tail));
    assert.equal(Number(match[1]), full.length - head.length - tail.length);
    const share = head.length / (head.length + tail.length);
    assert.ok(share > 0.35 && share < 0.45, `head share ${share}`);
  });
});

Deno.test("exec: bad argv and a missing program", async () => {
  await withWorkspace(async (w) => {
    assertFailure(await runTool("exec", { argv: [] }, { cwd: w.ws }), "invalid_args", "argv");
    assertFailure(await runTool("exec", { argv: "ls -la" }, { cwd: w.ws }), "invalid_args", "argv");
    assertFailure(await runTool("exec", { argv: ["ls", 3] }, { cwd: w.ws }), "invalid_args", "argv");
    assertFailure(await runTool("exec", {}, { cwd: w.ws }), "invalid_args", "argv");
    assertFailure(
      await runTool("exec", { argv: ["no-such-program-xyz"] }, { cwd: w.ws }),
      "not_found",
      "argv",
    );
    // A JSON-encoded array, as sloppy models send it, is accepted.
    assert.equal(assertOk(await runTool("exec", { argv: '["echo", "ok"]' }, { cwd: w.ws })).stdout, "ok\n");
  });
});

Deno.test("exec: a cwd escaping the workspace is refused", async () => {
  await assertEscapesRefused("exec", (path) => ({ argv: ["pwd"], cwd: path }), "cwd");
});
