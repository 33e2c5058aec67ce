/**
 * The audit log with its day's file held open between lines (`holdOpen`, as the CLI's commands run it): every
 * line is checked as if the file were just opened, so what an attacker who can write near the log does between
 * two lines is refused or followed exactly as without the held file (a folder or a file swapped for a link, a
 * file opened to others or hard-linked, a torn line), a removed file is made again, a new UTC day gets its own
 * file, and `close` lets go of it (the test sanitizer checks that nothing is left open).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AuditLog, type AuditRecord } from "../../src/state/audit_log.ts";
import { makeRedactor } from "../../src/state/redact.ts";
import { AUDIT_KEY, executorOf, readAudit, scratch } from "../executor_helpers.ts";
import { auditRecord } from "../audit_record.ts";

const DAY = "2026-05-04T10:00:00.000Z";

function record(tool: string, ts = DAY): AuditRecord {
  return auditRecord({ ts, tool });
}

/** A private audit folder (0700) inside `root`, and a held log over it whose reports land in `reports`. */
async function heldLog(root: string, name = "audit") {
  const dir = join(root, name);
  await Deno.mkdir(dir, { mode: 0o700 });
  await Deno.chmod(dir, 0o700);
  const reports: string[] = [];
  const log = new AuditLog({
    dir,
    key: AUDIT_KEY,
    redact: makeRedactor([]),
    onError: (message) => reports.push(message),
    holdOpen: true,
  });
  return { dir, file: join(dir, "20260504.log"), log, reports };
}

const tools = async (file: string) =>
  (await Deno.readTextFile(file)).trim().split("\n").map((line) => JSON.parse(line).tool);

Deno.test("held audit file: lines land one after another; close lets go and a later line opens it again", async () => {
  await using dir = await scratch();
  const { file, log, reports } = await heldLog(dir.path);
  await log.write(record("a"));
  await log.write(record("b"));
  log.close();
  log.close();
  await log.write(record("c"));
  log[Symbol.dispose]();
  assert.deepEqual(await tools(file), ["a", "b", "c"]);
  assert.deepEqual(reports, []);
});

Deno.test("held audit file: a folder swapped for a symlink between two lines is refused at the second", async () => {
  await using dir = await scratch();
  const h = await heldLog(dir.path);
  using log = h.log;
  const elsewhere = join(dir.path, "elsewhere");
  await Deno.mkdir(elsewhere, { mode: 0o700 });
  await log.write(record("a"));
  await Deno.rename(h.dir, join(dir.path, "old"));
  await Deno.symlink(elsewhere, h.dir);
  await log.write(record("b"));
  assert.deepEqual([...Deno.readDirSync(elsewhere)], []);
  assert.deepEqual(await tools(join(dir.path, "old", "20260504.log")), ["a"]);
  assert.equal(h.reports.length, 1);
  assert.match(h.reports[0], /is a symbolic link/);
});

Deno.test("held audit file: a file swapped for a symlink between two lines is refused; its target keeps its bytes", async () => {
  await using dir = await scratch();
  const h = await heldLog(dir.path);
  using log = h.log;
  const target = join(dir.path, "outside.txt");
  await Deno.writeTextFile(target, "precious\n", { mode: 0o600 });
  await log.write(record("a"));
  await Deno.rename(h.file, join(dir.path, "moved.log"));
  await Deno.symlink(target, h.file);
  await log.write(record("b"));
  assert.equal(await Deno.readTextFile(target), "precious\n");
  // Nor did the line go to the file held open, now under another name.
  assert.deepEqual(await tools(join(dir.path, "moved.log")), ["a"]);
  assert.equal(h.reports.length, 1);
  assert.match(h.reports[0], /is a symbolic link; toolgate never follows one there/);
});

Deno.test("held audit file: a file opened to others or hard-linked between two lines gets no more lines", async () => {
  await using dir = await scratch();
  const opened = await heldLog(dir.path, "opened");
  using first = opened.log;
  await first.write(record("a"));
  await Deno.chmod(opened.file, 0o644);
  await first.write(record("b"));
  assert.deepEqual(await tools(opened.file), ["a"]);
  assert.equal((await Deno.stat(opened.file)).mode! & 0o777, 0o644, "never chmod-ed back");
  assert.match(opened.reports[0], /has mode 0644, open to others/);

  const linked = await heldLog(dir.path, "linked");
  using second = linked.log;
  await second.write(record("a"));
  await Deno.link(linked.file, join(dir.path, "link.log"));
  await second.write(record("b"));
  assert.deepEqual(await tools(join(dir.path, "link.log")), ["a"]);
  assert.match(linked.reports[0], /has 2 hard links/);
});

Deno.test("held audit file: a file removed between two lines is made again; the removed one gets nothing more", async () => {
  await using dir = await scratch();
  const h = await heldLog(dir.path);
  using log = h.log;
  await log.write(record("a"));
  // As a log rotation does: moved away, then the next line goes to a new file under the day's name.
  await Deno.rename(h.file, join(dir.path, "rotated.log"));
  await log.write(record("b"));
  await log.write(record("c"));
  assert.deepEqual(await tools(join(dir.path, "rotated.log")), ["a"]);
  assert.deepEqual(await tools(h.file), ["b", "c"]);
  assert.equal((await Deno.stat(h.file)).mode! & 0o777, 0o600);
  assert.deepEqual(h.reports, []);
});

Deno.test("held audit file: a line torn by another writer between two of ours is seen; the next starts on its own", async () => {
  await using dir = await scratch();
  const h = await heldLog(dir.path);
  using log = h.log;
  await log.write(record("a"));
  await Deno.writeTextFile(h.file, '{"torn":', { append: true });
  await log.write(record("b"));
  await log.write(record("c"));
  const lines = (await Deno.readTextFile(h.file)).split("\n");
  assert.equal(lines[1], '{"torn":');
  assert.deepEqual([lines[0], lines[2], lines[3]].map((line) => JSON.parse(line).tool), ["a", "b", "c"]);
  assert.equal(lines.length, 5);
  assert.deepEqual(h.reports, []);
});

Deno.test("held audit file: a line on each side of a UTC midnight lands in each day's file", async () => {
  await using dir = await scratch();
  const h = await heldLog(dir.path);
  using log = h.log;
  await log.write(record("before", "2026-05-04T23:59:59.999Z"));
  await log.write(record("after", "2026-05-05T00:00:00.000Z"));
  assert.deepEqual(await tools(h.file), ["before"]);
  assert.deepEqual(await tools(join(h.dir, "20260505.log")), ["after"]);
});

Deno.test("held audit file: the executor that keeps it open lets go of it at close", async () => {
  await using dir = await scratch();
  const auditDir = join(dir.path, "audit");
  await Deno.mkdir(auditDir, { mode: 0o700 });
  await Deno.chmod(auditDir, 0o700);
  const executor = executorOf({ command: ["/bin/cat"] }, {
    auditDir,
    keepAuditOpen: true,
    onWarning: assert.fail,
  });
  await executor.call("t", "{}");
  await executor.call("t", "{}");
  // Without this, the test sanitizer finds the file still open.
  await executor.close();
  assert.equal((await readAudit(auditDir)).length, 2);
});
