/** The pool's wire format: calls and replies checked on receipt, their signatures, and the manifest's hash. */
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
import { readAnswer } from "../../src/pool/relay_messages.ts";
import { ReplayGuard } from "../../src/pool/replay_guard.ts";
import { importPoolKey, signed, verified } from "../../src/pool/signing.ts";
import { canonical } from "../../src/base/canonical_json.ts";
import { manifestOf } from "../executor_helpers.ts";

const CALL = {
  v: PROTOCOL_VERSION,
  id: "c1",
  tool: "echo",
  args: "{}",
  manifest: "sha256:ab",
  reply: "_INBOX.x",
  defaults: { timeoutSec: 30, graceMs: 2000, maxOutputBytes: 1024 },
  ts: 1_767_225_600_000,
  wait: 30_000,
  sig: "s",
};

Deno.test("readCall: a well-formed call comes back as it was sent", () => {
  assert.deepEqual(readCall(encode(CALL)), { ok: true, call: CALL });
});

Deno.test("readCall: anything else is refused, with the reason", () => {
  const cases: [unknown, RegExp][] = [
    ["not json", /not a JSON object/],
    [[1], /not a JSON object/],
    [{ ...CALL, v: 1 }, /protocol version 1, this worker speaks 2/],
    [{ ...CALL, id: "" }, /must be strings/],
    [{ ...CALL, args: { a: 1 } }, /must be strings/],
    [{ ...CALL, defaults: { timeoutSec: 0, graceMs: 1, maxOutputBytes: 1 } }, /positive/],
    [{ ...CALL, defaults: { timeoutSec: 1, graceMs: 1, maxOutputBytes: 1.5 } }, /positive/],
    [{ ...CALL, defaults: { timeoutSec: 1, graceMs: -1, maxOutputBytes: 1 } }, /graceMs of 0 or more/],
    [{ ...CALL, reply: "$JS.API.STREAM.PURGE.TOOLGATE_CALLS" }, /reply must be an inbox/],
    [{ ...CALL, reply: "_INBOX.a.>" }, /reply must be an inbox/],
    [{ ...CALL, ts: "now" }, /ts and wait must be whole milliseconds/],
    [{ ...CALL, wait: -1 }, /ts and wait must be whole milliseconds/],
    [{ ...CALL, wait: 86_400_000 }, /wait at most/],
    [{ ...CALL, sig: 1 }, /sig must be a string/],
  ];
  for (const [value, reason] of cases) {
    const data = typeof value === "string" ? new TextEncoder().encode(value) : encode(value);
    const read = readCall(data);
    assert.ok(!read.ok, JSON.stringify(value));
    assert.match(read.reason, reason);
  }
});

Deno.test("readCall: --kill-grace 0 (SIGKILL at once) travels as it is", () => {
  const call = { ...CALL, defaults: { ...CALL.defaults, graceMs: 0 } };
  assert.deepEqual(readCall(encode(call)), { ok: true, call });
});

Deno.test("readCall: a call without a signature is read as one (the worker refuses it, saying why)", () => {
  const { sig: _sig, ...unsigned } = CALL;
  assert.deepEqual(readCall(encode(unsigned)), { ok: true, call: unsigned });
});

Deno.test("readCall: only the known keys are kept (nothing else a sender adds travels on)", () => {
  const read = readCall(encode({ ...CALL, env: { SECRET: "x" }, defaults: { ...CALL.defaults, extra: 1 } }));
  assert.ok(read.ok);
  assert.deepEqual(read.call, CALL);
});

Deno.test("readReply: each message kind, checked; anything else is ignored", () => {
  assert.deepEqual(
    readReply(encode({ t: "claim", id: "c1", worker: "w", control: "_INBOX.w", nonce: "n", sig: "s" })),
    { t: "claim", id: "c1", worker: "w", control: "_INBOX.w", nonce: "n", sig: "s" },
  );
  assert.equal(
    readReply(encode({ t: "claim", id: "c1", worker: "w", nonce: "n", sig: "s" })),
    undefined,
    "a claim names its control",
  );
  assert.equal(
    readReply(
      encode({ t: "claim", id: "c1", worker: "w", control: "$JS.API.STREAM.DELETE.X", nonce: "n", sig: "s" }),
    ),
    undefined,
    "a claim's control is an inbox, no other subject",
  );
  assert.equal(
    readReply(encode({ t: "claim", id: "c1", worker: "w", control: "_INBOX.w", nonce: "n" })),
    undefined,
    "a claim is signed",
  );
  assert.equal(readReply(encode({ t: "beat", id: "c1", worker: "w", n: 1, sig: "s" }))?.t, "beat");
  assert.equal(
    readReply(encode({ t: "beat", id: "c1", worker: "w", sig: "s" })),
    undefined,
    "a beat is numbered",
  );
  assert.deepEqual(
    readReply(encode({ t: "mismatch", id: "c1", worker: "w", manifest: "sha256:1", sig: "s" })),
    {
      t: "mismatch",
      id: "c1",
      worker: "w",
      sig: "s",
    },
  );
  assert.deepEqual(
    readReply(encode({ t: "result", id: "c1", worker: "w", envelope: { ok: true }, sig: "s" })),
    {
      t: "result",
      id: "c1",
      worker: "w",
      envelope: { ok: true },
      sig: "s",
    },
  );
  assert.equal(readReply(encode({ t: "result", id: "c1", worker: "w", envelope: { ok: true } })), undefined);
  assert.deepEqual(readReply(encode({ t: "refused", id: "c1", worker: "w", reason: "stale" })), {
    t: "refused",
    id: "c1",
    worker: "w",
    reason: "stale",
  });
  assert.equal(readReply(encode({ t: "refused", id: "c1", worker: "w", reason: "sha256:1" })), undefined);
  assert.equal(readReply(encode({ t: "other", id: "c1", worker: "w", sig: "s" })), undefined);
  assert.equal(readReply(encode({ t: "beat", id: "c1", n: 1, sig: "s" })), undefined);
});

