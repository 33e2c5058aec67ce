import assert from "node:assert/strict";
import { failure, serialize, success, withContent, withWarnings } from "../../src/contract.ts";
import { forModel, toolMessageContent } from "../../src/agent/tool_message.ts";

Deno.test("tool message: an envelope that fits is the serialized envelope, unchanged", () => {
  const envelope = success({ b: 1, a: 2 }, { tool: "t" });
  assert.equal(toolMessageContent(envelope, 1000), serialize(envelope));
});

Deno.test("tool message: an oversized success becomes truncated_output with its head and tail, valid JSON", () => {
  const body = "HEAD" + "x".repeat(200_000) + "TAIL";
  const content = toolMessageContent(success({ text: body }, { tool: "big", warnings: ["slow"] }), 5000);
  assert.ok(content.length <= 5000, `${content.length}`);
  const parsed = JSON.parse(content);
  assert.equal(parsed.ok, true);
  assert.equal(parsed.tool, "big");
  assert.equal(parsed.result.kind, "truncated_output");
  assert.equal(parsed.result.truncated, true);
  assert.equal(parsed.result.original_chars, body.length);
  assert.ok(parsed.result.content.startsWith("HEAD"));
  assert.ok(parsed.result.content.endsWith("TAIL"));
  assert.match(parsed.result.content, /truncated \d+ of \d+ characters/);
  assert.equal(parsed.warnings[0], "slow", "earlier warnings stay");
  assert.match(parsed.warnings[1], /result\.content keeps its head and tail/);
});

Deno.test("tool message: text that grows when escaped (quotes, newlines, control characters) still fits", () => {
  for (const unit of ['"', "\n", "\u0001", "é", "😀"]) {
    const content = toolMessageContent(success(unit.repeat(50_000)), 3000);
    assert.ok(content.length <= 3000, `${JSON.stringify(unit)}: ${content.length}`);
    assert.equal(JSON.parse(content).result.kind, "truncated_output");
    // A surrogate pair is never split: the text survives a round trip through UTF-8.
    const text = JSON.parse(content).result.content as string;
    assert.equal(new TextDecoder().decode(new TextEncoder().encode(text)), text);
  }
});

Deno.test("tool message: a structured result is cut as its JSON text", () => {
  const rows = Array.from({ length: 5000 }, (_, i) => ({ row: i, value: "v".repeat(20) }));
  const parsed = JSON.parse(toolMessageContent(success(rows), 2000));
  assert.equal(parsed.result.kind, "truncated_output");
  assert.equal(parsed.result.original_chars, JSON.stringify(rows).length);
  assert.ok(parsed.result.content.startsWith('[{"row":0'));
});

Deno.test("tool message: an oversized failure stays a failure of its kind, its message cut", () => {
  const envelope = withWarnings(
    failure("execution_error", "E" + "r".repeat(100_000) + "!", { tool: "t", metadata: { exit_code: 3 } }),
    ["noted"],
  );
  const content = toolMessageContent(envelope, 4000);
  assert.ok(content.length <= 4000);
  const parsed = JSON.parse(content);
  assert.equal(parsed.ok, false);
  assert.equal(parsed.kind, "execution_error");
  assert.equal(parsed.retryable, true);
  assert.equal(parsed.tool, "t");
  assert.equal(parsed.exit_code, 3);
  assert.equal(parsed.truncated, true);
  assert.ok(parsed.message.startsWith("E") && parsed.message.endsWith("!"));
  assert.equal(parsed.warnings[0], "noted");
});

Deno.test("tool message: metadata too big to keep is dropped before the kind and message are", () => {
  const envelope = failure("timeout", "slow", { metadata: { dump: "d".repeat(50_000) } });
  const parsed = JSON.parse(toolMessageContent(envelope, 1000));
  assert.equal(parsed.kind, "timeout");
  assert.equal(parsed.message, "slow");
  assert.equal(parsed.dump, undefined);
});

Deno.test("a failure cut to fit keeps the secret it names (credential), so that auto-heal still works", () => {
  const long = failure("execution_error", `HTTP 401 ${"x".repeat(5000)}`, {
    tool: "gh",
    credential: "GITHUB_TOKEN",
  });
  const content = JSON.parse(toolMessageContent(long, 500));
  assert.equal(content.truncated, true);
  assert.equal(content.credential, "GITHUB_TOKEN");
});

Deno.test("a tool's image goes to the model as a note naming it; its text blocks as they are", () => {
  const data = btoa("\x89PNG\r\n\x1a\n".repeat(100));
  const envelope = withContent(success({ n: 1 }, { tool: "draw" }), [
    { type: "text", text: "a picture" },
    { type: "image", data, mimeType: "image/png" },
    {
      type: "resource",
      resource: { uri: "file:///a.bin", mimeType: "application/octet-stream", blob: data },
    },
  ]);
  const sent = JSON.parse(toolMessageContent(forModel(envelope)));
  assert.deepEqual(sent.content[0], { type: "text", text: "a picture" });
  assert.deepEqual(sent.content[1], {
    type: "image",
    mimeType: "image/png",
    left_out:
      "an image/png image (800 bytes) was not sent: the chat endpoint takes only text in a tool result",
  });
  assert.match(sent.content[2].left_out, /resource file:\/\/\/a\.bin \(800 bytes\) was not sent/);
  assert.ok(!JSON.stringify(sent).includes(data.slice(0, 40)), "no base64 reaches the model");
  assert.deepEqual(sent.result, { n: 1 });
});

Deno.test("a failure's image (an MCP server's isError answer) goes to the model as a note too, never as base64", () => {
  const data = btoa("\x89PNG\r\n\x1a\n".repeat(100));
  const envelope = withContent(failure("execution_error", "it broke", { tool: "mcp__own__fail" }), [
    { type: "text", text: "it broke" },
    { type: "image", data, mimeType: "image/png" },
  ]);
  const sent = JSON.parse(toolMessageContent(forModel(envelope)));
  assert.equal(sent.ok, false);
  assert.equal(sent.kind, "execution_error");
  assert.match(sent.content[1].left_out, /image\/png image \(800 bytes\) was not sent/);
  assert.ok(!JSON.stringify(sent).includes(data.slice(0, 40)), "no base64 reaches the model");
});
