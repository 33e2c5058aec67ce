/**
 * A publisher on the worker pool's subject, crafting calls by hand instead of through a caller's toolgate: the
 * worker checks every call again (its own preflight, its own manifest), and nothing a message adds (an
 * environment, a sandbox mode, a command) changes how a tool runs.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createInbox, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { isRecord } from "../../src/contract.ts";
import { connectPool } from "../../src/pool/connect.ts";
import { encode, manifestHash, POOL, PROTOCOL_VERSION, readReply } from "../../src/pool/protocol.ts";
import { baseEnv, BIN, manifestOf, scratch } from "../executor_helpers.ts";
import { natsServer, POOL_TOOLS, poolTest, startWorker, writePoolManifest } from "../pool/helpers.ts";

const TOOLS = [...POOL_TOOLS, { name: "env_dump", readOnly: true, command: [join(BIN, "env_dump")] }];

/** Publishes `fields` as a call on the pool's subject, over well-formed defaults (the manifest's hash, limits). */
async function publishCall(nc: NatsConnection, fields: Record<string, unknown>): Promise<void> {
  const id = crypto.randomUUID();
  await jetstream(nc).publish(
    POOL.subject,
    encode({
      v: PROTOCOL_VERSION,
      id,
      manifest: await manifestHash(manifestOf(TOOLS)),
      defaults: { timeoutSec: 10, graceMs: 500, maxOutputBytes: 65536 },
      ...fields,
    }),
    { msgID: id },
  );
}

/** Publishes `fields` as a call (over well-formed defaults), says yes to the claim, and returns the envelope. */
async function craftedCall(
  nc: NatsConnection,
  fields: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const reply = createInbox();
  const { promise, resolve } = Promise.withResolvers<Record<string, unknown>>();
  const subscription = nc.subscribe(reply, {
    callback: (_error, msg) => {
      const message = readReply(msg.data);
      if (message?.t === "claim") msg.respond(encode({ go: "yes" }));
      if (message?.t === "result") {
        msg.respond(encode({}));
        resolve(isRecord(message.envelope) ? message.envelope : {});
      }
    },
  });
  await publishCall(nc, { reply, ...fields });
  const timer = setTimeout(() => resolve({ timedOut: true }), 15_000);
  try {
    return await promise;
  } finally {
    clearTimeout(timer);
    subscription.unsubscribe();
  }
}

poolTest(
  "pool attack: a crafted call is checked again on the worker; what it adds changes nothing; a reply subject that is no inbox gets nothing sent there",
  async () => {
    await using server = await natsServer();
    await using dir = await scratch();
    const path = await writePoolManifest(dir.path, TOOLS);
    await using _worker = await startWorker(server.url, path, dir.path, "a");
    const nc = await connectPool(server.address, baseEnv(), "attacker");
    try {
      // Arguments a caller's preflight would refuse are refused by the worker's own.
      const bad = await craftedCall(nc, { tool: "echo", args: '{"n":"many","extra":true}' });
      assert.equal(bad.ok, false);
      assert.equal(bad.kind, "invalid_args");
      // A tool the manifest does not have does not run, whatever command the message names.
      const unknown = await craftedCall(nc, {
        tool: "sh",
        args: "{}",
        command: ["/bin/sh", "-c", "touch pwned"],
      });
      assert.equal(unknown.kind, "tool_not_found");
      // Extra keys (an environment, a sandbox mode, a command) are dropped before anything runs.
      const env = await craftedCall(nc, {
        tool: "env_dump",
        args: "{}",
        env: { INJECTED: "1", LD_PRELOAD: "/tmp/evil.so" },
        sandbox: "off",
        command: ["/bin/sh", "-c", "touch pwned"],
      });
      assert.equal(env.ok, true, JSON.stringify(env));
      const seen = env.result as Record<string, string>;
      assert.equal(seen.INJECTED, undefined);
      assert.equal(seen.LD_PRELOAD, undefined);
      assert.deepEqual(
        Object.keys(seen).filter((name) => !["PATH", "HOME", "PWD", "SHLVL", "_"].includes(name)),
        [],
      );
      await assert.rejects(Deno.stat(join(dir.path, "pwned")), Deno.errors.NotFound);
      // Were the reply subject taken as given, the worker would publish there with its own rights (a claim sent to
      // $JS.API.STREAM.PURGE.<stream> empties the work queue): here a subject the attacker listens on stands in.
      const sink: unknown[] = [];
      const listening = nc.subscribe("attacker.sink", {
        callback: (_error, msg) => void sink.push(msg.data),
      });
      await publishCall(nc, { reply: "attacker.sink", tool: "echo", args: "{}" });
      // A well-formed call after it is answered: the worker has taken (and dropped) the crafted one by then.
      const after = await craftedCall(nc, { tool: "echo", args: "{}" });
      assert.equal(after.ok, true, JSON.stringify(after));
      await nc.flush();
      listening.unsubscribe();
      assert.deepEqual(sink, [], "the worker sent nothing to a subject that is not an inbox");
    } finally {
      await nc.close();
    }
  },
);
