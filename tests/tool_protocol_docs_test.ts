/** docs/tool_protocol.md: its shell and Python examples run as toolgate/1 tools and answer what the page says. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { executorOf } from "./executor_helpers.ts";
import { REPO, tempDir } from "./support.ts";
import { fencedBlocks } from "./readme_blocks.ts";
import type { ToolEvent } from "../src/tool_protocol.ts";

const PAGE = await Deno.readTextFile(join(REPO, "docs", "tool_protocol.md"));

/** The page's block in `lang`, as a program in `dir`. */
async function example(dir: string, lang: string): Promise<string> {
  const block = fencedBlocks(PAGE).find((candidate) => candidate.lang === lang);
  assert.ok(block, `no ${lang} block in docs/tool_protocol.md`);
  const path = join(dir, lang);
  await Deno.writeTextFile(path, block.lines.map((line) => line.text).join("\n") + "\n");
  await Deno.chmod(path, 0o755);
  return path;
}

async function run(program: string) {
  const events: ToolEvent[] = [];
  const executor = executorOf({ command: [program], protocol: "toolgate/1", readOnly: true });
  const envelope = await executor.call("t", '{"n":1}', { onToolEvent: (event) => void events.push(event) });
  return { envelope: envelope as Record<string, unknown>, events };
}

Deno.test("the shell example logs, reports progress and answers a text block and a result", async () => {
  await using dir = await tempDir();
  const { envelope, events } = await run(await example(dir.path, "sh"));
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  assert.deepEqual(envelope.content, [{ type: "text", text: "counted to 3" }]);
  assert.deepEqual(envelope.result, { args: { n: 1 }, counted: 3 });
  assert.deepEqual(events.map((event) => event.kind), ["log", "progress", "progress", "progress"]);
});

Deno.test("the Python example answers text and an image", async () => {
  try {
    await Deno.stat("/usr/bin/python3");
  } catch {
    console.log("skipped: /usr/bin/python3 is missing here");
    return;
  }
  await using dir = await tempDir();
  const { envelope, events } = await run(await example(dir.path, "python"));
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  assert.deepEqual((envelope.content as { type: string }[]).map((block) => block.type), ["text", "image"]);
  assert.deepEqual(envelope.result, { args: { n: 1 } });
  assert.deepEqual(events.map((event) => event.kind), ["log", "progress"]);
});
