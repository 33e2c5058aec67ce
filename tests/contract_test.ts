/** The envelope contract: constructors, serialization, detection and truncation. */
import assert from "node:assert/strict";
import {
  asEnvelope,
  failure,
  FAILURE_ENVELOPE_SCHEMA,
  FAILURE_KINDS,
  type FailureKind,
  failureMessage,
  isError,
  isSuccess,
  MODEL_TEXT_LIMIT,
  serialize,
  success,
  type SuccessEnvelope,
  successPayload,
  text,
  truncateForModel,
  truncationMarker,
  withTool,
  withWarnings,
} from "../src/contract.ts";

/** The seed's table of kinds and their default `retryable`. */
const SEED_DEFAULTS: Record<FailureKind, boolean> = {
  invalid_args: true,
  rejected: false,
  user_denied: false,
  timeout: true,
  execution_error: true,
  not_found: false,
  unavailable: true,
  tool_not_found: false,
};

// --- constructors ---------------------------------------------------------------------------------------------

Deno.test("failure: every kind takes the seed's default retryable", () => {
  for (const [kind, retryable] of Object.entries(SEED_DEFAULTS)) {
    const envelope = failure(kind as FailureKind, "m");
    assert.equal(envelope.retryable, retryable, kind);
    assert.equal(envelope.ok, false);
    assert.equal(envelope.kind, kind);
    assert.equal(envelope.message, "m");
  }
});

Deno.test("failure: an explicit retryable wins over the kind's default, both ways", () => {
  assert.equal(failure("invalid_args", "m", { retryable: false }).retryable, false);
  assert.equal(failure("rejected", "m", { retryable: true }).retryable, true);
  assert.equal(failure("timeout", "m", { retryable: undefined }).retryable, true);
});

Deno.test("failure: field, expected and tool are set when given and absent (no key) otherwise", () => {
  const full = failure("invalid_args", "Missing `timezone`.", {
    field: "timezone",
    expected: "string",
    tool: "get_time",
  });
  assert.deepEqual(full, {
    ok: false,
    kind: "invalid_args",
    message: "Missing `timezone`.",
    retryable: true,
    field: "timezone",
    expected: "string",
    tool: "get_time",
  });
  const bare = failure("timeout", "slow");
  assert.deepEqual(Object.keys(bare).sort(), ["kind", "message", "ok", "retryable"]);
});

Deno.test("failure: metadata rides along but never overwrites a contract key", () => {
  const envelope = failure("execution_error", "exit 3", {
    tool: "t",
    metadata: {
      exit_code: 3,
      signal: null,
      dropped: undefined,
      ok: true,
      kind: "timeout",
      message: "hijacked",
      retryable: false,
      field: "f",
      expected: "e",
      tool: "other",
      result: 1,
      warnings: ["w"],
    },
  });
  assert.deepEqual(envelope, {
    ok: false,
    kind: "execution_error",
    message: "exit 3",
    retryable: true,
    tool: "t",
    exit_code: 3,
    signal: null,
  });
});

Deno.test("success: result is null when absent; tool when given; empty warnings left out", () => {
  assert.deepEqual(success(undefined), { ok: true, result: null });
  assert.deepEqual(success(0, { tool: "t" }), { ok: true, result: 0, tool: "t" });
  assert.deepEqual(success("x", { warnings: [] }), { ok: true, result: "x" });
  const warnings = ["slow disk"];
  const envelope = success(null, { warnings });
  assert.deepEqual(envelope.warnings, ["slow disk"]);
  assert.notEqual(envelope.warnings, warnings, "the caller's array is copied");
});

Deno.test("text: sugar for result {text}", () => {
  assert.deepEqual(text("Found 3 matches\n...", { tool: "search" }), {
    ok: true,
    result: { text: "Found 3 matches\n..." },
    tool: "search",
  });
});

Deno.test("withTool sets the tool only when the envelope names none", () => {
  assert.equal(withTool(success(1), "count").tool, "count");
  assert.equal(withTool(success(1, { tool: "first" }), "second").tool, "first");
  assert.equal(withTool(failure("timeout", "m"), "t").tool, "t");
});

