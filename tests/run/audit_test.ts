/**
 * The audit log through the executor: its fields, modes, UTC days, whole lines, failures, redaction; and what an
 * attacker who can write near it cannot do (a planted link, a hard link, a folder open to others, a torn line),
 * and the keyed digest of the arguments.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { dirname, join } from "node:path";
import {
  AUDIT_KEY_BYTES,
  auditFileFor,
  AuditLog,
  loadAuditKey,
  prepareAuditDir,
} from "../../src/state/audit_log.ts";
import { auditHmacKey, checkLineMac } from "../../src/state/audit_seal.ts";
import { makeRedactor, redactionFor, secretForms, secretValues } from "../../src/state/redact.ts";
import { StateDirError, stateRoot } from "../../src/state/state.ts";
import {
  AUDIT_KEY,
  baseEnv,
  executorFor,
  executorOf,
  IS_ROOT,
  manifestOf,
  readAudit,
  scratch,
} from "../executor_helpers.ts";
import { REPO } from "../support.ts";
import { auditRecord } from "../audit_record.ts";
import { facilityTest } from "../requires.ts";

const FIELDS = [
  "argsBytes",
  "argsHmac",
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
  assert.equal(record.argsHmac, createHmac("sha256", AUDIT_KEY).update(args).digest("hex"));
  assert.ok(!("argsSha256" in record), "no bare digest: it would confirm guessed secrets offline");
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

Deno.test("audit: a call cancelled on request says so, unlike one that crashed", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  const manifest = manifestOf([
    { name: "slow", command: ["./tools/bin/nap", "5"] },
    { name: "segv", command: ["./tools/bin/self_signal", "SEGV"] },
  ]);
  const executor = executorFor(manifest, { auditDir });
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 200);
  const cancelled = await executor.call("slow", "{}", { signal: controller.signal });
  assert.equal(!cancelled.ok && cancelled.cancelled, true);
  await executor.call("segv", "{}");
  const [first, second] = await readAudit(auditDir);
  assert.equal(first.cancelled, true);
  assert.equal(second.cancelled, undefined, "a crash is not a cancellation");
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
  const hashes = new Set(lines.map((line) => JSON.parse(line).argsHmac));
  assert.equal(hashes.size, 200);
});

Deno.test("audit: two logs (as two processes would) appending to one file never interleave", async () => {
  await using dir = await scratch();
  const logs = [0, 1].map(() =>
    new AuditLog({ dir: dir.path, key: AUDIT_KEY, redact: makeRedactor([]), onError: assert.fail })
  );
  const record = (i: number) => auditRecord({ argv: ["/bin/x", String(i).repeat(50_000)], argsHmac: "0" });
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
  // A passthrough value is a secret when the user names it (issue 24: not for being passed alone).
  const env = baseEnv({ ...secrets, TOOLGATE_REDACT: "ghp_[A-Za-z]+,PASSED_VALUE" });
  // The redaction a library caller builds for its own output, beside the executor's.
  const redaction = redactionFor(env, ["PASSED_VALUE"]);
  const executor = executorFor(manifest, { auditDir, cwd, env });
  assert.equal((await executor.call("t", "{}")).ok, true);
  assert.equal((await executor.call("u", "{}")).ok, false);
  let text = "";
  for await (const entry of Deno.readDir(auditDir)) {
    text += await Deno.readTextFile(join(auditDir, entry.name));
  }
  assert.equal(text.trim().split("\n").length, 2);
  // The keyed digests are 64 hex digits that change with every line (its time): a run of four of them that
  // happens to spell a fragment of a secret's digits (1 line in about 80 here) is no leak.
  const scanned = text.replace(/"(mac|argsHmac)":"[0-9a-f]{64}"/g, '"$1":"<digest>"');
  for (const [name, secret] of Object.entries(secrets)) {
    assert.deepEqual(fragments(scanned, secret), [], `${name} leaked into ${text}`);
  }
  assert.ok(text.includes("[REDACTED]"));
  const [record] = await readAudit(auditDir);
  assert.deepEqual(record.envKeys, ["PATH", "HOME", "PASSED_VALUE"]);
  // The run's redaction for transcripts agrees.
  assert.deepEqual(fragments(redaction.redact(`x${secrets.SERVICE_KEY}y`), secrets.SERVICE_KEY), []);
});

Deno.test("audit: a secret with a quote, a backslash, a newline or non-ASCII is masked raw and JSON-escaped", async () => {
  await using dir = await scratch();
  const pem = '-----BEGIN KEY-----\nMIIEv"QIB\\ADAN\tBgkq€é\n-----END KEY-----\n';
  const lines: string[] = [];
  const audit = new AuditLog({
    dir: join(dir.path, "audit"),
    key: AUDIT_KEY,
    redact: makeRedactor(secretValues({ DB_PASSWORD: pem }, [])),
    onError: (message) => lines.push(message),
  });
  const once = JSON.stringify({ key: pem });
  await audit.write(auditRecord({
    ts: new Date().toISOString(),
    argv: ["/bin/prog", pem],
    cwd: "/work",
    envKeys: ["DB_PASSWORD"],
    argsBytes: 0,
    // Strings that hold JSON text: the secret inside them is escaped once, and twice.
    warnings: [`the tool said ${once}`, JSON.stringify({ said: once })],
  }));
  assert.deepEqual(lines, []);
  let text = "";
  for await (const entry of Deno.readDir(join(dir.path, "audit"))) {
    text += await Deno.readTextFile(join(dir.path, "audit", entry.name));
  }
  assert.deepEqual(secretForms(pem).filter((form) => text.includes(form)), [], text);
  for (const piece of ["MIIEv", "QIB", "ADAN", "Bgkq€é"]) {
    assert.ok(!text.includes(piece), `${piece} in ${text}`);
  }
  const record = JSON.parse(text);
  assert.deepEqual(record.argv, ["/bin/prog", "[REDACTED]"]);
  assert.equal(record.warnings[0], 'the tool said {"key":"[REDACTED]"}');
});

Deno.test("audit: auditDir null writes nothing", async () => {
  await using dir = await scratch();
  const executor = executorOf({ command: ["/bin/cat"] }, { auditDir: null, cwd: dir.path });
  assert.equal((await executor.call("t", "{}")).ok, true);
  assert.deepEqual([...Deno.readDirSync(dir.path)], []);
});

// --- what an attacker near the log cannot do ------------------------------------------------------------------

/** Today's file (the executor's clock is real): a file planted for the next call must be the one it writes. */
function today(auditDir: string): string {
  return auditFileFor(auditDir, new Date());
}

