/** toolgate/1: the channel's reading of a tool's messages, and real tools that keep or break it. @module */
import assert from "node:assert/strict";
import { join } from "node:path";
import { executorOf } from "../executor_helpers.ts";
import { tempDir } from "../support.ts";
import { ToolChannel } from "../../src/manifest/tool_protocol.ts";
import { parseMessage, type ToolEvent } from "../../src/manifest/tool_messages.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";

const encoder = new TextEncoder();

/** A `/bin/sh` script in `dir` that speaks toolgate/1 (its body after reading the arguments). */
async function script(dir: string, name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await Deno.writeTextFile(path, `#!/bin/sh\nread -r args\n${body}\n`);
  await Deno.chmod(path, 0o755);
  return path;
}

/** Runs `program` as a toolgate/1 tool to its envelope, with the events it sent. */
async function call(program: string, argsText = "{}") {
  const executor = executorOf({ command: [program], protocol: "toolgate/1", readOnly: true });
  const events: ToolEvent[] = [];
  const envelope = await executor.call("t", argsText, { onToolEvent: (event) => void events.push(event) });
  return { envelope: envelope as Record<string, unknown>, events };
}

Deno.test("a channel keeps content blocks and the result, and passes log and progress on at once", () => {
  const events: ToolEvent[] = [];
  const channel = new ToolChannel({
    tool: "t",
    maxBytes: 1 << 20,
    onEvent: (event) => void events.push(event),
    onViolation: () => assert.fail("no violation expected"),
  });
  const lines = [
    { type: "log", level: "warning", message: "careful" },
    { type: "progress", progress: 1, total: 2, message: "half" },
    { type: "content", content: [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }] },
    { type: "content", content: { type: "resource_link", uri: "file:///x", name: "x" } },
    { type: "result", result: { n: 1 } },
  ].map((message) => JSON.stringify(message)).join("\n");
  // Split mid-line: the channel reads what arrives, not whole lines.
  const bytes = encoder.encode(lines);
  channel.sink(bytes.subarray(0, 30), "stdout");
  assert.equal(events.length, 0);
  channel.sink(bytes.subarray(30), "stdout");
  channel.end();
  assert.deepEqual(events, [
    { kind: "log", level: "warning", message: "careful" },
    { kind: "progress", progress: 1, total: 2, message: "half" },
  ]);
  assert.deepEqual(channel.content.map((block) => block.type), ["image", "resource_link"]);
  assert.deepEqual(channel.result, { n: 1 });
  assert.equal(channel.violation, undefined);
});

Deno.test("a message that is not one names what is wrong", () => {
  for (
    const [line, reason] of [
      ["not json", /not JSON/],
      ["[1]", /not a JSON object/],
      ['{"type":"shout"}', /"type" must be/],
      ['{"type":"log","level":"loud","message":"x"}', /log level/],
      ['{"type":"content","content":[{"type":"image","data":"x"}]}', /content\[0\] needs "data".*"mimeType"/],
      ['{"type":"progress","progress":"half"}', /finite number/],
    ] as const
  ) {
    const parsed = parseMessage(line);
    assert.equal(parsed.ok, false, line);
    if (!parsed.ok) assert.match(parsed.reason, reason);
  }
});

Deno.test("a channel cuts a tool off at too many messages, and at a line too long, once", () => {
  let cut = 0;
  const channel = new ToolChannel({
    tool: "t",
    maxBytes: 1 << 20,
    onViolation: () => void (cut += 1),
    limits: { maxLineBytes: 100, maxMessages: 3 },
  });
  const log = encoder.encode('{"type":"log","level":"info","message":"x"}\n');
  for (let i = 0; i < 10; i++) channel.sink(log, "stdout");
  assert.equal(cut, 1);
  assert.match(channel.violation!.message, /more than 3 log and progress messages/);
  assert.equal(channel.violation!.protocol_error, true);

  const long = new ToolChannel({
    tool: "t",
    maxBytes: 1 << 20,
    onViolation: () => {},
    limits: { maxLineBytes: 100, maxMessages: 3 },
  });
  long.sink(encoder.encode("x".repeat(150)), "stdout");
  assert.match(long.violation!.message, /a line longer than 100 bytes/);
});