Deno.test("withWarnings appends warnings, and leaves the envelope alone when there are none", () => {
  const base = success(1, { warnings: ["a"] });
  assert.deepEqual(withWarnings(base, ["b"]).warnings, ["a", "b"]);
  assert.equal(withWarnings(base, []), base);
  assert.deepEqual(withWarnings(failure("timeout", "m"), ["late"]).warnings, ["late"]);
});

// --- serialization ----------------------------------------------------------------------------------------------

Deno.test("serialize: ok first, then the other keys sorted, on one line", () => {
  const envelope = failure("execution_error", "line one\nline two", {
    tool: "t",
    field: "f",
    expected: "e",
    metadata: { exit_code: 2, signal: "SIGTERM" },
  });
  const line = serialize(envelope);
  assert.equal(
    line,
    '{"ok":false,"exit_code":2,"expected":"e","field":"f","kind":"execution_error",' +
      '"message":"line one\\nline two","retryable":true,"signal":"SIGTERM","tool":"t"}',
  );
  assert.ok(!line.includes("\n"));
});

Deno.test("serialize: a success writes result: null when there is none, in its sorted place", () => {
  assert.equal(serialize(success(undefined, { tool: "t" })), '{"ok":true,"result":null,"tool":"t"}');
  // An envelope built elsewhere (read back, spread) may lack the key altogether.
  const bare = { ok: true, tool: "t" } as unknown as SuccessEnvelope;
  assert.equal(serialize(bare), '{"ok":true,"result":null,"tool":"t"}');
});

Deno.test("serialize: empty warnings are left out, others kept", () => {
  const withEmpty = { ok: true, result: 1, warnings: [] } as SuccessEnvelope;
  assert.equal(serialize(withEmpty), '{"ok":true,"result":1}');
  assert.equal(serialize(success(1, { warnings: ["w"] })), '{"ok":true,"result":1,"warnings":["w"]}');
});

Deno.test("serialize: only the envelope's own keys are sorted; the result is written as given", () => {
  assert.equal(
    serialize(success({ b: 1, a: 2 }, { tool: "t" })),
    '{"ok":true,"result":{"b":1,"a":2},"tool":"t"}',
  );
});

Deno.test("serialize then asEnvelope gives the envelope back", () => {
  const envelopes = [
    success({ a: [1, 2] }, { tool: "t", warnings: ["w"] }),
    failure("not_found", "no such file", { tool: "read", field: "path", metadata: { path: "x" } }),
    failure("rejected", "policy", { retryable: true }),
  ];
  for (const envelope of envelopes) assert.deepEqual(asEnvelope(JSON.parse(serialize(envelope))), envelope);
});

// --- detection --------------------------------------------------------------------------------------------------

Deno.test("isSuccess and isError tell the two envelopes apart", () => {
  const ok = serialize(success({ a: 1 }));
  const bad = serialize(failure("timeout", "slow"));
  assert.equal(isSuccess(ok), true);
  assert.equal(isError(ok), false);
  assert.equal(isSuccess(bad), false);
  assert.equal(isError(bad), true);
  assert.equal(isSuccess(`  ${ok}\n`), true, "surrounding whitespace is ignored");
});

Deno.test("isError: a failure without retryable still counts; it takes the kind's default", () => {
  const raw = '{"ok":false,"kind":"rejected","message":"no"}';
  assert.equal(isError(raw), true);
  const envelope = asEnvelope(JSON.parse(raw));
  assert.equal(envelope?.ok === false && envelope.retryable, false);
});

Deno.test("isError recognises the legacy [REJECTED] and [TIMEOUT] prefixes", () => {
  assert.equal(isError("[REJECTED] blocked by policy"), true);
  assert.equal(isError("[TIMEOUT] after 5s"), true);
  assert.equal(isError("  [TIMEOUT] after 5s"), true);
  assert.equal(isSuccess("[REJECTED] blocked by policy"), false);
  assert.equal(isError("REJECTED without brackets"), false);
});

