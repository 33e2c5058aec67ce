/** Declared secrets through the executor with real processes: given by name, store first, missing refused. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { baseEnv, envWritten, executorOf, readAudit, scratch } from "../executor_helpers.ts";
import { answerStoreSecret } from "../../src/run/store_secret.ts";
import { credentialOf } from "../../src/agent/credential_heal.ts";
import { failure } from "../../src/contract.ts";

const STORED = "stored-value-7f3a9c1e";
const FROM_ENV = "env-value-b2d4e6f8";

/** Writes the child's environment to env.txt (the values themselves, which no envelope carries). */
const DUMP = ["/bin/sh", "-c", "exec /usr/bin/env > env.txt"];

Deno.test("executor: a declared secret reaches the tool from the store first, then from the environment", async () => {
  await using dir = await scratch();
  const stored = executorOf({ command: DUMP, secrets: ["api_token", "OTHER_TOKEN"] }, {
    cwd: dir.path,
    env: baseEnv({ API_TOKEN: FROM_ENV, OTHER_TOKEN: "other-env-value", UNRELATED: "x" }),
    secrets: { API_TOKEN: STORED, NOT_DECLARED: "never-passed-1" },
  });
  const envelope = await stored.call("t", "{}");
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  const env = await envWritten(dir.path);
  assert.equal(env.API_TOKEN, STORED, "the store wins over the environment");
  assert.equal(env.OTHER_TOKEN, "other-env-value", "the environment when the store has none");
  assert.equal(env.NOT_DECLARED, undefined, "a stored secret no tool declares is given to none");
  assert.equal(env.UNRELATED, undefined);
});

Deno.test("executor: a missing declared secret answers unavailable with credential, before the tool starts", async () => {
  await using dir = await scratch();
  await using audit = await scratch();
  const executor = executorOf({ command: DUMP, secrets: ["HAVE_TOKEN", "MISSING_TOKEN"] }, {
    cwd: dir.path,
    env: baseEnv({ HAVE_TOKEN: FROM_ENV }),
    auditDir: audit.path,
  });
  const envelope = await executor.call("t", "{}");
  assert.equal(envelope.ok, false);
  if (envelope.ok) return;
  assert.equal(envelope.kind, "unavailable");
  assert.equal(envelope.credential, "MISSING_TOKEN");
  assert.equal(envelope.retryable, true);
  assert.match(envelope.message, /needs the secret MISSING_TOKEN/);
  await assert.rejects(Deno.stat(join(dir.path, "env.txt")), Deno.errors.NotFound, "the tool ran");
  const [record] = await readAudit(audit.path);
  assert.equal(record.outcome, "unavailable");
  assert.equal(record.argv, null);
  // Given later (store_secret), the same executor runs it.
  executor.useSecret("MISSING_TOKEN", STORED);
  assert.equal((await executor.call("t", "{}")).ok, true);
  assert.equal((await envWritten(dir.path)).MISSING_TOKEN, STORED);
});

Deno.test("executor: a stored secret a tool prints is taken out of the envelope and the audit log", async () => {
  await using dir = await scratch();
  await using audit = await scratch();
  const executor = executorOf({
    command: [
      "/bin/sh",
      "-c",
      'cat >/dev/null; printf "{\\"said\\":\\"%s\\"}" "$SESSION_ID"; echo "bad $SESSION_ID" >&2',
    ],
    secrets: ["SESSION_ID"],
  }, { cwd: dir.path, auditDir: audit.path, secrets: { SESSION_ID: STORED } });
  const envelope = await executor.call("t", JSON.stringify({ echo: STORED }));
  const text = JSON.stringify(envelope);
  assert.ok(!text.includes(STORED), text);
  assert.match(text, /\[REDACTED\]/);
  // A value given during the run is redacted from then on too.
  executor.useSecret("SESSION_ID", "renewed-value-4c5d6e");
  const renewed = JSON.stringify(await executor.call("t", "{}"));
  assert.ok(!renewed.includes("renewed-value-4c5d6e"), renewed);
  assert.equal(executor.redact(`x ${STORED} y`), "x [REDACTED] y");
  const records = JSON.stringify(await readAudit(audit.path));
  assert.ok(!records.includes(STORED) && !records.includes("renewed-value-4c5d6e"), records);
  assert.deepEqual((await readAudit(audit.path))[0].envKeys, ["PATH", "HOME", "SESSION_ID"]);
});