/** A private audit folder (0700) inside `root`. */
async function privateDir(root: string, name = "audit"): Promise<string> {
  const path = join(root, name);
  await Deno.mkdir(path, { mode: 0o700 });
  await Deno.chmod(path, 0o700);
  return path;
}

/** Runs one call through an executor that audits to `auditDir` and returns what it reported. */
async function callAndReports(auditDir: string): Promise<string[]> {
  const warnings: string[] = [];
  const executor = executorOf({ command: ["/bin/cat"] }, { auditDir, onWarning: (m) => warnings.push(m) });
  for (let i = 0; i < 2; i++) {
    assert.deepEqual(await executor.call("t", '{"x":1}'), { ok: true, result: { x: 1 }, tool: "t" });
  }
  return warnings;
}

Deno.test("audit: a symlink planted as today's log file is not followed; its target keeps its bytes and mode", async () => {
  await using dir = await scratch();
  const auditDir = await privateDir(dir.path);
  const target = join(dir.path, "outside.txt");
  await Deno.writeTextFile(target, "precious\n", { mode: 0o644 });
  await Deno.chmod(target, 0o644);
  const planted = today(auditDir);
  await Deno.symlink(target, planted);
  const warnings = await callAndReports(auditDir);
  assert.equal(await Deno.readTextFile(target), "precious\n");
  assert.equal((await Deno.stat(target)).mode! & 0o777, 0o644, "the target was chmod-ed through the link");
  assert.ok((await Deno.lstat(planted)).isSymlink);
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.match(warnings[0], /is a symbolic link; toolgate never follows one there/);
  assert.ok(warnings[0].includes(planted), warnings[0]);
});

