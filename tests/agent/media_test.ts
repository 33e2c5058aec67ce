/**
 * A tool's images and audio in the agent loop, end to end (the real CLI against a scripted endpoint): sent after
 * the tool messages in a user message where the run says the endpoint takes them, a note otherwise, and notes for
 * the rest of the run once the endpoint refuses a request that carries them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { answer, callTools, type Reply, type Script, startChatServer, toolMessages } from "./chat_server.ts";
import { runAgentCli, scriptedRunArgs } from "./run_cli.ts";
import { FIXTURES, tempDir } from "../support.ts";

const MANIFEST = join(FIXTURES, "mcp", "media.json");
const IMAGE_URL = "data:image/png;base64,iVBORw0KGgo=";

/** Runs the loop over the media manifest; returns the run and the endpoint's recorded requests. */
async function run(script: Script, args: string[], env: Record<string, string> = {}) {
  await using dir = await tempDir();
  await using server = startChatServer(script);
  const workspace = join(dir.path, "work");
  await Deno.mkdir(workspace);
  const result = await runAgentCli([...scriptedRunArgs(server.baseUrl, MANIFEST, workspace), ...args], {
    env: { XDG_STATE_HOME: join(dir.path, "state"), ...env },
    cwd: workspace,
  });
  return { ...result, requests: server.requests };
}

/** The user messages with content parts in a request body. */
// deno-lint-ignore no-explicit-any
function mediaMessages(body: any): { role: string; content: Record<string, unknown>[] }[] {
  // deno-lint-ignore no-explicit-any
  return body.messages.filter((m: any) => m.role === "user" && Array.isArray(m.content));
}

// deno-lint-ignore no-explicit-any
const carriesImage = (body: any) => JSON.stringify(body).includes(IMAGE_URL);

Deno.test("agent loop: with --images a tool's image goes to the model in a user message after the tool messages", async () => {
  const result = await run([callTools([{ id: "c1", name: "draw" }]), answer("A cat.")], ["--images"]);
  assert.equal(result.code, 0, result.stderr);
  const body = result.requests[1].body;
  const roles = body.messages.map((m: { role: string }) => m.role);
  assert.deepEqual(roles, ["system", "user", "assistant", "tool", "user"]);
  const envelope = JSON.parse(toolMessages(body)[0].content);
  assert.match(
    envelope.content[1].attached,
    /image\/png image \(8 bytes\): sent as image 1 in the user message/,
  );
  assert.equal(
    JSON.stringify(toolMessages(body)).includes("iVBORw0KGgo="),
    false,
    "no base64 in the tool message",
  );
  // The audio was not switched on: it stays a note.
  assert.match(envelope.content[2].left_out, /audio\/wav audio .* was not sent/);
  const [media] = mediaMessages(body);
  assert.deepEqual(media.content, [
    { type: "text", text: "The tool call c1 (draw) answered image 1:" },
    { type: "image_url", image_url: { url: IMAGE_URL } },
  ]);
});

Deno.test("agent loop: with OAI_AUDIO=1 a tool's WAV goes as input_audio; without a setting both are notes", async () => {
  const audio = await run([callTools([{ id: "c1", name: "draw" }]), answer("A beep.")], [], {
    OAI_AUDIO: "1",
  });
  assert.equal(audio.code, 0, audio.stderr);
  const [media] = mediaMessages(audio.requests[1].body);
  assert.deepEqual(media.content[1], {
    type: "input_audio",
    input_audio: { data: "UklGRiQAAABXQVZF", format: "wav" },
  });
  assert.equal(carriesImage(audio.requests[1].body), false);

  const plain = await run([callTools([{ id: "c1", name: "draw" }]), answer("Something.")], []);
  assert.equal(plain.code, 0, plain.stderr);
  assert.deepEqual(mediaMessages(plain.requests[1].body), []);
  const envelope = JSON.parse(toolMessages(plain.requests[1].body)[0].content);
  assert.match(envelope.content[1].left_out, /was not sent: the chat endpoint takes only text/);
});

Deno.test("agent loop: an endpoint that answers 400 to an image gets notes instead, for the rest of the run", async () => {
  const refused: Reply = {
    status: 400,
    json: { error: { message: "image input is not supported by this model" } },
  };
  const script: Script = (request, index) =>
    carriesImage(request.body)
      ? refused
      : index === 0
      ? callTools([{ id: "c1", name: "draw" }])
      : index === 2
      ? callTools([{ id: "c2", name: "draw" }])
      : answer("Two pictures, unseen.");
  const result = await run(script, [], { OAI_IMAGES: "1" });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, "Two pictures, unseen.\n");
  // The request with the image, refused; the same conversation again without it; the next turn never sends one.
  assert.deepEqual(result.requests.map((r) => carriesImage(r.body)), [false, true, false, false]);
  assert.match(result.stderr, /refused the tools' images or audio .*image input is not supported/);
  const last = result.requests[3].body;
  assert.deepEqual(mediaMessages(last), []);
  assert.deepEqual(last.messages.map((m: { role: string }) => m.role), [
    "system",
    "user",
    "assistant",
    "tool",
    "assistant",
    "tool",
  ]);
  for (const message of toolMessages(last)) {
    assert.match(
      JSON.parse(message.content).content[1].left_out,
      /image\/png image \(8 bytes\) was not sent/,
    );
  }
});
