/**
 * The stop button's half in the process registry (issue 14): the first SIGINT goes to whoever armed it (the agent
 * loop), a second one within the window ends every tree and exits 130; with nothing to stop, SIGINT ends toolgate
 * as before. A real process (tests/fixtures/interrupt_probe.ts) and real signals.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { alivePids, killLeftovers } from "../executor_helpers.ts";
import { FIXTURES } from "../support.ts";

const PROBE = join(FIXTURES, "interrupt_probe.ts");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Probe {
  readonly child: Deno.ChildProcess;
  readonly tree: number;
  /** The lines printed so far. */
  readonly lines: string[];
}

async function startProbe(...args: string[]): Promise<Probe> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-run", "--allow-read", PROBE, ...args],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const { promise: ready, resolve } = Promise.withResolvers<void>();
  (async () => {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return resolve();
      buffered += value;
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      lines.push(...parts);
      if (lines.includes("ready")) resolve();
    }
  })();
  await ready;
  const tree = Number(lines.find((line) => line.startsWith("pid "))!.slice(4));
  return { child, tree, lines };
}

Deno.test("ProcessRegistry: the first Ctrl-C goes to the stop button; a second within the window ends every tree, exit 130", async () => {
  const probe = await startProbe("2000");
  try {
    probe.child.kill("SIGINT");
    await sleep(300);
    assert.deepEqual(probe.lines.filter((line) => line === "stopped"), ["stopped"]);
    assert.deepEqual(await alivePids([probe.child.pid, probe.tree]), [probe.child.pid, probe.tree]);
    probe.child.kill("SIGINT");
    const status = await probe.child.status;
    assert.equal(status.code, 130);
    assert.deepEqual(
      probe.lines.filter((line) => line === "stopped"),
      ["stopped"],
      "the second press was not the button's",
    );
    assert.deepEqual(await alivePids([probe.tree]), [], "the tree went with toolgate");
  } finally {
    killLeftovers([probe.tree]);
  }
});

Deno.test("ProcessRegistry: after the window a press is the button's again; with nothing to stop, Ctrl-C ends toolgate", async () => {
  const probe = await startProbe("300");
  try {
    probe.child.kill("SIGINT");
    await sleep(600);
    probe.child.kill("SIGINT");
    await sleep(300);
    assert.deepEqual(probe.lines.filter((line) => line === "stopped"), ["stopped", "stopped"]);
    probe.child.kill("SIGTERM");
    assert.equal((await probe.child.status).code, 143);
  } finally {
    killLeftovers([probe.tree]);
  }
  const idle = await startProbe("2000", "--idle");
  try {
    idle.child.kill("SIGINT");
    assert.equal((await idle.child.status).code, 130);
    assert.deepEqual(await alivePids([idle.tree]), []);
  } finally {
    killLeftovers([idle.tree]);
  }
});
