/** The audit log through the executor: its fields, modes, UTC days, whole lines, failures, redaction. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { auditFileFor, AuditLog, type AuditRecord } from "../src/audit.ts";
import { makeRedactor } from "../src/redact.ts";
import { baseEnv, executorFor, executorOf, manifestOf, readAudit, scratch } from "./executor_helpers.ts";

const FIELDS = [
  "argsBytes",
  "argsSha256",
  "argv",
  "cwd",
  "envKeys",
  "exit",
  "ms",
  "outcome",
  "signal",
  "stderrBytes",
  "stdoutBytes",
  "tool",
  "truncated",
  "ts",
];

/** The fields are all there; more (sandbox, profile, warnings) may ride along. */
function assertFields(record: Record<string, unknown>): void {
  assert.deepEqual(FIELDS.filter((key) => !(key in record)), [], JSON.stringify(record));
}

Deno.test("audit: one NDJSON line per call with every field, names of variables but never values", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  const executor = executorOf({
    command: ["./tools/bin/env_dump"],
    envPassthrough: ["MY_TOKEN", "UNSET_ONE"],
  }, {
    auditDir,
    env: baseEnv({ MY_TOKEN: "tok-value-1234", OTHER: "other-value" }),
    clock: () => new Date("2026-05-04T10:00:00.000Z"),
  });
  const args = '{"a": "é"}';
  const envelope = await executor.call("t", args);
  assert.equal(envelope.ok, true);
  const records = await readAudit(auditDir);
  assert.equal(records.length, 1);
  const [record] = records;
  assertFields(record);
  assert.equal(record.ts, "2026-05-04T10:00:00.000Z");
  assert.equal(record.tool, "t");
  assert.equal((record.argv as string[])[0], join(manifestOf([]).binDir, "env_dump"));
  assert.equal(record.cwd, executorCwd());
  assert.equal(record.exit, 0);
  assert.equal(record.signal, null);
  assert.equal(typeof record.ms, "number");
  assert.ok((record.stdoutBytes as number) > 10);
  assert.equal(record.stderrBytes, 0);
  assert.equal(record.truncated, false);
  assert.deepEqual(record.envKeys, ["PATH", "HOME", "MY_TOKEN"]);
  assert.equal(record.argsBytes, new TextEncoder().encode(args).length);
  assert.equal(record.argsSha256, createHash("sha256").update(args).digest("hex"));
  assert.equal(record.outcome, "ok");
  const text = await Deno.readTextFile(join(auditDir, "20260504.log"));
  assert.ok(!text.includes("tok-value-1234"));
  assert.ok(!text.includes("other-value"));
  assert.ok(text.endsWith("}\n") && text.split("\n").length === 2);
});

function executorCwd(): string {
  return executorOf({ command: ["/bin/true"] }).manifest.dir;
}

Deno.test("audit: failures record their kind, exit, signal and truncation", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  const manifest = manifestOf([
    { name: "fails", command: ["./tools/bin/respond", "", "broken", "3"] },
    { name: "segv", command: ["./tools/bin/self_signal", "SEGV"] },
    { name: "flood", command: ["./tools/bin/flood"] },
    { name: "typed", command: ["/bin/cat"], schema: { type: "object", required: ["x"] } },
  ]);
  const executor = executorFor(manifest, { auditDir, maxOutputBytes: 10_000 });
  for (const name of ["fails", "segv", "flood", "typed", "nope"]) await executor.call(name, "{}");
  const records = await readAudit(auditDir);
  assert.deepEqual(records.map((r) => [r.tool, r.outcome, r.exit, r.signal, r.truncated]), [
    ["fails", "execution_error", 3, null, false],
    ["segv", "execution_error", null, "SIGSEGV", false],
    ["flood", "execution_error", null, "SIGTERM", true],
    ["typed", "invalid_args", null, null, false],
    ["nope", "tool_not_found", null, null, false],
  ]);
  assert.equal(records[0].stderrBytes, 6);
  assert.ok((records[2].stdoutBytes as number) > 10_000);
  assert.equal(records[3].argv, null);
  for (const record of records) assertFields(record);
});

