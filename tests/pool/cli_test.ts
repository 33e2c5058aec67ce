/**
 * The pool from the command line, as a user runs it (the `toolgate` launcher, under the least permission set):
 * `call --executor` prints the line a local `call` prints; mistakes and an unreachable pool are one clear line;
 * credentials come from the NATS variables and never show.
 */
import assert from "node:assert/strict";
import { hasStackTrace, runToolgate } from "../support.ts";
import { scratch } from "../executor_helpers.ts";
import { natsServer, POOL_ENV, POOL_TOOLS, poolTest, startWorker, writePoolManifest } from "./helpers.ts";

poolTest("call --executor prints exactly the line and exit code of a local call", async () => {
  await using server = await natsServer();
  await using dir = await scratch();
  const path = await writePoolManifest(dir.path, POOL_TOOLS);
  await using _worker = await startWorker(server.url, path, dir.path, "a", { launcher: true });
  const base = ["--tools", path, "--allow-absolute-commands", "--sandbox", "off", "--no-audit"];
  for (
    const [name, args, code] of [["echo", '{"n":"7"}', 0], ["fail", "{}", 1], ["echo", '{"x":1}', 1]] as const
  ) {
    const local = await runToolgate(["call", name, args, ...base], dir.path);
    const remote = await runToolgate(
      ["call", name, args, ...base, "--executor", server.url],
      dir.path,
      POOL_ENV,
    );
    assert.equal(local.code, code, local.stderr);
    assert.equal(remote.code, code, remote.stderr);
    assert.equal(remote.stdout, local.stdout);
    assert.equal(remote.stderr.replace(/.*sandbox is off.*\n/, ""), "", "nothing else said");
  }
});

poolTest("--executor mistakes are usage errors; an unreachable pool is one line and exit 1", async () => {
  await using dir = await scratch();
  const bad = await runToolgate(["call", "get_time", "{}", "--executor", "http://x"], dir.path);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /--executor is local or a pool's URL, which must start with nats:\/\/ or tls:\/\//,
  );
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const down = await runToolgate(
    ["call", "get_time", "{}", "--executor", `nats://127.0.0.1:${port}`],
    dir.path,
    POOL_ENV,
  );
  assert.equal(down.code, 1);
  assert.equal(down.stdout, "");
  // After the line that says which manifest is in use (the folder has none: the built-in belt).
  const [which, ...rest] = down.stderr.trimEnd().split("\n");
  assert.match(which, /^toolgate: using the built-in tool belt/);
  assert.equal(rest.length, 1, down.stderr);
  assert.match(rest[0], new RegExp(`^toolgate: cannot reach the worker pool at nats://127.0.0.1:${port}: `));
  assert.ok(!hasStackTrace(down.stderr), down.stderr);
  const noUrl = await runToolgate(["worker"], dir.path, { NATS_URL: "" });
  assert.equal(noUrl.code, 2);
  assert.match(noUrl.stderr, /worker needs --nats URL \(or NATS_URL\)/);
});

poolTest(
  "credentials come from NATS_TOKEN: without it the pool refuses, and the token never shows",
  async () => {
    const token = "pool-t0ken-5ecret-value";
    await using server = await natsServer(["--auth", token]);
    await using dir = await scratch();
    const path = await writePoolManifest(dir.path, POOL_TOOLS);
    const base = ["--tools", path, "--allow-absolute-commands", "--no-audit", "--executor", server.url];
    const refused = await runToolgate(["call", "echo", "{}", ...base], dir.path, POOL_ENV);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /cannot reach the worker pool at nats:\/\/127\.0\.0\.1:\d+: .*(Authorization|auth)/i,
    );
    await using worker = await startWorker(server.url, path, dir.path, "a", {
      launcher: true,
      env: { NATS_TOKEN: token },
      insecure: false,
    });
    const run = await runToolgate(["call", "echo", `{"text":"${token}"}`, ...base], dir.path, {
      ...POOL_ENV,
      NATS_TOKEN: token,
    });
    assert.equal(run.code, 0, run.stderr);
    // The caller's own secret is masked in what it prints, as any secret variable's value is.
    assert.ok(!run.stdout.includes(token), run.stdout);
    assert.ok(!worker.stderr().includes(token));
  },
);
