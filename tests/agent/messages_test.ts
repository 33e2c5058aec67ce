import assert from "node:assert/strict";
import { AgentError } from "../../src/agent/errors.ts";
import { checkMessages, parseCompletion } from "../../src/agent/messages.ts";

const withMessage = (message: unknown) => ({ choices: [{ index: 0, message, finish_reason: "stop" }] });

function malformed(value: unknown, pattern: RegExp): void {
  assert.throws(() => parseCompletion(value), (error: unknown) => {
    assert.ok(error instanceof AgentError, String(error));
    assert.match(error.message, pattern);
    return true;
  });
}

Deno.test("messages: a plain answer and an answer with tool calls", () => {
  assert.deepEqual(parseCompletion(withMessage({ role: "assistant", content: "hi" })), {
    message: { role: "assistant", content: "hi" },
    finishReason: "stop",
  });
  const calls = [{ id: "c1", type: "function", function: { name: "nap", arguments: '{"label":"a"}' } }];
  assert.deepEqual(
    parseCompletion(withMessage({ role: "assistant", content: null, tool_calls: calls })).message,
    {
      role: "assistant",
      content: null,
      tool_calls: calls,
    },
  );
});

Deno.test("messages: arguments sent as an object, or left out, are taken", () => {
  const turn = parseCompletion(withMessage({
    content: null,
    tool_calls: [
      { id: "a", function: { name: "nap", arguments: { label: "x" } } },
      { id: "b", function: { name: "echo" } },
    ],
  }));
  assert.deepEqual(turn.message.tool_calls?.map((c) => c.function.arguments), ['{"label":"x"}', ""]);
});

Deno.test("messages: a malformed answer fails naming what is wrong", () => {
  malformed("text", /not a JSON object/);
  malformed({}, /no choices/);
  malformed({ choices: [] }, /no choices/);
  malformed({ choices: [{}] }, /choices\[0\]\.message is missing/);
  malformed(withMessage({ role: "user", content: "x" }), /role is "user"/);
  malformed(withMessage({ content: 5 }), /content is neither text nor null/);
  malformed(withMessage({ content: null, tool_calls: "x" }), /tool_calls is not an array/);
  malformed(
    withMessage({ content: null, tool_calls: [{ function: { name: "a" } }] }),
    /tool_calls\[0\]\.id is missing/,
  );
  malformed(
    withMessage({ content: null, tool_calls: [{ id: "a" }] }),
    /tool_calls\[0\]\.function is missing/,
  );
  malformed(
    withMessage({ content: null, tool_calls: [{ id: "a", function: { arguments: "{}" } }] }),
    /tool_calls\[0\]\.function\.name is missing/,
  );
  malformed(
    withMessage({
      content: null,
      tool_calls: [{ id: "a", function: { name: "x" } }, { id: "a", function: { name: "y" } }],
    }),
    /tool_calls\[1\]\.id "a" repeats/,
  );
  malformed(
    withMessage({ content: null, tool_calls: [{ id: "a", function: { name: "x", arguments: 7 } }] }),
    /arguments/,
  );
});

Deno.test("messages: an error body is reported as the endpoint's error", () => {
  malformed(
    { error: { message: "model not found", type: "invalid_request_error" } },
    /answered with an error: model not found/,
  );
});

Deno.test("messages: a saved user message of media parts loads; a part of another kind is named", () => {
  const parts = [
    { type: "text", text: "The tool call c1 (draw) answered image 1:" },
    { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
    { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } },
  ];
  assert.deepEqual(checkMessages([{ role: "user", content: parts }], (m) => new Error(m)), [
    { role: "user", content: parts },
  ]);
  assert.throws(
    () => checkMessages([{ role: "user", content: [{ type: "file", file: {} }] }], (m) => new Error(m)),
    /message\[0\]\.content\[0\] is not a text, image_url or input_audio part/,
  );
  assert.throws(
    () => checkMessages([{ role: "system", content: parts }], (m) => new Error(m)),
    /\(system\): content must be text/,
  );
});