Deno.test("audit: the directory is 0700 and the files 0600", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "deep", "audit");
  await executorOf({ command: ["/bin/cat"] }, { auditDir }).call("t", "{}");
  assert.equal((await Deno.stat(auditDir)).mode! & 0o777, 0o700);
  assert.equal((await Deno.stat(join(dir.path, "deep"))).mode! & 0o777, 0o700);
  for await (const entry of Deno.readDir(auditDir)) {
    assert.equal((await Deno.stat(join(auditDir, entry.name))).mode! & 0o777, 0o600);
  }
});

Deno.test("audit: a call on each side of a UTC midnight lands in each day's file", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  const times = [
    new Date("2026-12-31T23:59:59.900Z"),
    new Date("2027-01-01T00:00:00.100Z"),
    // 01:30 in Helsinki is still the previous UTC day.
    new Date("2027-01-02T01:30:00+02:00"),
  ];
  const clock = () => times.shift()!;
  const executor = executorOf({ command: ["/bin/cat"] }, { auditDir, clock });
  for (let i = 0; i < 3; i++) await executor.call("t", `{"i":${i}}`);
  const names: string[] = [];
  for await (const entry of Deno.readDir(auditDir)) names.push(entry.name);
  assert.deepEqual(names.sort(), ["20261231.log", "20270101.log"]);
  const day2 = (await Deno.readTextFile(join(auditDir, "20270101.log"))).trim().split("\n");
  assert.deepEqual(day2.map((line) => JSON.parse(line).ts), [
    "2027-01-01T00:00:00.100Z",
    "2027-01-01T23:30:00.000Z",
  ]);
  assert.equal(auditFileFor("/a", new Date("2026-03-01T00:30:00+02:00")), "/a/20260228.log");
});

Deno.test("audit: 200 parallel calls leave 200 whole lines", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  // A long fixed argument makes each line large, so that a split write would show.
  const filler = "f".repeat(20_000);
  const executor = executorOf({ command: ["./tools/bin/respond", "{}", "", "0", filler] }, { auditDir });
  const envelopes = await Promise.all(
    Array.from({ length: 200 }, (_, i) => executor.call("t", `{"i":${i}}`)),
  );
  assert.ok(envelopes.every((e) => e.ok));
  const text = await Deno.readTextFile(auditFileFor(auditDir, new Date()));
  const lines = text.split("\n");
  assert.equal(lines.pop(), "");
  assert.equal(lines.length, 200);
  const hashes = new Set(lines.map((line) => JSON.parse(line).argsSha256));
  assert.equal(hashes.size, 200);
});

Deno.test("audit: two logs (as two processes would) appending to one file never interleave", async () => {
  await using dir = await scratch();
  const logs = [0, 1].map(() =>
    new AuditLog({ dir: dir.path, redact: makeRedactor([]), onError: assert.fail })
  );
  const record = (i: number): AuditRecord => ({
    ts: "2026-01-01T00:00:00.000Z",
    tool: "t",
    argv: ["/bin/x", String(i).repeat(50_000)],
    cwd: "/",
    exit: 0,
    signal: null,
    ms: 1,
    stdoutBytes: 0,
    stderrBytes: 0,
    truncated: false,
    envKeys: [],
    argsBytes: 2,
    argsSha256: "0",
    outcome: "ok",
  });
  await Promise.all(Array.from({ length: 100 }, (_, i) => logs[i % 2].write(record(i % 10))));
  const lines = (await Deno.readTextFile(join(dir.path, "20260101.log"))).trim().split("\n");
  assert.equal(lines.length, 100);
  for (const line of lines) JSON.parse(line);
});