Deno.test("readClaimAnswer: a signed answer naming its claim; anything else is no answer (no run)", () => {
  const answer = { go: "yes", id: "c1", worker: "w", nonce: "n", sig: "s" };
  assert.deepEqual(readClaimAnswer(encode(answer)), answer);
  assert.equal(readClaimAnswer(encode({ ...answer, go: "later" }))?.go, "later");
  for (
    const value of [
      { go: "yes" },
      { ...answer, sig: undefined },
      { ...answer, go: true },
      { ...answer, go: "YES" },
      {
        ...answer,
        nonce: "",
      },
      [],
      "x",
    ]
  ) {
    assert.equal(readClaimAnswer(encode(value)), undefined, JSON.stringify(value));
  }
  assert.equal(readClaimAnswer(new TextEncoder().encode("{")), undefined);
});

Deno.test("readCancel: a signed cancel names its call; byUser only when true", () => {
  assert.deepEqual(readCancel(encode({ t: "cancel", id: "c1", byUser: true, sig: "s" })), {
    t: "cancel",
    id: "c1",
    byUser: true,
    sig: "s",
  });
  assert.equal(readCancel(encode({ t: "cancel", id: "c1", byUser: "yes", sig: "s" }))?.byUser, false);
  assert.equal(readCancel(encode({ t: "cancel", id: "c1", byUser: true })), undefined, "unsigned");
  assert.equal(readCancel(encode({ t: "cancel" })), undefined);
});

const KEY_TEXT = "protocol-test-key-0123456789abcdefghijklmnop";

Deno.test("signing: a signature covers every field and its purpose, and only the pool's key makes it", async () => {
  const key = await importPoolKey(KEY_TEXT, "the test key");
  const other = await importPoolKey(KEY_TEXT + "x", "another key");
  const { sig: _sig, ...fields } = CALL;
  const call = await signed(key, "call", fields);
  assert.match(call.sig, /^[A-Za-z0-9_-]{43}$/);
  assert.ok(await verified(key, "call", call));
  // Read back from the wire, as a worker reads it.
  const read = readCall(encode(call));
  assert.ok(read.ok && await verified(key, "call", { ...read.call }));
  assert.ok(!await verified(other, "call", call), "another key");
  assert.ok(!await verified(key, "go", call), "another purpose");
  assert.ok(!await verified(key, "call", { ...call, sig: undefined }), "no signature");
  assert.ok(!await verified(key, "call", { ...call, sig: call.sig.slice(1) }), "a cut signature");
  for (
    const changed of [
      { tool: "exec" },
      { args: '{"n":1}' },
      { id: "c2" },
      { manifest: "sha256:cd" },
      { ts: CALL.ts + 1 },
      { wait: 60_000 },
      { reply: "_INBOX.y" },
      { defaults: { ...CALL.defaults, timeoutSec: 31 } },
    ]
  ) {
    assert.ok(!await verified(key, "call", { ...call, ...changed }), JSON.stringify(changed));
  }
  // Key order is no part of it: the canonical text sorts them.
  assert.equal(
    canonical({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: null } }),
    '{"a":{"c":null,"d":[1,{"e":3,"f":2}]},"b":1}',
  );
  const reordered = Object.fromEntries(Object.entries(call).reverse());
  assert.ok(await verified(key, "call", reordered));
});

