/** docs/tool_protocol.md: its shell and Python examples run as toolgate/1 tools and answer what the page says. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { executorOf } from "./executor_helpers.ts";
import { REPO, tempDir } from "./support.ts";
import { fencedBlocks } from "./readme_blocks.ts";
import type { ToolEvent } from "../src/manifest/tool_messages.ts";
import type { QuestionHandlers } from "../src/run/tool_questions.ts";
import { facilityTest, whyMissing } from "./requires.ts";

const PAGE = await Deno.readTextFile(join(REPO, "docs", "tool_protocol.md"));

/** The page's first block in `lang` (after the heading `after`, when given), as a program in `dir`. */
async function example(dir: string, lang: string, after?: string): Promise<string> {
  const from = after === undefined ? 0 : PAGE.split("\n").indexOf(after) + 1;
  assert.ok(after === undefined || from > 0, `no heading ${after} in docs/tool_protocol.md`);
  const block = fencedBlocks(PAGE).find((candidate) => candidate.lang === lang && candidate.line > from);
  assert.ok(block, `no ${lang} block in docs/tool_protocol.md`);
  const path = join(dir, lang);
  await Deno.writeTextFile(path, block.lines.map((line) => line.text).join("\n") + "\n");
  await Deno.chmod(path, 0o755);
  return path;
}

async function run(program: string, questions?: QuestionHandlers) {
  const events: ToolEvent[] = [];
  const asks = questions === undefined ? undefined : ["user", "model"];
  const executor = executorOf({ command: [program], protocol: "toolgate/1", readOnly: true, asks });
  const envelope = await executor.call("t", '{"n":1}', {
    onToolEvent: (event) => void events.push(event),
    questions,
  });
  return { envelope: envelope as Record<string, unknown>, events };
}

const NO_PYTHON = await whyMissing("python3");

Deno.test("the shell example logs, reports progress and answers a text block and a result", async () => {
  await using dir = await tempDir();
  const { envelope, events } = await run(await example(dir.path, "sh"));
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  assert.deepEqual(envelope.content, [{ type: "text", text: "counted to 3" }]);
  assert.deepEqual(envelope.result, { args: { n: 1 }, counted: 3 });
  assert.deepEqual(events.map((event) => event.kind), ["log", "progress", "progress", "progress"]);
});

facilityTest("python3", NO_PYTHON, {
  name: "the Python example answers text and an image",
  fn: async () => {
    await using dir = await tempDir();
    const { envelope, events } = await run(await example(dir.path, "python"));
    assert.equal(envelope.ok, true, JSON.stringify(envelope));
    assert.deepEqual((envelope.content as { type: string }[]).map((block) => block.type), ["text", "image"]);
    assert.deepEqual(envelope.result, { args: { n: 1 } });
    assert.deepEqual(events.map((event) => event.kind), ["log", "progress"]);
  },
});

Deno.test("the shell asking example gets the user's answer back", async () => {
  await using dir = await tempDir();
  const { envelope } = await run(await example(dir.path, "sh", "## Example: asking, in shell"), {
    user: (question) => {
      assert.equal(question.message, "Deploy to?");
      return Promise.resolve({ action: "accept", content: { target: "prod" } });
    },
  });
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  assert.deepEqual(envelope.result, {
    asked: { type: "answer", id: "where", answer: { action: "accept", content: { target: "prod" } } },
  });
});

facilityTest("python3", NO_PYTHON, {
  name: "the Python asking example asks the user, then the model, and answers the model's text",
  fn: async () => {
    await using dir = await tempDir();
    const { envelope } = await run(await example(dir.path, "python", "## Example: asking, in Python"), {
      user: () => Promise.resolve({ action: "accept", content: { name: "Bo" } }),
      model: (request) => {
        assert.deepEqual(request.messages[0].content, { type: "text", text: "A two-line poem for Bo" });
        return Promise.resolve({
          role: "assistant",
          content: { type: "text", text: "Roses, Bo." },
          model: "m",
        });
      },
    });
    assert.equal(envelope.ok, true, JSON.stringify(envelope));
    assert.deepEqual(envelope.content, [{ type: "text", text: "Roses, Bo." }]);
  },
});
