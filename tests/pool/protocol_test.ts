/** The pool's wire format: calls and replies checked on receipt, and the manifest's hash. */
import assert from "node:assert/strict";
import {
  encode,
  manifestHash,
  PROTOCOL_VERSION,
  readCall,
  readCancel,
  readClaimAnswer,
  readReply,
  shortHash,
} from "../../src/pool/protocol.ts";
import { manifestOf } from "../executor_helpers.ts";

const CALL = {
  v: PROTOCOL_VERSION,
  id: "c1",
  tool: "echo",
  args: "{}",
  manifest: "sha256:ab",
  reply: "_INBOX.x",
  defaults: { timeoutSec: 30, graceMs: 2000, maxOutputBytes: 1024 },
};

Deno.test("readCall: a well-formed call comes back as it was sent", () => {
  assert.deepEqual(readCall(encode(CALL)), { ok: true, call: CALL });
});

Deno.test("readCall: anything else is refused, with the reason", () => {
  const cases: [unknown, RegExp][] = [
    ["not json", /not a JSON object/],
    [[1], /not a JSON object/],
    [{ ...CALL, v: 2 }, /protocol version 2, this worker speaks 1/],
    [{ ...CALL, id: "" }, /must be strings/],
    [{ ...CALL, args: { a: 1 } }, /must be strings/],
    [{ ...CALL, defaults: { timeoutSec: 0, graceMs: 1, maxOutputBytes: 1 } }, /positive/],
    [{ ...CALL, defaults: { timeoutSec: 1, graceMs: 1, maxOutputBytes: 1.5 } }, /positive/],
    [{ ...CALL, defaults: { timeoutSec: 1, graceMs: -1, maxOutputBytes: 1 } }, /graceMs of 0 or more/],
    [{ ...CALL, reply: "$JS.API.STREAM.PURGE.TOOLGATE_CALLS" }, /reply must be an inbox/],
    [{ ...CALL, reply: "_INBOX.a.>" }, /reply must be an inbox/],
  ];
  for (const [value, reason] of cases) {
    const data = typeof value === "string" ? new TextEncoder().encode(value) : encode(value);
    const read = readCall(data);
    assert.ok(!read.ok, JSON.stringify(value));
    assert.match(read.problem, reason);
  }
});

Deno.test("readCall: --kill-grace 0 (SIGKILL at once) travels as it is", () => {
  const call = { ...CALL, defaults: { ...CALL.defaults, graceMs: 0 } };
  assert.deepEqual(readCall(encode(call)), { ok: true, call });
});

Deno.test("readCall: only the known keys are kept (nothing else a sender adds travels on)", () => {
  const read = readCall(encode({ ...CALL, env: { SECRET: "x" }, defaults: { ...CALL.defaults, extra: 1 } }));
  assert.ok(read.ok);
  assert.deepEqual(read.call, CALL);
});

Deno.test("readReply: each message kind, checked; anything else is ignored", () => {
  assert.deepEqual(readReply(encode({ t: "claim", id: "c1", worker: "w", control: "_INBOX.w" })), {
    t: "claim",
    id: "c1",
    worker: "w",
    control: "_INBOX.w",
  });
  assert.equal(
    readReply(encode({ t: "claim", id: "c1", worker: "w" })),
    undefined,
    "a claim names its control",
  );
  assert.equal(
    readReply(encode({ t: "claim", id: "c1", worker: "w", control: "$JS.API.STREAM.DELETE.X" })),
    undefined,
    "a claim's control is an inbox, no other subject",
  );
  assert.equal(readReply(encode({ t: "beat", id: "c1", worker: "w" }))?.t, "beat");
  assert.equal(
    readReply(encode({ t: "mismatch", id: "c1", worker: "w", manifest: "sha256:1" }))?.t,
    "mismatch",
  );
  assert.deepEqual(readReply(encode({ t: "result", id: "c1", worker: "w", envelope: { ok: true } })), {
    t: "result",
    id: "c1",
    worker: "w",
    envelope: { ok: true },
  });
  assert.equal(readReply(encode({ t: "other", id: "c1", worker: "w" })), undefined);
  assert.equal(readReply(encode({ t: "beat", id: "c1" })), undefined);
});

Deno.test("readClaimAnswer: only yes and later count; anything unreadable is no", () => {
  assert.equal(readClaimAnswer(encode({ go: "yes" })), "yes");
  assert.equal(readClaimAnswer(encode({ go: "later" })), "later");
  for (const value of [{ go: true }, { go: "YES" }, {}, [], "x"]) {
    assert.equal(readClaimAnswer(encode(value)), "no");
  }
  assert.equal(readClaimAnswer(new TextEncoder().encode("{")), "no");
});

Deno.test("readCancel: a cancel names its call; byUser only when true", () => {
  assert.deepEqual(readCancel(encode({ t: "cancel", id: "c1", byUser: true })), {
    t: "cancel",
    id: "c1",
    byUser: true,
  });
  assert.equal(readCancel(encode({ t: "cancel", id: "c1", byUser: "yes" }))?.byUser, false);
  assert.equal(readCancel(encode({ t: "cancel" })), undefined);
});

Deno.test("manifestHash: the same tools in two folders hash alike; any change to a tool shows", async () => {
  const tools = [
    { name: "a", description: "Read a.", command: ["/bin/cat"], readOnly: true },
    { name: "b", command: ["/bin/true"], timeoutSec: 5 },
  ];
  const here = await manifestHash(manifestOf(tools, "/srv/one/tools.json"));
  const there = await manifestHash(manifestOf(tools, "/opt/two/tools.json"));
  assert.equal(here, there);
  assert.match(here, /^sha256:[0-9a-f]{64}$/);
  assert.match(shortHash(here), /^sha256:[0-9a-f]{12}$/);
  const changes = [
    [{ ...tools[0], description: "Read b." }, tools[1]],
    [{ ...tools[0], readOnly: false }, tools[1]],
    [tools[0], { ...tools[1], timeoutSec: 6 }],
    [tools[0], { ...tools[1], permissions: "none" }],
    [tools[1], tools[0]],
    [tools[0]],
  ];
  for (const changed of changes) {
    assert.notEqual(await manifestHash(manifestOf(changed)), here, JSON.stringify(changed));
  }
});
