import assert from "node:assert/strict";
import type { ToolEvent } from "../manifest/tool_messages.ts";
import { ServerVoice } from "./server_voice.ts";

Deno.test("server voice: progress goes by its token to its own call; a log is the only call's, or nobody's", () => {
  const voice = new ServerVoice("ev");
  const a: ToolEvent[] = [];
  const b: ToolEvent[] = [];
  const first = voice.open((event) => a.push(event));
  const second = voice.open((event) => b.push(event));
  assert.notEqual(first.token, second.token);
  voice.progress({ progressToken: second.token, progress: 1, total: 2 });
  voice.progress({ progressToken: "guessed", progress: 5 });
  // Two calls in flight: a log cannot be told whose, and reaches neither.
  voice.log({ level: "error", data: "whose?" });
  second.close();
  voice.log({ level: "error", logger: "db", data: { code: 7 } });
  voice.progress({ progressToken: second.token, progress: 2, total: 2 });
  first.close();
  assert.deepEqual(b, [{ kind: "progress", progress: 1, total: 2 }]);
  assert.deepEqual(a, [{
    kind: "log",
    level: "error",
    logger: "ev/db",
    message: '{"code":7}',
    data: { code: 7 },
  }]);
});

Deno.test("server voice: the level asked of the server is the least severe any caller asked", () => {
  const voice = new ServerVoice("ev");
  assert.equal(voice.level, undefined);
  assert.equal(voice.want("warning"), true);
  assert.equal(voice.want("error"), false);
  assert.equal(voice.want("debug"), true);
  assert.equal(voice.level, "debug");
  // A call nobody listens to asks for no progress.
  assert.equal(voice.open().token, undefined);
});

Deno.test("server voice: a call hears at most as many messages as a toolgate/1 tool may send", () => {
  const voice = new ServerVoice("ev");
  let heard = 0;
  const call = voice.open(() => heard++);
  for (let i = 0; i < 5000; i++) voice.log({ level: "info", data: `flood ${i}` });
  call.close();
  assert.equal(heard, 1000);
});
