import assert from "node:assert/strict";
import { join } from "node:path";
import type { ChatMessage } from "../../src/agent/messages.ts";
import {
  loadTranscript,
  openingMessages,
  saveTranscript,
  TranscriptError,
} from "../../src/agent/transcript.ts";

const CONVERSATION: ChatMessage[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "time?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "get_time", arguments: "{}" } }],
  },
  { role: "tool", tool_call_id: "c1", content: '{"ok":true,"result":"noon"}' },
  { role: "assistant", content: "Noon." },
];

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "toolgate_transcript_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("transcript: saved then loaded gives the same messages, secrets redacted", async () => {
  await withDir(async (dir) => {
    const path = join(dir, "sub", "run.json");
    const withSecret: ChatMessage[] = [...CONVERSATION, { role: "user", content: "my key is sk-12345" }];
    await saveTranscript(path, withSecret, (text) => text.replaceAll("sk-12345", "[REDACTED]"));
    const text = await Deno.readTextFile(path);
    assert.ok(!text.includes("sk-12345"));
    const loaded = await loadTranscript(path);
    assert.deepEqual(loaded.slice(0, -1), CONVERSATION);
    assert.equal(loaded.at(-1)?.content, "my key is [REDACTED]");
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    assert.deepEqual(
      [...Deno.readDirSync(join(dir, "sub"))].map((e) => e.name),
      ["run.json"],
      "no temp file left",
    );
  });
});

Deno.test("transcript: an object with `messages` loads too", async () => {
  await withDir(async (dir) => {
    const path = join(dir, "run.json");
    await Deno.writeTextFile(path, JSON.stringify({ messages: CONVERSATION }));
    assert.deepEqual(await loadTranscript(path), CONVERSATION);
  });
});

Deno.test("transcript: a broken file is a usage error naming the file and the problem", async () => {
  await withDir(async (dir) => {
    const cases: [unknown, RegExp][] = [
      ["{oops", /not JSON/],
      [{ hello: 1 }, /expected a JSON array/],
      [[{ role: "wizard", content: "x" }], /message\[0\]: unknown role "wizard"/],
      [[{ role: "user", content: 1 }], /message\[0\] \(user\): content must be text/],
      [[{ role: "tool", tool_call_id: "nope", content: "x" }], /does not name a call/],
      [CONVERSATION.slice(0, 3), /"c1" at the end was never answered/],
      [[...CONVERSATION.slice(0, 3), { role: "user", content: "x" }], /message\[3\]: the tool call "c1"/],
    ];
    for (const [content, pattern] of cases) {
      const path = join(dir, "bad.json");
      await Deno.writeTextFile(path, typeof content === "string" ? content : JSON.stringify(content));
      const error = await loadTranscript(path).then(() => undefined, (e) => e);
      assert.ok(error instanceof TranscriptError, String(error));
      assert.ok(error.message.includes(path), error.message);
      assert.match(error.message, pattern);
    }
    await assert.rejects(loadTranscript(join(dir, "missing.json")), /no such file/);
  });
});

Deno.test("transcript: a new conversation starts with the system prompt (the default unless given)", () => {
  assert.deepEqual(openingMessages({ defaultSystem: "D", prompt: "hi" }), [
    { role: "system", content: "D" },
    { role: "user", content: "hi" },
  ]);
  assert.equal(openingMessages({ defaultSystem: "D", system: "S", prompt: "hi" })[0].content, "S");
});

Deno.test("transcript: a resumed conversation gets the prompt appended and a given system prompt in place", () => {
  const resumed = openingMessages({
    loaded: CONVERSATION,
    defaultSystem: "D",
    system: "New",
    prompt: "and now?",
  });
  assert.equal(resumed.length, CONVERSATION.length + 1);
  assert.deepEqual(resumed[0], { role: "system", content: "New" });
  assert.deepEqual(resumed.at(-1), { role: "user", content: "and now?" });
  const kept = openingMessages({ loaded: CONVERSATION, defaultSystem: "D", prompt: "x" });
  assert.deepEqual(kept[0], CONVERSATION[0], "no default system prompt is forced on a loaded conversation");
});

Deno.test("transcript: resuming without a prompt needs something left to do", () => {
  assert.throws(
    () => openingMessages({ loaded: CONVERSATION, defaultSystem: "D" }),
    /ends with the model's answer/,
  );
  assert.throws(() => openingMessages({ loaded: [], defaultSystem: "D" }), /empty/);
  const waiting = openingMessages({ loaded: CONVERSATION.slice(0, 4), defaultSystem: "D" });
  assert.equal(waiting.length, 4, "a conversation ending in tool results goes back to the model as is");
});