Deno.test('isError recognises the legacy {"error": ..., "retryable": ...} shape', () => {
  assert.equal(isError('{"error":"boom","retryable":false}'), true);
  assert.equal(isError('{"error":"boom"}'), true);
  assert.equal(isSuccess('{"error":"boom","retryable":false}'), false);
});

Deno.test("neither: plain text, other JSON, and malformed envelopes", () => {
  for (const raw of ["hello", "", "42", '{"hello":1}', '{"ok":"yes"}', "[1,2]", "{not json"]) {
    assert.equal(isSuccess(raw), false, raw);
    assert.equal(isError(raw), false, raw);
  }
});

Deno.test("successPayload: the result of a success, undefined for anything else", () => {
  assert.deepEqual(successPayload('{"ok":true,"result":{"a":1}}'), { a: 1 });
  assert.equal(successPayload('{"ok":true}'), null);
  assert.equal(successPayload(serialize(text("hi"))) !== undefined, true);
  assert.equal(successPayload(serialize(failure("timeout", "slow"))), undefined);
  assert.equal(successPayload("plain text"), undefined);
  assert.equal(successPayload('{"error":"boom"}'), undefined);
});

Deno.test("failureMessage: the message, the legacy error, else the input itself", () => {
  assert.equal(failureMessage(serialize(failure("timeout", "slow"))), "slow");
  assert.equal(failureMessage('{"error":"boom","retryable":true}'), "boom");
  assert.equal(failureMessage("[REJECTED] policy"), "[REJECTED] policy");
  assert.equal(failureMessage("plain"), "plain");
  const ok = serialize(success(1));
  assert.equal(failureMessage(ok), ok);
});

// --- truncation -------------------------------------------------------------------------------------------------

/** A body whose characters are all different enough to show where a cut landed. */
function digits(length: number): string {
  let out = "";
  for (let i = 0; out.length < length; i++) out += `${i % 10}`;
  return out;
}

Deno.test("truncateForModel: text at or under the limit comes back unchanged", () => {
  assert.equal(truncateForModel("short"), "short");
  assert.equal(truncateForModel(""), "");
  const atLimit = digits(MODEL_TEXT_LIMIT);
  assert.equal(truncateForModel(atLimit), atLimit);
  assert.equal(truncateForModel(digits(200), 200), digits(200));
  assert.equal(truncateForModel(digits(199), 200), digits(199));
});

Deno.test("truncateForModel: the default limit is 50,000 characters", () => {
  assert.equal(MODEL_TEXT_LIMIT, 50_000);
  const cut = truncateForModel(digits(MODEL_TEXT_LIMIT + 1));
  assert.ok(cut.length <= MODEL_TEXT_LIMIT);
  assert.ok(cut.includes("[truncated "));
});

Deno.test("truncateForModel: the result never exceeds the limit", () => {
  for (const length of [1, 10, 61, 100, 1_000, 12_345]) {
    const body = digits(length);
    for (let limit = 0; limit < Math.min(length, 300); limit++) {
      const cut = truncateForModel(body, limit);
      assert.ok(cut.length <= limit, `length ${length}, limit ${limit}: got ${cut.length}`);
    }
  }
});

Deno.test("truncateForModel: 40% head, 60% tail around one marker that reports removed of total", () => {
  for (const [length, limit] of [[1_000, 200], [100_000, 50_000], [301, 300], [10_007, 1_003]]) {
    const body = digits(length);
    const cut = truncateForModel(body, limit);
    const budget = limit - truncationMarker(length, length).length;
    const head = Math.floor(budget * 0.4);
    const tail = budget - head;
    const removed = length - head - tail;
    assert.equal(cut, body.slice(0, head) + truncationMarker(removed, length) + body.slice(length - tail));
    assert.ok(cut.includes(`[truncated ${removed} of ${length} characters]`));
    assert.equal(cut.split("[truncated ").length, 2, "one marker");
  }
});

function wellFormed(value: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value);
}

