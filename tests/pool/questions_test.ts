/**
 * A `toolgate/1` tool on a worker asks its caller (against a real NATS server on loopback, a real `toolgate
 * worker`): its form, its question to the model and for the client's roots are answered by the caller's own
 * handlers, its log and
 * progress reach the caller, a caller that cannot ask says so to the tool, and an answer not signed with the
 * pool's key is never taken.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Msg } from "@nats-io/transport-node";
import type { Envelope } from "../../src/contract.ts";
import { connectPool } from "../../src/pool/connect.ts";
import { encode } from "../../src/pool/protocol.ts";
import { importPoolKey, signed } from "../../src/pool/signing.ts";
import type { ToolEvent } from "../../src/manifest/tool_messages.ts";
import type { QuestionHandlers } from "../../src/run/tool_questions.ts";
import { baseEnv, executorFor, manifestOf, scratch } from "../executor_helpers.ts";
import { FIXTURES } from "../support.ts";
import { type NatsServer, natsServer, poolFor, poolTest, startWorker, writePoolManifest } from "./helpers.ts";

const BIN = join(FIXTURES, "mcp", "tools", "bin");
const TOOLS: readonly Record<string, unknown>[] = [
  {
    name: "ask_user",
    command: [join(BIN, "ask"), "user"],
    protocol: "toolgate/1",
    asks: ["user"],
    readOnly: true,
  },
  {
    name: "ask_model",
    command: [join(BIN, "ask"), "model"],
    protocol: "toolgate/1",
    asks: ["model"],
    readOnly: true,
  },
  {
    name: "ask_roots",
    command: [join(BIN, "ask"), "roots"],
    protocol: "toolgate/1",
    asks: ["roots"],
    readOnly: true,
  },
  { name: "survey", command: [join(BIN, "survey")], protocol: "toolgate/1", readOnly: true },
];
const MANIFEST = manifestOf(TOOLS);

/** The answer line the `ask` tool read, from its text block. */
function toolRead(envelope: Envelope): Record<string, unknown> {
  assert.ok(envelope.ok, JSON.stringify(envelope));
  const [block] = envelope.content ?? [];
  return JSON.parse(String(block?.text));
}

/** Calls a tool of TOOLS through the pool, with the caller's handlers and event sink. */
type CallThrough = (
  name: string,
  options: { questions?: QuestionHandlers; onToolEvent?: (event: ToolEvent) => void },
) => Promise<Envelope>;

/** A pool with one worker serving TOOLS, and a caller's executor on it. */
async function withPool(run: (call: CallThrough, server: NatsServer) => Promise<void>): Promise<void> {
  await using server = await natsServer();
  await using dir = await scratch();
  const path = await writePoolManifest(dir.path, TOOLS);
  await using _worker = await startWorker(server.url, path, dir.path, "w1");
  await using pool = await poolFor(server, MANIFEST);
  const executor = executorFor(MANIFEST, { pool });
  await run((name, options) => executor.call(name, "{}", options), server);
}

poolTest(
  "pool: a pooled tool's form is answered by the caller's handler, its questions to the model and for the roots too",
  async () => {
    await withPool(async (call) => {
      const asked: unknown[] = [];
      const questions: QuestionHandlers = {
        user: (question, context) => {
          asked.push({ ...question, tool: context.tool.name });
          return Promise.resolve({ action: "accept", content: { target: "prod" } });
        },
        model: (request) => {
          asked.push(request);
          return Promise.resolve({
            role: "assistant",
            content: { type: "text", text: "All good." },
            model: "m",
          });
        },
      };
      const form = toolRead(await call("ask_user", { questions }));
      assert.deepEqual(form, {
        type: "answer",
        id: "q",
        answer: { action: "accept", content: { target: "prod" } },
      });
      const roots = toolRead(
        await call("ask_roots", {
          questions: { roots: () => Promise.resolve({ roots: [{ uri: "file:///home/ada/project" }] }) },
        }),
      );
      assert.deepEqual(roots.answer, { roots: [{ uri: "file:///home/ada/project" }] });
      const sample = toolRead(await call("ask_model", { questions }));
      assert.deepEqual(sample.answer, {
        role: "assistant",
        content: { type: "text", text: "All good." },
        model: "m",
      });
      assert.deepEqual(asked, [
        {
          message: "Deploy where?",
          requestedSchema: {
            type: "object",
            properties: { target: { type: "string", enum: ["staging", "prod"], default: "staging" } },
          },
          tool: "ask_user",
        },
        {
          messages: [{ role: "user", content: { type: "text", text: "Summarize: all good" } }],
          maxTokens: 20,
        },
      ]);
    });
  },
);