Deno.test("signing: a signature is Web Crypto's HMAC-SHA-256 of the purpose and the canonical JSON, under the key's text", async () => {
  // Computed in this thread, the bytes must be those every caller and worker checks: the standard HMAC.
  const key = await importPoolKey(`  ${KEY_TEXT}\n`, "the test key");
  const reference = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(KEY_TEXT),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const { sig: _sig, ...fields } = CALL;
  for (const purpose of ["call", "go", "reply", "cancel", "answer"] as const) {
    const text = `toolgate-pool/${purpose}\n${canonical(JSON.parse(JSON.stringify(fields)))}`;
    const expected = new Uint8Array(
      await crypto.subtle.sign("HMAC", reference, new TextEncoder().encode(text)),
    );
    const { sig } = await signed(key, purpose, fields);
    assert.equal(sig, expected.toBase64({ alphabet: "base64url", omitPadding: true }), purpose);
  }
  // A long envelope (many blocks) as well as a short message.
  const long = { t: "result", id: "c1", worker: "w", envelope: { ok: true, data: "x".repeat(10_000) } };
  const expected = new Uint8Array(
    await crypto.subtle.sign(
      "HMAC",
      reference,
      new TextEncoder().encode(`toolgate-pool/reply\n${canonical(long)}`),
    ),
  );
  assert.equal(
    (await signed(key, "reply", long)).sig,
    expected.toBase64({ alphabet: "base64url", omitPadding: true }),
  );
  // Nothing of the key shows.
  assert.equal(JSON.stringify(key), "{}");
  assert.ok(!Deno.inspect(key).includes("protocol-test-key"));
});

Deno.test("importPoolKey: a key shorter than 32 bytes is refused, naming where it came from", async () => {
  await assert.rejects(
    importPoolKey("  short  \n", "the pool key file /k"),
    /the pool key file \/k holds 5 bytes; a pool key needs at least 32/,
  );
});

Deno.test("ReplayGuard: a call is taken while fresh and its id once; a redelivery of the same message is no replay", () => {
  const guard = new ReplayGuard({ skewMs: 60_000, capacity: 2 });
  const now = 1_767_225_600_000;
  const call = { id: "a", seq: 1, ts: now, wait: 30_000 };
  assert.equal(guard.check(call, now), "fresh");
  assert.equal(guard.check(call, now + 1000), "fresh", "the stream handed the same message out again");
  assert.equal(guard.check({ ...call, seq: 2 }, now + 1000), "replayed");
  assert.equal(guard.check({ ...call, id: "b", ts: now - 91_000 }, now), "stale", "older than wait and skew");
  assert.equal(guard.check({ ...call, id: "b", ts: now + 61_000 }, now), "stale", "from the future");
  assert.equal(guard.check({ ...call, id: "b", ts: now - 89_000 }, now), "fresh", "within wait and skew");
  assert.equal(guard.check({ ...call, id: "c", seq: 3 }, now), "full", "the memory is bounded");
  // Once the first ids can no longer come fresh, they are forgotten and room is made.
  assert.equal(guard.check({ ...call, id: "c", seq: 3, ts: now + 95_000 }, now + 95_000), "fresh");
  assert.equal(guard.size, 1);
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
  // Where a bound secret goes: a worker that would send it elsewhere has another manifest.
  const bound = (host: string) => ({
    name: "c",
    command: ["/bin/true"],
    permissions: { net: ["api.example.com", "other.example.com"] },
    credentials: [{ secret: "K", env: "K", hosts: [host], header: "X-Key" }],
  });
  assert.notEqual(
    await manifestHash(manifestOf([bound("api.example.com")])),
    await manifestHash(manifestOf([bound("other.example.com")])),
  );
});

Deno.test("readReply and readAnswer: a relayed question, event and answer are checked; anything else is ignored", () => {
  const question = {
    type: "elicit",
    id: "n1",
    message: "Where?",
    requestedSchema: { type: "object", properties: {} },
  };
  assert.deepEqual(readReply(encode({ t: "ask", id: "c1", worker: "w", nonce: "n1", question, sig: "s" })), {
    t: "ask",
    id: "c1",
    worker: "w",
    nonce: "n1",
    question,
    sig: "s",
  });
  assert.equal(
    readReply(encode({ t: "ask", id: "c1", worker: "w", question, sig: "s" })),
    undefined,
    "a nonce",
  );
  assert.equal(
    readReply(encode({ t: "ask", id: "c1", worker: "w", nonce: "n1", question })),
    undefined,
    "signed",
  );
  const event = { type: "progress", progress: 1 };
  assert.equal(readReply(encode({ t: "event", id: "c1", worker: "w", n: 2, event, sig: "s" }))?.t, "event");
  assert.equal(readReply(encode({ t: "event", id: "c1", worker: "w", n: 0, event, sig: "s" })), undefined);
  assert.equal(
    readReply(encode({ t: "event", id: "c1", worker: "w", n: 1, event: "x", sig: "s" })),
    undefined,
  );
  assert.deepEqual(
    readAnswer(
      encode({ t: "answer", id: "c1", worker: "w", nonce: "n1", answer: { action: "decline" }, sig: "s" }),
    ),
    { t: "answer", id: "c1", worker: "w", nonce: "n1", answer: { action: "decline" }, sig: "s" },
  );
  assert.equal(readAnswer(encode({ t: "answer", id: "c1", worker: "w", nonce: "n1" })), undefined, "signed");
  assert.equal(
    readAnswer(encode({ t: "answer", id: "c1", worker: "w", nonce: "n1", error: 1, sig: "s" })),
    undefined,
  );
  assert.equal(
    readAnswer(encode({ t: "cancel", id: "c1", byUser: true, sig: "s" })),
    undefined,
    "a cancel is none",
  );
});