Deno.test("audit: a symlink planted as the audit folder is refused; nothing lands where it points", async () => {
  await using dir = await scratch();
  const real = await privateDir(dir.path, "elsewhere");
  const auditDir = join(dir.path, "audit");
  await Deno.symlink(real, auditDir);
  const warnings = await callAndReports(auditDir);
  assert.deepEqual([...Deno.readDirSync(real)], []);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /audit is a symbolic link/);
  assert.throws(() => prepareAuditDir(auditDir), StateDirError);
});

Deno.test("audit: a folder swapped for a symlink between two calls is refused at the second", async () => {
  await using dir = await scratch();
  const auditDir = await privateDir(dir.path);
  const real = await privateDir(dir.path, "elsewhere");
  const warnings: string[] = [];
  const executor = executorOf({ command: ["/bin/cat"] }, { auditDir, onWarning: (m) => warnings.push(m) });
  await executor.call("t", "{}");
  assert.equal((await readAudit(auditDir)).length, 1);
  await Deno.rename(auditDir, join(dir.path, "old"));
  await Deno.symlink(real, auditDir);
  await executor.call("t", "{}");
  assert.deepEqual([...Deno.readDirSync(real)], []);
  assert.equal(warnings.length, 1);
});

Deno.test("audit: a log file open to others, hard-linked, or not a file is refused and never chmod-ed", async () => {
  await using dir = await scratch();
  // Open to others: left as it is, nothing appended.
  const open = await privateDir(dir.path, "open");
  await Deno.writeTextFile(today(open), "", { mode: 0o644 });
  await Deno.chmod(today(open), 0o644);
  const openWarnings = await callAndReports(open);
  assert.equal((await Deno.stat(today(open))).mode! & 0o777, 0o644);
  assert.equal(await Deno.readTextFile(today(open)), "");
  assert.match(openWarnings[0], /has mode 0644, open to others/);
  // A hard link to a file outside: its target's bytes stay.
  const linked = await privateDir(dir.path, "linked");
  const target = join(dir.path, "target.txt");
  await Deno.writeTextFile(target, "precious\n", { mode: 0o600 });
  await Deno.link(target, today(linked));
  const linkWarnings = await callAndReports(linked);
  assert.equal(await Deno.readTextFile(target), "precious\n");
  assert.match(linkWarnings[0], /has 2 hard links/);
  // A FIFO in the log's place: refused at once, not waited on.
  const fifo = await privateDir(dir.path, "fifo");
  const made = await new Deno.Command("mkfifo", { args: ["-m", "600", today(fifo)] }).output();
  assert.equal(made.code, 0);
  const fifoWarnings = await callAndReports(fifo);
  assert.match(fifoWarnings[0], /is not a regular file/);
});

Deno.test("audit: a folder open to others (0755) is refused, and its mode is left alone", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  await Deno.mkdir(auditDir);
  await Deno.chmod(auditDir, 0o755);
  const warnings = await callAndReports(auditDir);
  assert.deepEqual([...Deno.readDirSync(auditDir)], []);
  assert.equal((await Deno.stat(auditDir)).mode! & 0o777, 0o755);
  assert.match(warnings[0], /has mode 0755; toolgate wants 0700 \(chmod 700 it\)/);
});

facilityTest("root", IS_ROOT ? undefined : "giving a folder to another user takes root", {
  name: "audit: a folder that belongs to another user is refused",
  fn: async () => {
    await using dir = await scratch();
    const auditDir = await privateDir(dir.path);
    await Deno.chown(auditDir, 65534, 65534);
    const warnings = await callAndReports(auditDir);
    assert.deepEqual([...Deno.readDirSync(auditDir)], []);
    assert.match(warnings[0], /belongs to uid 65534, not to this user \(uid 0\)/);
  },
});

