/** The jsonl events: one line of ASCII JSON each, secrets masked. */
import assert from "node:assert/strict";
import { type AgentEvent, asciiJsonLine, jsonlSink } from "../../src/agent/events.ts";
import { makeRedactor } from "../../src/state/redact.ts";

Deno.test("events: a line is ASCII, ends in one newline, and reads back as the same value", () => {
  const hostile = "\u001b]0;pwned\u0007 \u009b31m \u202egnp.exe \u2028 \u200b é ✓ 😀 \ud800 \r\n";
  const value = { type: "answer", step: 1, text: hostile };
  const line = asciiJsonLine(value);
  assert.ok(line.endsWith("}\n"));
  assert.equal(line.indexOf("\n"), line.length - 1, "one line");
  assert.ok(/^[\x20-\x7e]*\n$/.test(line), `only printable ASCII: ${line}`);
  assert.deepEqual(JSON.parse(line), value);
});

Deno.test("events: the sink masks secrets in every string, keys and JSON text included", async () => {
  const secret = 'sk-"live"\n0123456789';
  const redact = makeRedactor([secret]);
  const lines: string[] = [];
  const sink = jsonlSink((line) => Promise.resolve(void lines.push(line)), redact);
  const events: AgentEvent[] = [
    { type: "tool_call", step: 1, id: "c1", name: "echo", arguments: JSON.stringify({ value: secret }) },
    {
      type: "tool_result",
      step: 1,
      id: "c1",
      name: "echo",
      ok: true,
      envelope: { ok: true, result: { [secret]: secret }, tool: "echo" },
    },
    { type: "error", reason: "endpoint", message: `401: bad key ${secret}` },
  ];
  for (const event of events) await sink(event);
  assert.equal(lines.length, 3);
  for (const line of lines) {
    assert.ok(!line.includes("0123456789"), `a fragment of the secret leaked: ${line}`);
    assert.match(line, /\[REDACTED\]/);
    JSON.parse(line);
  }
  assert.equal(JSON.parse(JSON.parse(lines[0]).arguments).value, "[REDACTED]");
});
