/** The example tool, run as the runner runs it: JSON on stdin, a scrubbed environment, one JSON line out. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type ProcessResult, REPO, runProgram } from "./support.ts";

const GET_TIME = join(REPO, "tools/bin/get_time");

/** Runs get_time with only PATH and HOME in its environment. */
function getTime(stdin: string): Promise<ProcessResult> {
  return runProgram(GET_TIME, [], { stdin, clearEnv: true, cwd: REPO });
}

/** Runs get_time for `timezone` and checks the one-line answer; returns its fields. */
async function timeIn(timezone: string): Promise<{ timezone: string; iso8601: string }> {
  const before = Date.now();
  const result = await getTime(JSON.stringify({ timezone }));
  const after = Date.now();
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  assert.ok(result.stdout.endsWith("\n") && !result.stdout.slice(0, -1).includes("\n"), "one line");
  const value = JSON.parse(result.stdout);
  assert.deepEqual(Object.keys(value), ["timezone", "iso8601"]);
  assert.equal(value.timezone, timezone);
  assert.match(value.iso8601, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/);
  // The local time and its offset must agree with the instant: parsing them gives back "now".
  const instant = Date.parse(value.iso8601);
  assert.ok(instant >= before - 1_000 && instant <= after + 1_000, `${value.iso8601} is not now`);
  return value;
}

/** Runs get_time with input it must refuse: one invalid_args envelope line on stderr; returns it. */
async function refusal(stdin: string): Promise<{ message: string; field?: string; retryable: boolean }> {
  const result = await getTime(stdin);
  assert.notEqual(result.code, 0);
  assert.equal(result.stdout, "");
  assert.ok(result.stderr.endsWith("\n") && !result.stderr.slice(0, -1).includes("\n"), result.stderr);
  const value = JSON.parse(result.stderr);
  assert.equal(value.ok, false);
  assert.equal(value.kind, "invalid_args");
  return value;
}

Deno.test("get_time: a fixed-offset zone carries its offset (Etc/GMT-3 is +03:00)", async () => {
  assert.ok((await timeIn("Etc/GMT-3")).iso8601.endsWith("+03:00"));
});

Deno.test("get_time: a half-hour zone carries its offset (Asia/Kolkata is +05:30)", async () => {
  assert.ok((await timeIn("Asia/Kolkata")).iso8601.endsWith("+05:30"));
});

Deno.test("get_time: UTC and a negative offset", async () => {
  assert.ok((await timeIn("UTC")).iso8601.endsWith("+00:00"));
  assert.ok((await timeIn("Etc/GMT+5")).iso8601.endsWith("-05:00"));
});

Deno.test("get_time: a zone with daylight saving gives one of its two offsets, consistent with the instant", async () => {
  const { iso8601 } = await timeIn("Europe/Helsinki");
  assert.ok(iso8601.endsWith("+02:00") || iso8601.endsWith("+03:00"), iso8601);
});

Deno.test("get_time: an unknown timezone is invalid_args on timezone, not an execution error", async () => {
  const refused = await refusal('{"timezone": "Mars/Olympus_Mons"}');
  assert.equal(refused.message, 'unknown timezone "Mars/Olympus_Mons"');
  assert.equal(refused.field, "timezone");
  assert.equal(refused.retryable, true, "the model can correct it");
});

Deno.test("get_time: a missing timezone or arguments that are not an object are invalid_args", async () => {
  for (const stdin of ["{}", "", '{"timezone": 3}']) {
    assert.equal((await refusal(stdin)).field, "timezone", stdin);
  }
  for (const stdin of ["not json", "null", "[]", '"UTC"', "42"]) {
    assert.match(
      (await refusal(stdin)).message,
      /arguments (are not valid JSON|must be a JSON object)/,
      stdin,
    );
  }
});

Deno.test("get_time: aliases, any case and offsets are zones, as Intl.DateTimeFormat takes them", async () => {
  for (const zone of ["US/Pacific", "Asia/Calcutta", "europe/helsinki", "+02:00", "EST5EDT"]) {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    await timeIn(zone);
  }
  assert.ok((await timeIn("+05:45")).iso8601.endsWith("+05:45"));
});
