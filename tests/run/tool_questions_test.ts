/** toolgate/1 questions: a real tool asks the user and the model, and reads the answers on its stdin. @module */
import assert from "node:assert/strict";
import { join } from "node:path";
import { executorOf } from "../executor_helpers.ts";
import { tempDir } from "../support.ts";
import type { QuestionHandlers } from "../../src/run/tool_questions.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";

/** A `/bin/sh` toolgate/1 tool in `dir`: reads its arguments line, then runs `body`. */
async function script(dir: string, body: string): Promise<string> {
  const path = join(dir, "asker");
  await Deno.writeTextFile(path, `#!/bin/sh\nread -r args\n${body}\n`);
  await Deno.chmod(path, 0o755);
  return path;
}

/** Asks one question of each kind it is told to, and answers the answer lines it read. */
const ASK_BOTH = `
printf '%s\\n' '{"type":"elicit","id":"q1","message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"Ann"}}}}'
read -r first
printf '%s\\n' '{"type":"sample","id":2,"messages":[{"role":"user","content":{"type":"text","text":"Say hi"}}],"maxTokens":10}'
read -r second
printf '{"type":"result","result":{"first":%s,"second":%s}}\\n' "$first" "$second"`;

async function call(program: string, handlers?: QuestionHandlers, asks = ["user", "model"], argsText = "{}") {
  const executor = executorOf({ command: [program], protocol: "toolgate/1", readOnly: true, asks });
  return await executor.call("t", argsText, { questions: handlers }) as Record<string, unknown>;
}

Deno.test("a tool asks the user and the model, and each answer comes back on its stdin", async () => {
  await using dir = await tempDir();
  const seen: unknown[] = [];
  const envelope = await call(await script(dir.path, ASK_BOTH), {
    user: (question) => {
      seen.push(question);
      return Promise.resolve({ action: "accept", content: { name: "Bo" } });
    },
    model: (request) => {
      seen.push(request);
      return Promise.resolve({ role: "assistant", content: { type: "text", text: "hi" }, model: "m" });
    },
  });
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  assert.deepEqual(envelope.result, {
    first: { type: "answer", id: "q1", answer: { action: "accept", content: { name: "Bo" } } },
    second: {
      type: "answer",
      id: 2,
      answer: { role: "assistant", content: { type: "text", text: "hi" }, model: "m" },
    },
  });
  assert.deepEqual(seen[0], {
    message: "Your name?",
    requestedSchema: { type: "object", properties: { name: { type: "string", default: "Ann" } } },
  });
});

Deno.test("a question nobody can answer gets an error answer at once, never a made-up one", async () => {
  await using dir = await tempDir();
  const envelope = await call(await script(dir.path, ASK_BOTH), { nobody: "there is no terminal to ask on" });
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  const result = envelope.result as Record<string, Record<string, unknown>>;
  assert.deepEqual(result.first.error, { message: "there is no terminal to ask on" });
  assert.equal("answer" in result.first, false);
  assert.deepEqual(result.second.error, { message: "there is no terminal to ask on" });
});

Deno.test("a handler's refusal reaches the tool as the answer's error", async () => {
  await using dir = await tempDir();
  const envelope = await call(await script(dir.path, ASK_BOTH), {
    user: () => Promise.resolve({ action: "decline" }),
    model: () => Promise.reject(new Error("the user denied sending text to the model")),
  });
  const result = envelope.result as Record<string, Record<string, unknown>>;
  assert.deepEqual(result.first.answer, { action: "decline" });
  assert.deepEqual(result.second.error, { message: "the user denied sending text to the model" });
});

Deno.test("a tool that asks whom its manifest does not name is cut off", async () => {
  await using dir = await tempDir();
  const envelope = await call(await script(dir.path, ASK_BOTH), {
    model: () => Promise.reject(new Error("unreachable")),
  }, ["model"]);
  assert.equal(envelope.ok, false);
  assert.equal(envelope.protocol_error, true);
  assert.match(envelope.message as string, /does not declare "asks": \["user"\]/);
});

