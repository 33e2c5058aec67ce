import assert from "node:assert/strict";
import { Approver, type Ask, terminalAsk } from "../../src/agent/approval.ts";
import type { PreparedCall } from "../../src/executor.ts";
import { loadManifest } from "../../src/manifest.ts";
import { AGENT_TOOLS } from "./run_cli.ts";

const loaded = await loadManifest(AGENT_TOOLS);
if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
const manifest = loaded.manifest;

function call(name: string, args: Record<string, unknown> = {}): PreparedCall {
  return { tool: manifest.byName.get(name)!, args, argsText: JSON.stringify(args) };
}

/** An ask that plays `answers` and records the questions. */
function scripted(...answers: (string | null)[]): { ask: Ask; questions: string[] } {
  const questions: string[] = [];
  return {
    questions,
    ask: (question) => {
      questions.push(question);
      return Promise.resolve(answers.length > 0 ? answers.shift()! : null);
    },
  };
}

Deno.test("approval: a read-only tool needs no approval", async () => {
  const { ask, questions } = scripted();
  const approver = new Approver({ yes: false, interactive: true, ask });
  assert.deepEqual(await approver.decide(call("nap", { label: "a" })), { approved: true });
  assert.deepEqual(questions, []);
});

Deno.test("approval: --yes approves every call without asking", async () => {
  const { ask, questions } = scripted();
  const approver = new Approver({ yes: true, interactive: false, ask });
  assert.deepEqual(await approver.decide(call("note", { text: "x" })), { approved: true });
  assert.deepEqual(questions, []);
});

Deno.test("approval: without a terminal the call is rejected, and the message names --yes", async () => {
  const approver = new Approver({ yes: false, interactive: false });
  const verdict = await approver.decide(call("note", { text: "x" }));
  assert.equal(verdict.approved, false);
  if (verdict.approved) return;
  assert.equal(verdict.envelope.kind, "rejected");
  assert.equal(verdict.envelope.retryable, false);
  assert.equal(verdict.envelope.tool, "note");
  assert.match(verdict.envelope.message, /--yes/);
});

Deno.test("approval: yes on the terminal approves this call only", async () => {
  const { ask, questions } = scripted("y", "no");
  const approver = new Approver({ yes: false, interactive: true, ask });
  assert.deepEqual(await approver.decide(call("note", { text: "first" })), { approved: true });
  const second = await approver.decide(call("note", { text: "second" }));
  assert.equal(second.approved, false);
  assert.equal(questions.length, 2);
  assert.match(questions[0], /note \{"text":"first"\}/);
  assert.match(questions[0], /\[y\]es \/ \[n\]o \/ \[a\]lways/);
});

Deno.test("approval: a denial gives user_denied", async () => {
  const { ask } = scripted("n");
  const verdict = await new Approver({ yes: false, interactive: true, ask }).decide(
    call("note", { text: "x" }),
  );
  assert.equal(verdict.approved, false);
  if (verdict.approved) return;
  assert.equal(verdict.envelope.kind, "user_denied");
  assert.equal(verdict.envelope.retryable, false);
});

Deno.test("approval: always approves the rest of the session's calls of that tool", async () => {
  const { ask, questions } = scripted("Always");
  const approver = new Approver({ yes: false, interactive: true, ask });
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(await approver.decide(call("note", { text: `${i}` })), { approved: true });
  }
  assert.equal(questions.length, 1);
});

Deno.test("approval: an unclear answer is asked again; end of input denies", async () => {
  const { ask, questions } = scripted("maybe", "yes");
  assert.deepEqual(await new Approver({ yes: false, interactive: true, ask }).decide(call("note")), {
    approved: true,
  });
  assert.equal(questions.length, 2);
  assert.match(questions[1], /Please answer/);
  const eof = scripted(null);
  const verdict = await new Approver({ yes: false, interactive: true, ask: eof.ask }).decide(call("note"));
  assert.equal(verdict.approved, false);
});

Deno.test("approval: secrets in the arguments shown are redacted, long arguments cut", async () => {
  const { ask, questions } = scripted("n");
  const approver = new Approver({
    yes: false,
    interactive: true,
    ask,
    redact: (text) => text.replaceAll("hunter2", "[REDACTED]"),
  });
  await approver.decide(call("note", { text: "pw hunter2 " + "z".repeat(1000) }));
  assert.ok(!questions[0].includes("hunter2"));
  assert.ok(questions[0].length < 500);
});

Deno.test("approval: terminalAsk writes the question and reads one line", async () => {
  const written: string[] = [];
  const input = new TextEncoder().encode("yes\r\nrest");
  let offset = 0;
  const stdin = {
    read(buffer: Uint8Array): Promise<number | null> {
      if (offset >= input.length) return Promise.resolve(null);
      const n = Math.min(2, input.length - offset, buffer.length);
      buffer.set(input.subarray(offset, offset + n));
      offset += n;
      return Promise.resolve(n);
    },
  };
  const ask = terminalAsk((text) => Promise.resolve(void written.push(text)), stdin);
  assert.equal(await ask("Proceed? "), "yes");
  assert.deepEqual(written, ["Proceed? "]);
});