Deno.test("truncateForModel: never splits a surrogate pair, wherever the cuts land", () => {
  for (const filler of ["😀", "a😀", "😀a", "ab😀"]) {
    const body = filler.repeat(400);
    for (let limit = 80; limit < 140; limit++) {
      const cut = truncateForModel(body, limit);
      assert.ok(wellFormed(cut), `filler ${JSON.stringify(filler)}, limit ${limit}`);
      assert.ok(cut.length <= limit);
      const [head, rest] = cut.split("\n…[truncated ");
      const tail = rest.slice(rest.indexOf("]…\n") + 3);
      const removed = Number(/^(\d+) of/.exec(rest)?.[1]);
      assert.equal(head.length + removed + tail.length, body.length, "the marker counts what was cut");
      assert.ok(body.startsWith(head) && body.endsWith(tail));
    }
  }
});

Deno.test("truncateForModel: emoji exactly at both cut points are dropped whole", () => {
  const limit = 200;
  const length = 1_000;
  const budget = limit - truncationMarker(length, length).length;
  const headEnd = Math.floor(budget * 0.4);
  const tailStart = length - (budget - headEnd);
  // Put a pair across each cut: high surrogate just before it, low surrogate just after.
  const chars = digits(length).split("");
  chars.splice(headEnd - 1, 2, "😀");
  chars.splice(tailStart - 2, 2, "😀");
  const body = chars.join("");
  assert.equal(body.length, length);
  const cut = truncateForModel(body, limit);
  assert.ok(wellFormed(cut));
  assert.ok(cut.startsWith(body.slice(0, headEnd - 1) + "\n…[truncated "));
  assert.ok(cut.endsWith("]…\n" + body.slice(tailStart + 1)));
});

Deno.test("truncateForModel: a limit too small for the marker still keeps within it, whole pairs only", () => {
  assert.equal(truncateForModel("abcdefghijklmnop", 5), "abcde");
  assert.equal(truncateForModel("😀😀😀😀😀😀😀😀😀😀😀😀", 5), "😀😀");
  assert.equal(truncateForModel("abc", 0), "");
});

Deno.test("credential: a failure names the secret it wants, and keeps it through serialize, asEnvelope and metadata", () => {
  const envelope = failure("unavailable", "no token", { tool: "gh", credential: "GITHUB_TOKEN" });
  assert.equal(envelope.credential, "GITHUB_TOKEN");
  assert.deepEqual(asEnvelope(JSON.parse(serialize(envelope))), envelope);
  // A tool's own failure envelope may name it too; metadata never overwrites it.
  const fromTool = asEnvelope({
    ok: false,
    kind: "execution_error",
    message: "401",
    credential: "NPM_TOKEN",
  });
  assert.equal(fromTool?.ok === false && fromTool.credential, "NPM_TOKEN");
  const forged = failure("timeout", "slow", { credential: "A", metadata: { credential: "B" } });
  assert.equal(forged.credential, "A");
});

Deno.test("FAILURE_ENVELOPE_SCHEMA admits every failure the constructor builds, and no success", async () => {
  const { loadSchemaEngine, SchemaCompiler } = await import("../src/manifest/schema.ts");
  await loadSchemaEngine();
  const compiled = new SchemaCompiler().compile(structuredClone(FAILURE_ENVELOPE_SCHEMA));
  assert.ok(compiled.ok);
  for (const kind of Object.keys(FAILURE_KINDS) as FailureKind[]) {
    const envelope = failure(kind, "m", { field: "f", expected: "e", tool: "t", metadata: { exit_code: 3 } });
    assert.ok(compiled.validate(JSON.parse(serialize(envelope))), kind);
  }
  assert.equal(compiled.validate(JSON.parse(serialize(success({ ok: false })))), false);
  assert.equal(compiled.validate({ ok: false, kind: "made_up", message: "m", retryable: true }), false);
  assert.equal(
    compiled.validate({ ok: false, kind: "timeout", message: "m" }),
    false,
    "retryable is required",
  );
});

Deno.test("asEnvelope keeps a failure's warnings (an envelope that crossed a process comes back whole)", () => {
  const envelope = withWarnings(failure("execution_error", "boom", { tool: "t", retryable: false }), [
    "not safe",
  ]);
  assert.deepEqual(asEnvelope(JSON.parse(serialize(envelope))), envelope);
});
