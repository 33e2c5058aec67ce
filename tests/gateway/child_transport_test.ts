/**
 * The gateway's stdio transport on real processes: messages sent at once (the writes of a burst go together) all
 * arrive, whole and in order; a line that is not JSON-RPC is reported and skipped, the next still read; a closed
 * connection refuses what is sent after.
 */
import assert from "node:assert/strict";
import { ChildTransport } from "../../src/gateway/child_transport.ts";

/** A child that writes `first` (when given), then echoes its stdin: each message sent comes back as received. */
function echoing(first = ""): Deno.ChildProcess {
  return new Deno.Command("/bin/sh", {
    args: ["-c", 'printf "%s" "$1"; exec cat', "sh", first],
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

Deno.test("child transport: 500 requests sent at once arrive whole and in order", async () => {
  const child = echoing();
  const transport = new ChildTransport(child);
  const received: unknown[] = [];
  const all = Promise.withResolvers<void>();
  transport.onmessage = (message) => {
    received.push(message);
    if (received.length === 500) all.resolve();
  };
  await transport.start();
  const sent = Array.from({ length: 500 }, (_, id) => ({
    jsonrpc: "2.0" as const,
    id,
    method: "tools/call",
    params: { name: "echo", arguments: { text: "x".repeat(id % 7 * 100) } },
  }));
  await Promise.all(sent.map((message) => transport.send(message)));
  await all.promise;
  assert.deepEqual(received, sent);
  await transport.close();
  await assert.rejects(() => transport.send({ jsonrpc: "2.0", method: "ping" }), /closed/);
  await child.status;
  await transport.stderrEnded;
});

Deno.test("child transport: a line that is not JSON-RPC is reported and skipped; the next is read", async () => {
  const child = echoing('{"jsonrpc":"1.0","id":1,"result":{}}\n{"jsonrpc":"2.0","id":2,"result":[]}\n');
  const transport = new ChildTransport(child);
  const errors: string[] = [];
  const received = Promise.withResolvers<unknown>();
  transport.onerror = (error) => errors.push(error.message);
  transport.onmessage = (message) => received.resolve(message);
  await transport.start();
  await transport.send({ jsonrpc: "2.0", id: 3, method: "ping" });
  assert.deepEqual(await received.promise, { jsonrpc: "2.0", id: 3, method: "ping" });
  assert.deepEqual(errors, [
    'the server wrote a line that is not JSON-RPC: its jsonrpc is not "2.0"',
    "the server wrote a line that is not JSON-RPC: its result is not an object",
  ]);
  await transport.close();
  await child.status;
  await transport.stderrEnded;
});