poolTest(
  "pool: a pooled tool's log and progress reach the caller in order; a caller that cannot ask says so",
  async () => {
    await withPool(async (call) => {
      const events: ToolEvent[] = [];
      const envelope = await call("survey", { onToolEvent: (event) => events.push(event) });
      assert.ok(envelope.ok, JSON.stringify(envelope));
      assert.deepEqual(events, [
        { kind: "log", level: "info", message: "starting" },
        { kind: "progress", progress: 1, total: 2, message: "half way" },
        { kind: "progress", progress: 2, total: 2 },
      ]);
      // No handlers on the caller: the tool hears the caller's reason at once (not a timeout of the worker's).
      const read = toolRead(await call("ask_user", {}));
      // ("toolgate" may come back masked: the worker's TOOLGATE_POOL_KEY_FILE path, under /tmp/toolgate_..., is a
      // secret of its environment.)
      assert.match(JSON.stringify(read.error), /this caller of (toolgate|\[REDACTED\]) cannot ask the user/);
    });
  },
);

poolTest(
  "pool: an answer to a pooled tool's question not signed with the pool's key, or recorded for another, is never taken",
  async () => {
    await withPool(async (call, server) => {
      // Someone on the NATS server sees the calls' messages (they travel in clear) and answers each question
      // first: with a key of its own, and with every genuine answer it recorded, as sent and re-addressed.
      const spy = await connectPool(server.address, baseEnv(), "spy");
      const otherKey = await importPoolKey(
        "another-key-0123456789abcdefghijklmnopqrstuvwxyz",
        "the spy's key",
      );
      const controls = new Map<string, string>();
      const recorded: Record<string, unknown>[] = [];
      // The signatures of what the spy sent or recorded: it hears its own messages too.
      const known = new Set<string>();
      let sent = 0;
      const forge = async (msg: Msg) => {
        const value = JSON.parse(new TextDecoder().decode(msg.data));
        if (value.t === "claim") controls.set(value.id, value.control);
        if (value.t === "answer" && !known.has(value.sig)) {
          known.add(value.sig);
          recorded.push(value);
        }
        if (value.t !== "ask") return;
        const to = controls.get(value.id)!;
        const forged = await signed(otherKey, "answer", {
          t: "answer",
          id: value.id,
          worker: value.worker,
          nonce: value.nonce,
          answer: { action: "accept", content: { target: "forged" } },
        });
        known.add(forged.sig);
        const replays = recorded.flatMap((answer) => [
          answer,
          { ...answer, id: value.id, nonce: value.nonce },
        ]);
        for (const message of [forged, ...replays]) spy.publish(to, encode(message));
        sent += 1 + replays.length;
      };
      spy.subscribe("_INBOX.>", { callback: (_error, msg) => void forge(msg) });
      let turn = 0;
      const targets = ["prod", "staging"];
      const questions: QuestionHandlers = {
        // The caller's person takes a moment: the spy's answers arrive first.
        user: async () => {
          await new Promise((resolve) => setTimeout(resolve, 300));
          return { action: "accept", content: { target: targets[turn++] } };
        },
      };
      const first = toolRead(await call("ask_user", { questions }));
      const second = toolRead(await call("ask_user", { questions }));
      // The spy may still be at work on what it heard last: its count is taken once it is done.
      const deadline = performance.now() + 5_000;
      while ((recorded.length < 2 || sent < 4) && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await spy.close();
      assert.equal(recorded.length, 2, "the spy recorded both genuine answers");
      assert.equal(sent, 1 + 3, "a forged answer to each question, and the recorded one replayed twice");
      assert.deepEqual(first.answer, { action: "accept", content: { target: "prod" } });
      assert.deepEqual(second.answer, { action: "accept", content: { target: "staging" } });
    });
  },
);
