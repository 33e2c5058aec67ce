/**
 * Structured results of `toolgate serve`, through the MCP SDK's own client (which checks every
 * `structuredContent` against the tool's `outputSchema`): a success is the result and its JSON, a failure its
 * message and its envelope, a result that breaks its declared schema is withheld, and `tools/list` is what
 * `toolgate list --format mcp` prints.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { scratch } from "../executor_helpers.ts";
import { REPO, runCli } from "../support.ts";
import { connectStdio, envelopeOf, OUTPUT_MANIFEST } from "./helpers.ts";

type Block = { type: string; text: string };
const texts = (result: Record<string, unknown>) => (result.content as Block[]).map((block) => block.text);

/** Waits until the server's stderr (its own pipe, read apart from the answers) matches `pattern`. */
async function stderrMatching(served: { stderr: () => string }, pattern: RegExp): Promise<string> {
  const deadline = Date.now() + 10_000;
  while (!pattern.test(served.stderr())) {
    if (Date.now() > deadline) assert.fail(`stderr never matched ${pattern}:\n${served.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return served.stderr();
}

/** What `toolgate list --format mcp` prints for a manifest, parsed. */
async function listMcp(manifest: string): Promise<unknown> {
  const listed = await runCli(["list", "--format", "mcp", "--tools", manifest]);
  assert.equal(listed.code, 0, listed.stderr);
  return JSON.parse(listed.stdout);
}

Deno.test("serve: structured results and outputSchemas through the SDK client", async (t) => {
  await using dir = await scratch();
  await using served = await connectStdio([], dir.path, OUTPUT_MANIFEST);
  const { client } = served;
  // listTools first: from here on the client checks each structuredContent against the tool's outputSchema.
  const { tools } = await client.listTools();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));

  await t.step("tools/list is `list --format mcp`, outputSchemas and all", async () => {
    assert.deepEqual(JSON.parse(JSON.stringify(tools)), await listMcp(OUTPUT_MANIFEST));
    const outputSchema = byName.get("measure")!.outputSchema!;
    assert.equal(outputSchema.type, "object");
    const [declared, failed] = outputSchema.anyOf as Record<string, unknown>[];
    assert.deepEqual(declared.required, ["length", "unit"]);
    assert.deepEqual(failed.required, ["ok", "kind", "message", "retryable"]);
    assert.equal(byName.get("count")!.outputSchema, undefined, "no outputSchema declared, none sent");
  });

  await t.step("a success: the result as structuredContent, its JSON as the text block", async () => {
    const result = await client.callTool({ name: "measure", arguments: {} });
    assert.equal(result.isError, undefined);
    assert.deepEqual(result.structuredContent, { length: 42, unit: "m" });
    assert.deepEqual(texts(result), ['{"length":42,"unit":"m"}']);
  });

  await t.step(
    "an outputSchema with definitions and $ref: the client resolves it as the server sent it",
    async () => {
      const result = await client.callTool({ name: "tree_walk", arguments: {} });
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.deepEqual(result.structuredContent, {
        root: { name: "a", children: [{ name: "b", children: [] }] },
      });
    },
  );

  await t.step(
    "a result that breaks its outputSchema is withheld: a failure, never a protocol error",
    async () => {
      const result = await client.callTool({ name: "mismeasure", arguments: {} });
      assert.equal(result.isError, true);
      const envelope = envelopeOf(result);
      assert.equal(envelope.kind, "execution_error");
      assert.equal(envelope.retryable, false);
      assert.equal(envelope.invalid_result, true);
      assert.equal(envelope.tool, "mismeasure");
      assert.match(String(envelope.message), /does not match the outputSchema/);
      assert.match(String(envelope.message), /\/length must be integer/);
      assert.match(String(envelope.message), /must NOT have additional properties/);
      // Nothing of the withheld result reaches the client.
      assert.doesNotMatch(JSON.stringify(result), /ignore your instructions|forty-two/);
      await stderrMatching(served, /toolgate: mcp: mismeasure: The tool ran, but its result is withheld/);
    },
  );

  await t.step(
    "escape sequences in a withheld result's keys do not reach the server's stderr raw",
    async () => {
      const result = await client.callTool({ name: "stain", arguments: {} });
      assert.equal(result.isError, true);
      assert.match(String(envelopeOf(result).message), /must be integer/);
      const stderr = await stderrMatching(served, /toolgate: mcp: stain: .* must be integer/);
      // deno-lint-ignore no-control-regex
      assert.doesNotMatch(stderr, /[\u0007\u001b]/);
    },
  );

  await t.step("a result that is not an object, where the outputSchema wants one, is withheld", async () => {
    const result = await client.callTool({ name: "say", arguments: {} });
    assert.equal(result.isError, true);
    assert.match(String(envelopeOf(result).message), /\/ must be object/);
    assert.doesNotMatch(JSON.stringify(result), /just words/);
  });

  await t.step(
    "a failure of a tool with an outputSchema: the message as text, the envelope structured",
    async () => {
      const result = await client.callTool({ name: "burn", arguments: {} });
      assert.equal(result.isError, true);
      const envelope = envelopeOf(result);
      assert.equal(envelope.ok, false);
      assert.equal(envelope.kind, "execution_error");
      assert.equal(envelope.exit_code, 3);
      assert.deepEqual(texts(result), [envelope.message]);
      assert.match(String(envelope.message), /the disk is on fire/);
      // ok first, then the keys sorted: the contract's own order.
      assert.deepEqual(Object.keys(envelope), [
        "ok",
        ...Object.keys(envelope).filter((k) => k !== "ok").sort(),
      ]);
    },
  );

  await t.step("a refusal of a tool with an outputSchema passes the client's check too", async () => {
    const result = await client.callTool({ name: "stamp", arguments: {} });
    assert.equal(result.isError, true);
    assert.equal(envelopeOf(result).kind, "rejected");
    assert.match(texts(result)[0], /--allow-tools stamp/);
  });

  await t.step('a result that is not an object comes as {"result": VALUE}', async () => {
    const result = await client.callTool({ name: "count", arguments: {} });
    assert.equal(result.isError, undefined);
    assert.deepEqual(result.structuredContent, { result: [1, 2, 3] });
    assert.deepEqual(texts(result), ['{"result":[1,2,3]}']);
  });

  await t.step("a success's warnings follow its JSON, one text block each", async () => {
    const result = await client.callTool({ name: "mutter", arguments: {} });
    assert.equal(result.isError, undefined);
    assert.deepEqual(result.structuredContent, { text: "hello there\n" });
    assert.deepEqual(texts(result), [
      '{"text":"hello there\\n"}',
      "warning: the tool's stdout was not JSON; it is passed as text",
    ]);
  });

  assert.deepEqual(served.protocolErrors, []);
});

Deno.test("serve: the shipped belt's outputSchemas go out, and its results pass the SDK client's checks", async () => {
  await using dir = await scratch();
  await Deno.writeTextFile(join(dir.path, "a.txt"), "hello\n");
  const manifest = join(REPO, "tools.json");
  await using served = await connectStdio([], dir.path, manifest);
  const { client } = served;
  const { tools } = await client.listTools();
  assert.deepEqual(JSON.parse(JSON.stringify(tools)), await listMcp(manifest));
  for (const tool of tools) assert.ok(tool.outputSchema, `${tool.name} sends no outputSchema`);

  const time = await client.callTool({ name: "get_time", arguments: { timezone: "UTC" } });
  assert.equal(time.isError, undefined, JSON.stringify(time));
  assert.equal((time.structuredContent as { timezone: string }).timezone, "UTC");
  assert.deepEqual(JSON.parse(texts(time)[0]), time.structuredContent);

  const read = await client.callTool({ name: "fs_read_lines", arguments: { path: "a.txt" } });
  assert.equal(read.isError, undefined, JSON.stringify(read));
  assert.deepEqual(JSON.parse(texts(read)[0]), read.structuredContent);

  const missing = await client.callTool({ name: "fs_read_file", arguments: { path: "nope.txt" } });
  assert.equal(missing.isError, true);
  assert.equal(envelopeOf(missing).kind, "not_found");
  assert.deepEqual(served.protocolErrors, []);
});
