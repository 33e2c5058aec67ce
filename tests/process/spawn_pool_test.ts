// The spawn pool (src/process/spawn_pool.ts): starts spread over its spawn threads, each child whole through the
// thread that started it, and `close` ends what still runs on every thread.
import assert from "node:assert/strict";
import { SpawnPool, spawnThreadCount } from "../../src/process/spawn_pool.ts";

const decoder = new TextDecoder();

Deno.test("spawn pool: two threads at most, one on a machine of one core", async () => {
  assert.equal(spawnThreadCount(1), 1);
  assert.equal(spawnThreadCount(2), 2);
  assert.equal(spawnThreadCount(16), 2);
  const pool = new SpawnPool(0);
  assert.equal(pool.size, 1);
  await pool.close();
});

Deno.test("spawn pool: 40 starts at once, each child's input, output and status its own", async () => {
  const pool = new SpawnPool(2);
  try {
    const runs = Array.from({ length: 40 }, async (_, i) => {
      const child = await pool.spawn({
        program: "/bin/sh",
        args: ["-c", 'read -r line; echo "$line $1"; exit "$2"', "sh", String(i), String(i % 3)],
        cwd: "/",
        env: {},
        detached: false,
        input: new TextEncoder().encode(`start ${i}\n`),
      });
      const [out, , status] = await Promise.all([
        new Response(child.stdout).arrayBuffer(),
        child.stderr.cancel(),
        child.status,
      ]);
      return { out: decoder.decode(out), code: status.code };
    });
    const results = await Promise.all(runs);
    results.forEach(({ out, code }, i) => {
      assert.equal(out, `start ${i} ${i}\n`);
      assert.equal(code, i % 3);
    });
  } finally {
    await pool.close();
  }
});

Deno.test("spawn pool: close kills what still runs on each thread", async () => {
  const pool = new SpawnPool(2);
  const children = await Promise.all(
    [0, 1, 2, 3].map(() =>
      pool.spawn({ program: "/bin/sleep", args: ["60"], cwd: "/", env: {}, detached: false })
    ),
  );
  await pool.close();
  for (const child of children) {
    const [status] = await Promise.all([child.status, child.stdout.cancel(), child.stderr.cancel()]);
    assert.equal(status.signal, "SIGKILL");
  }
  await assert.rejects(
    pool.spawn({ program: "/bin/true", args: [], cwd: "/", env: {}, detached: false }),
    /closed/,
  );
});