// --- torn lines ----------------------------------------------------------------------------------------------

Deno.test("audit: a record after a torn line (a file that ends without a newline) starts on a line of its own", async () => {
  await using dir = await scratch();
  const auditDir = await privateDir(dir.path);
  const clock = () => new Date("2026-05-04T10:00:00.000Z");
  const file = join(auditDir, "20260504.log");
  await Deno.writeTextFile(file, '{"whole":1}\n{"torn":', { mode: 0o600 });
  const executor = executorOf({ command: ["/bin/cat"] }, { auditDir, clock, onWarning: assert.fail });
  await executor.call("t", "{}");
  await executor.call("t", "{}");
  const lines = (await Deno.readTextFile(file)).split("\n");
  assert.deepEqual(lines.slice(0, 2), ['{"whole":1}', '{"torn":']);
  assert.equal(lines.length, 5);
  assert.equal(lines[4], "");
  for (const line of lines.slice(2, 4)) assert.equal(JSON.parse(line).tool, "t");
});

Deno.test("audit: a line torn by another writer after one of ours is seen: the next record starts on a line of its own", async () => {
  await using dir = await scratch();
  const auditDir = await privateDir(dir.path);
  const clock = () => new Date("2026-05-04T10:00:00.000Z");
  const file = join(auditDir, "20260504.log");
  const executor = executorOf({ command: ["/bin/cat"] }, { auditDir, clock, onWarning: assert.fail });
  await executor.call("t", "{}");
  // The writer remembers where its own line ended; another process's torn line lands after it.
  await Deno.writeTextFile(file, '{"torn":', { append: true });
  await executor.call("t", "{}");
  await executor.call("t", "{}");
  const lines = (await Deno.readTextFile(file)).split("\n");
  assert.equal(lines.length, 5, lines.join("\n"));
  assert.equal(lines[1], '{"torn":');
  for (const line of [lines[0], lines[2], lines[3]]) assert.equal(JSON.parse(line).tool, "t");
  assert.equal(lines[4], "");
});