Deno.test("executor: a secret goes to the tool in its environment, never in any process's argv", async () => {
  await using dir = await scratch();
  const executor = executorOf({
    command: ["/bin/sh", "-c", "cat >/dev/null; ps -eo args > ps.txt"],
    secrets: ["API_TOKEN"],
  }, {
    cwd: dir.path,
    secrets: { API_TOKEN: STORED },
  });
  assert.equal((await executor.call("t", "{}")).ok, true);
  const processes = await Deno.readTextFile(join(dir.path, "ps.txt"));
  assert.match(processes, /ps -eo args/, "the listing holds the tool's own processes");
  assert.ok(!processes.includes(STORED), processes);
});

Deno.test("executor: a credential bound to hosts is a declared secret: store_secret offers it and takes it, and a 401 is about it", async () => {
  await using dir = await scratch();
  const executor = executorOf({
    command: DUMP,
    permissions: { net: ["api.example.com"] },
    credentials: [{
      secret: "GH_TOKEN",
      env: "GH_TOKEN",
      hosts: ["api.example.com"],
      header: "Authorization",
      format: "Bearer {}",
    }],
  }, { cwd: dir.path });
  assert.deepEqual(executor.declaredSecrets, ["GH_TOKEN"]);
  const session = new Map<string, string>();
  const envelope = await answerStoreSecret(
    JSON.stringify({ name: "GH_TOKEN", reason: "the token expired" }),
    {
      executor,
      ask: () => Promise.resolve("renewed-gh-token-1"),
      keep: { kind: "session", values: session },
      nobodyToAsk: "no terminal",
    },
  );
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  assert.equal(session.get("GH_TOKEN"), "renewed-gh-token-1");
  const tool = executor.manifest.byName.get("t");
  assert.equal(
    credentialOf(failure("execution_error", "HTTP 401 Unauthorized", { tool: "t" }), tool),
    "GH_TOKEN",
  );
});

Deno.test("executor: a text the audit log wrote in clear is masked in the next line once it became a secret", async () => {
  await using dir = await scratch();
  await using audit = await scratch();
  // The tool's command line names a value that is no secret yet: each line records it (argv).
  const LATER = "later-secret-5e6f7a8b";
  const executor = executorOf({ command: ["/bin/sh", "-c", "cat >/dev/null; echo '{}'", LATER] }, {
    cwd: dir.path,
    auditDir: audit.path,
    // A secret known from the start: the run redacts every line from the first.
    env: baseEnv({ FIRST_TOKEN: "first-secret-value-91" }),
  });
  assert.equal((await executor.call("t", "{}")).ok, true);
  assert.equal((await executor.call("t", "{}")).ok, true);
  // The same value given as a secret during the run: the very strings redacted before are masked from now on.
  executor.useSecret("LATER_TOKEN", LATER);
  assert.equal((await executor.call("t", "{}")).ok, true);
  const lines = await readAudit(audit.path);
  assert.equal(lines.length, 3);
  assert.ok(JSON.stringify(lines[0].argv).includes(LATER), JSON.stringify(lines[0]));
  assert.ok(JSON.stringify(lines[1].argv).includes(LATER), JSON.stringify(lines[1]));
  assert.ok(!JSON.stringify(lines[2]).includes(LATER), JSON.stringify(lines[2]));
  assert.match(JSON.stringify(lines[2].argv), /\[REDACTED\]/);
});
