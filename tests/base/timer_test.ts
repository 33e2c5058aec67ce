// `after` behaves as `setTimeout` and `clearTimeout` do for a process's life, without loading Node's timers.
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "../support.ts";

const TIMER = JSON.stringify(join(REPO, "src", "base", "timer.ts"));

/** Runs `code` as a module in a runtime of its own: its output, and how long the process lived. */
async function run(code: string): Promise<{ out: string; ms: number }> {
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return { out: new TextDecoder().decode(output.stdout).trim(), ms: performance.now() - started };
}

Deno.test("after: a pending timer keeps the process alive until it fires", async () => {
  const { out } = await run(`import { after } from ${TIMER}; after(300, () => console.log("fired"));`);
  assert.equal(out, "fired");
});

Deno.test("after: a cancelled timer neither fires nor keeps the process alive", async () => {
  const { out, ms } = await run(
    `import { after } from ${TIMER}; const cancel = after(20_000, () => console.log("fired")); cancel(); cancel();`,
  );
  assert.equal(out, "");
  assert.ok(ms < 15_000, `the process ended at once (${Math.round(ms)} ms)`);
});

Deno.test("after: timers fire in the order of their delays, and cancelling after firing is harmless", async () => {
  const { out } = await run(
    `import { after } from ${TIMER};
     const order = [];
     const late = after(200, () => { order.push("late"); console.log(order.join(",")); });
     const early = after(50, () => { order.push("early"); early(); });
     after(100.4, () => order.push("middle"));`,
  );
  assert.equal(out, "early,middle,late");
});

Deno.test("after: a timer that does not keep the process alive fires while something else does, and only then", async () => {
  const alive = await run(
    `import { after } from ${TIMER};
     after(100, () => console.log("fired"), { keepAlive: false });
     const cancelled = after(50, () => console.log("cancelled fired"), { keepAlive: false });
     cancelled();
     after(400, () => console.log("end"));`,
  );
  assert.equal(alive.out, "fired\nend");
  const alone = await run(
    `import { after } from ${TIMER}; after(20_000, () => console.log("fired"), { keepAlive: false });`,
  );
  assert.equal(alone.out, "");
  assert.ok(alone.ms < 15_000, `the process ended at once (${Math.round(alone.ms)} ms)`);
});
