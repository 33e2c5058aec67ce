// A pool whose NATS server was started a moment ago (`nats-server ... &`, then a worker or a call, as the pool
// page's "on one machine" block does): the first connection is refused until the server listens, and is tried
// again for a few seconds; a pool where nothing comes up is still said at once after that.
import assert from "node:assert/strict";
import { connectPool, PoolError } from "../../src/pool/connect.ts";
import { parsePoolUrl } from "../../src/pool/address.ts";
import { NATS_SERVER, poolTest } from "./helpers.ts";

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

poolTest(
  "pool: a NATS server that starts listening a moment after the caller connects is reached",
  async () => {
    const port = freePort();
    const address = parsePoolUrl(`nats://127.0.0.1:${port}`);
    assert.ok(typeof address !== "string");
    const store = await Deno.makeTempDir({ prefix: "toolgate_nats_" });
    let server: Deno.ChildProcess | undefined;
    const starting = new Promise<void>((resolve) =>
      setTimeout(() => {
        server = new Deno.Command(NATS_SERVER!, {
          args: ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", store],
          stdout: "null",
          stderr: "null",
        }).spawn();
        resolve();
      }, 700)
    );
    try {
      const nc = await connectPool(address, {}, "toolgate test");
      await nc.close();
    } finally {
      await starting;
      server?.kill("SIGTERM");
      await server?.status;
      await Deno.remove(store, { recursive: true });
    }
  },
);

poolTest("pool: nothing listening is said after the few seconds a starting server gets", async () => {
  const address = parsePoolUrl(`nats://127.0.0.1:${freePort()}`);
  assert.ok(typeof address !== "string");
  await assert.rejects(() => connectPool(address, {}, "toolgate test"), (error: unknown) => {
    assert.ok(error instanceof PoolError);
    assert.match(error.message, /cannot reach the worker pool at nats:\/\/127\.0\.0\.1:\d+: .*refused/i);
    return true;
  });
});