Deno.test("audit: a failed write is reported once and never fails the call", async () => {
  await using dir = await scratch();
  const notADir = join(dir.path, "file");
  await Deno.writeTextFile(notADir, "");
  const warnings: string[] = [];
  const executor = executorOf({ command: ["/bin/cat"] }, {
    auditDir: notADir,
    onWarning: (message) => warnings.push(message),
  });
  for (let i = 0; i < 3; i++) {
    const envelope = await executor.call("t", '{"x":1}');
    assert.deepEqual(envelope, { ok: true, result: { x: 1 }, tool: "t" });
  }
  assert.equal((await executor.call("missing", "{}")).ok, false);
  assert.equal(warnings.length, 1);
  assert.ok(warnings[0].includes(notADir), warnings[0]);
});

/** Every fragment of four characters or more of `secret` found in `text`. */
function fragments(text: string, secret: string): string[] {
  const found: string[] = [];
  for (let i = 0; i + 4 <= secret.length; i++) {
    if (text.includes(secret.slice(i, i + 4))) found.push(secret.slice(i, i + 4));
  }
  return found;
}

Deno.test("audit: no secret value, nor any 4-character fragment of one, reaches the audit file", async () => {
  await using dir = await scratch();
  const secrets = {
    PASSED_VALUE: "Pv9qQz7Ww3Xx",
    OAI_API_KEY: "Oa8kLm2Nn4Rr",
    OPENAI_API_KEY: "Op7jHg5Tt6Yy",
    DEPLOY_TOKEN: "Dt6uIo1Pp8Ss",
    my_secret: "Ms5vBn3Mm9Zz",
    DB_PASSWORD: "Dp4cXz2Vv7Qq",
    // TOOLGATE_REDACT matches its head only: literal replacement must come first.
    SERVICE_KEY: "ghp_AbCdEfGh0246813579",
  };
  const cwd = join(dir.path, `work-${secrets.DEPLOY_TOKEN}`);
  await Deno.mkdir(cwd);
  const auditDir = join(dir.path, "audit");
  const manifest = manifestOf([
    {
      name: "t",
      command: ["./tools/bin/respond", "{}", "", "0", `--key=${secrets.SERVICE_KEY}`, secrets.OAI_API_KEY],
      envPassthrough: ["PASSED_VALUE"],
    },
    {
      name: "u",
      command: [
        "./tools/bin/respond",
        "",
        `failed with ${secrets.PASSED_VALUE}`,
        "1",
        `${secrets.OPENAI_API_KEY}/${secrets.my_secret}:${secrets.DB_PASSWORD}`,
      ],
    },
  ]);
  const executor = executorFor(manifest, {
    auditDir,
    cwd,
    env: baseEnv({ ...secrets, TOOLGATE_REDACT: "ghp_[A-Za-z]+" }),
  });
  assert.equal((await executor.call("t", "{}")).ok, true);
  assert.equal((await executor.call("u", "{}")).ok, false);
  let text = "";
  for await (const entry of Deno.readDir(auditDir)) {
    text += await Deno.readTextFile(join(auditDir, entry.name));
  }
  assert.equal(text.trim().split("\n").length, 2);
  for (const [name, secret] of Object.entries(secrets)) {
    assert.deepEqual(fragments(text, secret), [], `${name} leaked into ${text}`);
  }
  assert.ok(text.includes("[REDACTED]"));
  const [record] = await readAudit(auditDir);
  assert.deepEqual(record.envKeys, ["PATH", "HOME", "PASSED_VALUE"]);
  // The executor's own redaction for transcripts agrees.
  assert.deepEqual(fragments(executor.redact(`x${secrets.SERVICE_KEY}y`), secrets.SERVICE_KEY), []);
});

Deno.test("audit: auditDir null writes nothing", async () => {
  await using dir = await scratch();
  const executor = executorOf({ command: ["/bin/cat"] }, { auditDir: null, cwd: dir.path });
  assert.equal((await executor.call("t", "{}")).ok, true);
  assert.deepEqual([...Deno.readDirSync(dir.path)], []);
});