Deno.test("a tool asking a thousand questions is cut off at the cap, and the call ends", async () => {
  await using dir = await tempDir();
  let asked = 0;
  const program = await script(
    dir.path,
    `i=0; while [ $i -lt 1000 ]; do i=$((i+1)); printf '{"type":"elicit","id":%s,"message":"again?","requestedSchema":{"type":"object","properties":{}}}\\n' $i; done; sleep 30`,
  );
  const envelope = await call(program, {
    user: () => {
      asked += 1;
      return new Promise(() => {});
    },
  });
  assert.equal(envelope.ok, false);
  assert.equal(envelope.protocol_error, true);
  assert.match(envelope.message as string, /more than 20 questions/);
  assert.equal(asked, 20);
});

Deno.test("a tool that does not declare asks keeps today's stdin: the arguments, then end of input", async () => {
  await using dir = await tempDir();
  const path = join(dir.path, "reader");
  // Reads to the end of its input, as the conformance fixtures and many tools do: it must not hang.
  await Deno.writeTextFile(
    path,
    `#!/bin/sh\nargs=$(cat)\nprintf '{"type":"result","result":%s}\\n' "$args"\n`,
  );
  await Deno.chmod(path, 0o755);
  const executor = executorOf({ command: [path], protocol: "toolgate/1", readOnly: true, timeoutSec: 10 });
  const envelope = await executor.call("t", '{"n":1}') as Record<string, unknown>;
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  assert.deepEqual(envelope.result, { n: 1 });
});

Deno.test("a manifest's asks names the user, the model or the roots, and needs the protocol", () => {
  const bad = validateManifest({
    tools: [
      { name: "a", command: ["./tools/bin/a"], asks: ["user"] },
      { name: "b", command: ["./tools/bin/b"], protocol: "toolgate/1", asks: ["root"] },
    ],
  }, "/tmp/tools.json");
  assert.equal(bad.ok, false);
  const errors = bad.ok ? [] : bad.errors.join("\n");
  assert.match(String(errors), /tool\[0\] "a": asks requires "protocol": "toolgate\/1"/);
  assert.match(String(errors), /tool\[1\] "b": asks must be an array of "user", "model", "roots"/);
});

/** Asks the client for its roots, and answers the answer line it read. */
const ASK_ROOTS = `
printf '%s\\n' '{"type":"roots","id":"r"}'
read -r answer
printf '{"type":"result","result":%s}\\n' "$answer"`;

Deno.test("a tool asks the client for its roots: the client's list comes back; without a client, an error answer", async () => {
  await using dir = await tempDir();
  const program = await script(dir.path, ASK_ROOTS);
  const listed = await call(program, {
    roots: () => Promise.resolve({ roots: [{ uri: "file:///home/ada/project", name: "project" }] }),
  }, ["roots"]);
  assert.equal(listed.ok, true, JSON.stringify(listed));
  assert.deepEqual(listed.result, {
    type: "answer",
    id: "r",
    answer: { roots: [{ uri: "file:///home/ada/project", name: "project" }] },
  });
  // A caller with a terminal and a model but no MCP client: nobody stands in for the client's roots.
  const none = await call(program, {
    user: () => Promise.resolve({ action: "decline" }),
    nobody: "there is no terminal to ask on",
  }, ["roots"]);
  assert.deepEqual((none.result as Record<string, unknown>).error, {
    message: "this caller of toolgate has no MCP client to list roots",
  });
  // Not declared: cut off, as any question to someone the manifest does not name.
  const undeclared = await call(program, { roots: () => Promise.reject(new Error("unreachable")) }, ["user"]);
  assert.equal(undeclared.protocol_error, true);
  assert.match(undeclared.message as string, /asked the client for its roots \(roots\).*"asks": \["roots"\]/);
});