Deno.test("a manifest's protocol must be one toolgate speaks", () => {
  const result = validateManifest(
    { tools: [{ name: "t", command: ["./tools/bin/t"], protocol: "mcp" }] },
    "/srv/tools.json",
  );
  assert.equal(result.ok, false);
  if (!result.ok) {
    assert.match(result.errors.join("\n"), /tool\[0\] "t": protocol must be one of "toolgate\/1"/);
  }
});

Deno.test("a toolgate/1 tool answers content blocks and a result; its logs and progress arrive as it runs", async () => {
  await using dir = await tempDir();
  const program = await script(
    dir.path,
    "speak",
    `printf '%s\\n' '{"type":"log","level":"info","message":"started"}'
printf '%s\\n' '{"type":"progress","progress":1,"total":1}'
printf '%s\\n' '{"type":"content","content":[{"type":"text","text":"done"}]}'
printf '{"type":"result","result":%s}\\n' "$args"`,
  );
  const { envelope, events } = await call(program, '{"n":2}');
  assert.equal(envelope.ok, true, JSON.stringify(envelope));
  assert.deepEqual(envelope.result, { n: 2 });
  assert.deepEqual(envelope.content, [{ type: "text", text: "done" }]);
  assert.deepEqual(events, [
    { kind: "log", level: "info", message: "started" },
    { kind: "progress", progress: 1, total: 1, message: undefined },
  ]);
});

Deno.test("a toolgate/1 tool's failure is the usual failure: its stderr and exit status", async () => {
  await using dir = await tempDir();
  const program = await script(dir.path, "fail", "echo 'no such user' >&2\nexit 4");
  const { envelope } = await call(program);
  assert.equal(envelope.ok, false);
  assert.equal(envelope.exit_code, 4);
  assert.match(String(envelope.message), /no such user/);
});

Deno.test("a tool that floods its channel is cut off with a clear envelope, and the call ends", async () => {
  await using dir = await tempDir();
  const program = await script(
    dir.path,
    "flood",
    `while :; do printf '%s\\n' '{"type":"log","level":"debug","message":"again"}'; done`,
  );
  const { envelope, events } = await call(program);
  assert.equal(envelope.ok, false);
  assert.equal(envelope.kind, "execution_error");
  assert.equal(envelope.protocol_error, true);
  assert.equal(envelope.retryable, false);
  assert.match(String(envelope.message), /more than 1000 log and progress messages; it was stopped/);
  assert.equal(events.length, 1000);
});

Deno.test("a tool that writes a line that is not a message is cut off, even while it would go on", async () => {
  await using dir = await tempDir();
  const program = await script(dir.path, "chatty", "echo 'hello, I am not JSON'\nsleep 30");
  const { envelope } = await call(program);
  assert.equal(envelope.ok, false);
  assert.match(
    String(envelope.message),
    /broke toolgate's tool protocol \(toolgate\/1\): a line is not JSON/,
  );
});

Deno.test("a tool that writes one endless line is cut off at the line cap", async () => {
  await using dir = await tempDir();
  const program = await script(
    dir.path,
    "endless",
    "while :; do printf 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; done",
  );
  const executor = executorOf({ command: [program], protocol: "toolgate/1", readOnly: true }, {
    maxOutputBytes: 64 * 1024,
  });
  const envelope = await executor.call("t", "{}") as Record<string, unknown>;
  assert.equal(envelope.ok, false);
  assert.equal(envelope.protocol_error, true);
  assert.match(String(envelope.message), /more than 65536 bytes on its protocol channel/);
});

Deno.test("a tool that does not declare the protocol is read as always: its JSON lines are its answer", async () => {
  await using dir = await tempDir();
  const path = join(dir.path, "plain");
  await Deno.writeTextFile(path, `#!/bin/sh\ncat >/dev/null\necho '{"type":"content","content":[]}'\n`);
  await Deno.chmod(path, 0o755);
  const envelope = await executorOf({ command: [path], readOnly: true }).call("t", "{}");
  assert.deepEqual(envelope, { ok: true, result: { type: "content", content: [] }, tool: "t" });
});