/** Reads a child's stdout line by line. */
function lineReader(stream: ReadableStream<Uint8Array>): () => Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  return async () => {
    while (!buffer.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the writer ended; left: ${JSON.stringify(buffer)}`);
      buffer += value;
    }
    const at = buffer.indexOf("\n");
    const line = buffer.slice(0, at);
    buffer = buffer.slice(at + 1);
    return line;
  };
}

async function prlimit(pid: number, fsize: string): Promise<void> {
  const output = await new Deno.Command("prlimit", { args: ["--pid", String(pid), `--fsize=${fsize}`] })
    .output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
}

Deno.test("audit: a write torn by a full file (RLIMIT_FSIZE on a real process) is reported once, the next record on a line of its own", async () => {
  await using dir = await scratch();
  const auditDir = await privateDir(dir.path);
  const file = join(auditDir, "20260101.log");
  await Deno.writeTextFile(file, '{"earlier":1}\n', { mode: 0o600 });
  // SIGXFSZ ignored, as a process that must not die of a full file would have it: writes past the limit fail.
  const child = new Deno.Command("sh", {
    args: [
      "-c",
      'trap "" XFSZ; exec "$@"',
      "sh",
      Deno.execPath(),
      "run",
      "--no-prompt",
      "--allow-read",
      "--allow-write",
      join(REPO, "tests", "fixtures", "audit_writer.ts"),
      auditDir,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const next = lineReader(child.stdout);
  const writer = child.stdin.getWriter();
  const errors: string[] = [];
  const write = async (n: number) => {
    await writer.write(new TextEncoder().encode(`write ${n}\n`));
    for (let line = await next(); line !== `wrote ${n}`; line = await next()) {
      assert.ok(line.startsWith("error "), line);
      errors.push(line);
    }
  };
  try {
    assert.equal(await next(), "ready");
    await write(1);
    const size = (await Deno.stat(file)).size;
    // Room for 40 more bytes: the next record is cut there, then the rest fails (EFBIG).
    // The soft limit only: raising a hard limit again needs a privilege the test may not have.
    await prlimit(child.pid, `${size + 40}:`);
    await write(2);
    await write(3); // fails outright: the file is full; not reported again
    await prlimit(child.pid, "unlimited:");
    await write(4);
  } finally {
    await writer.close();
  }
  assert.equal((await child.status).code, 0);
  assert.equal(errors.length, 1, errors.join("\n"));
  assert.match(errors[0], /cannot write the audit log/);
  const lines = (await Deno.readTextFile(file)).split("\n");
  assert.equal(lines.length, 5, JSON.stringify(lines));
  assert.equal(lines[0], '{"earlier":1}');
  assert.equal(JSON.parse(lines[1]).tool, "t1");
  assert.equal(lines[2].length, 40);
  assert.ok(lines[2].startsWith('{"ts":'), lines[2]);
  assert.throws(() => JSON.parse(lines[2]));
  assert.equal(JSON.parse(lines[3]).tool, "t4");
  assert.equal(lines[4], "");
});

// --- the keyed digest ----------------------------------------------------------------------------------------

Deno.test("audit: argsHmac is keyed by the user's key, stable for one key, never the bare SHA-256", async () => {
  await using dir = await scratch();
  const args = '{"token":"hunter2"}';
  const digestsUnder = async (state: string): Promise<string[]> => {
    const digests: string[] = [];
    for (let i = 0; i < 2; i++) {
      // A new executor each time, as a new toolgate process would be: the key comes from the state folder.
      const auditDir = join(dir.path, `audit-${digests.length}-${state.length}-${i}`);
      const executor = executorOf({ command: ["/bin/cat"] }, {
        auditDir,
        auditKey: undefined,
        env: baseEnv({ XDG_STATE_HOME: state }),
        onWarning: assert.fail,
      });
      await executor.call("t", args);
      digests.push((await readAudit(auditDir))[0].argsHmac as string);
    }
    return digests;
  };
  const one = join(dir.path, "state-one");
  const [first, second] = await digestsUnder(one);
  assert.equal(first, second, "one key, one digest");
  const keyFile = join(one, "toolgate", "audit.key");
  const key = await Deno.readFile(keyFile);
  assert.equal(key.length, AUDIT_KEY_BYTES);
  assert.equal((await Deno.lstat(keyFile)).mode! & 0o777, 0o600);
  assert.equal((await Deno.lstat(dirname(keyFile))).mode! & 0o777, 0o700);
  assert.equal(first, createHmac("sha256", key).update(args).digest("hex"));
  assert.notEqual(first, createHash("sha256").update(args).digest("hex"));
  const [other] = await digestsUnder(join(dir.path, "state-other-user"));
  assert.notEqual(other, first, "another key, another digest");
  assert.deepEqual(loadAuditKey({ XDG_STATE_HOME: one }), key, "read back, not made anew");
});

Deno.test("audit: a key file that is a symlink, open to others, or the wrong size is refused and left alone", async () => {
  await using dir = await scratch();
  const env = { XDG_STATE_HOME: join(dir.path, "state") };
  const root = stateRoot(env);
  await Deno.mkdir(root, { recursive: true, mode: 0o700 });
  const keyFile = join(root, "audit.key");
  // A link to a key of the attacker's choosing.
  const chosen = join(dir.path, "chosen.key");
  await Deno.writeFile(chosen, new Uint8Array(32), { mode: 0o600 });
  await Deno.symlink(chosen, keyFile);
  assert.throws(
    () => loadAuditKey(env),
    (e: Error) => e instanceof StateDirError && /symbolic link/.test(e.message),
  );
  // Through the executor: the call goes on, the record has no digest, and the trouble is told once.
  const auditDir = join(dir.path, "audit");
  const warnings: string[] = [];
  const executor = executorOf({ command: ["/bin/cat"] }, {
    auditDir,
    auditKey: undefined,
    env: baseEnv(env),
    onWarning: (m) => warnings.push(m),
  });
  assert.equal((await executor.call("t", "{}")).ok, true);
  assert.equal((await executor.call("t", "{}")).ok, true);
  assert.equal(warnings.length, 1);
  assert.ok(warnings[0].includes(keyFile), warnings[0]);
  assert.deepEqual((await readAudit(auditDir)).map((r) => r.argsHmac), [null, null]);
  assert.deepEqual(await Deno.readFile(chosen), new Uint8Array(32));
  await Deno.remove(keyFile);
  // Readable by others: refused, its mode untouched.
  await Deno.writeFile(keyFile, new Uint8Array(32), { mode: 0o644 });
  await Deno.chmod(keyFile, 0o644);
  assert.throws(() => loadAuditKey(env), /has mode 0644, open to others/);
  assert.equal((await Deno.stat(keyFile)).mode! & 0o777, 0o644);
  // Short: refused (a new one is made only once it is removed).
  await Deno.chmod(keyFile, 0o600);
  await Deno.truncate(keyFile, 5);
  assert.throws(() => loadAuditKey(env), /holds 5 bytes, not 32/);
  await Deno.remove(keyFile);
  assert.equal(loadAuditKey(env).length, 32);
});

Deno.test("audit: each line ends with its own keyed digest, which an edit breaks and an arguments digest cannot forge", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  const executor = executorOf({ command: ["/bin/cat"] }, { auditDir, onWarning: assert.fail });
  await executor.call("t", '{"a":1}');
  const [line] = (await Deno.readTextFile(auditFileFor(auditDir, new Date()))).trim().split("\n");
  const mac = /,"mac":"([0-9a-f]{64})"\}$/.exec(line);
  assert.ok(mac, `the digest is the last field: ${line}`);
  const body = line.slice(0, mac.index) + "}";
  // Keyed, and over a domain of its own: the same key's digest of the bare text (what argsHmac would be, were a
  // caller to send the line as its arguments) is not it.
  assert.equal(mac[1], createHmac("sha256", AUDIT_KEY).update(`toolgate audit line\n${body}`).digest("hex"));
  assert.notEqual(mac[1], createHmac("sha256", AUDIT_KEY).update(body).digest("hex"));
  const key = await auditHmacKey(AUDIT_KEY);
  assert.equal(await checkLineMac(line, key), "verified");
  assert.equal(await checkLineMac(line.replace('"outcome":"ok"', '"outcome":"timeout"'), key), "altered");
  assert.equal(await checkLineMac(line, await auditHmacKey(new Uint8Array(32).fill(9))), "altered");
});

Deno.test("audit: lines written together are one write each day, each line whole and sealed; a record that cannot be written loses no other", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  const errors: string[] = [];
  using audit = new AuditLog({
    dir: auditDir,
    key: AUDIT_KEY,
    redact: makeRedactor([]),
    onError: (message) => errors.push(message),
    holdOpen: true,
  });
  const record = (ts: string, tool: string) => auditRecord({ ts, tool });
  // Two lines of one day around one that cannot be JSON (a BigInt), then two of the next day, in one call.
  const bad = auditRecord({ ts: "2026-05-04T23:59:59.000Z", tool: "bad", ms: 1n as unknown as number });
  assert.throws(
    () =>
      audit.writeManyNow([
        record("2026-05-04T23:59:58.000Z", "a"),
        bad,
        record("2026-05-04T23:59:59.000Z", "b"),
        record("2026-05-05T00:00:00.000Z", "c"),
        record("2026-05-05T00:00:01.000Z", "d"),
      ]),
    /BigInt/,
  );
  assert.deepEqual(errors, []);
  const key = await auditHmacKey(AUDIT_KEY);
  for (const [day, tools] of [["20260504", ["a", "b"]], ["20260505", ["c", "d"]]] as const) {
    const lines = (await Deno.readTextFile(join(auditDir, `${day}.log`))).split("\n");
    assert.equal(lines.pop(), "", "the file ends with a newline");
    assert.deepEqual(lines.map((line) => JSON.parse(line).tool), tools);
    for (const line of lines) assert.equal(await checkLineMac(line, key), "verified");
  }
});
