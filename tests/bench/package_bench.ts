/**
 * Benchmarks the start of a package server: an entry as hosts write it and `toolgate import` keeps it
 * (`npx -y @modelcontextprotocol/server-memory`), installed and pinned by a real `toolgate trust`, then started
 * again (a second start: the first warms the page cache) through the gateway, confined, up to its first
 * `tools/list` answer; against the same installed server started directly with the official SDK client over stdio
 * (`node BIN`, unconfined), up to its first `tools/list` answer. Target: toolgate adds at most 1 s to the start
 * (the server's own start, Node loading its modules, is the same on both sides and takes about that long on a loaded
 * machine); the ratio is printed beside it.
 *
 * toolgate's side is what `serve` and `call` do at a server's first use: the install's tree checked against its pin
 * (its stamp), the launch (bwrap, cgroups where there are), the MCP handshake, the listing checked against the pins.
 *
 * Run: `deno run -A tests/bench/package_bench.ts` (`--rounds N` to change the number of rounds).
 *
 * @module
 */
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
import { validateManifest } from "../../src/manifest/manifest.ts";
import { readInstalls, removeTree } from "../../src/packages/package_store.ts";
import { Executor } from "../../src/run/executor.ts";
import { probeSandbox } from "../../src/sandbox/sandbox.ts";
import { stateRoot } from "../../src/state/state.ts";
import { NODE } from "../gateway_support.ts";
import { runToolgate } from "../support.ts";

/** The target: what toolgate adds to a second start of a pinned, confined package server, in ms. */
export const TARGET_MS = 1000;
const ROUNDS = 10;
const ENTRY = { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Benchmarks a package server's start; returns the figures (the ratio, and the times as context). */
export async function benchPackages(rounds = ROUNDS): Promise<Record<string, number>> {
  const support = await probeSandbox(Deno.env.get("PATH") ?? "/usr/bin:/bin");
  if (!support.ok) {
    console.log(`  skipped: no sandbox: ${support.reason}`);
    return {};
  }
  const dir = await Deno.makeTempDir({ prefix: "tgpb" });
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: dir,
    XDG_STATE_HOME: join(dir, "s"),
    XDG_CONFIG_HOME: join(dir, "c"),
  };
  try {
    const manifestPath = join(dir, "tools.json");
    const memoryFile = join(dir, "memory.jsonl");
    const server = {
      ...ENTRY,
      env: { MEMORY_FILE_PATH: memoryFile },
      permissions: { write: [dir], net: false },
    };
    await Deno.writeTextFile(manifestPath, JSON.stringify({ tools: [], mcpServers: { memory: server } }));
    // A real install and pin, as the user makes it.
    const trusted = await runToolgate(["trust"], dir, env);
    const install = readInstalls(stateRoot(env), await Deno.realPath(manifestPath)).memory;
    if (trusted.code !== 0 || install === undefined) {
      console.log(
        `  skipped: toolgate trust could not install the server: ${trusted.stdout}${trusted.stderr}`,
      );
      return {};
    }
    const loaded = validateManifest(JSON.parse(await Deno.readTextFile(manifestPath)), manifestPath);
    if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
    let executors = 0;
    const throughToolgate = async () => {
      const executor = new Executor({
        manifest: loaded.manifest,
        env,
        cwd: dir,
        auditDir: join(dir, "audit", String(executors++)),
        auditKey: crypto.getRandomValues(new Uint8Array(32)),
        sandbox: "require",
        openGateway: async (wiring) => new (await import("../../src/gateway/gateway.ts")).Gateway(wiring),
      });
      const started = performance.now();
      const lines = await executor.connectGateway();
      const took = performance.now() - started;
      await executor.close();
      if (lines.length > 0) throw new Error(lines.join("\n"));
      return took;
    };
    const direct = async () => {
      const client = new Client({ name: "bench", version: "1.0.0" });
      const started = performance.now();
      await client.connect(
        new StdioClientTransport({
          command: NODE,
          args: [install.program],
          env: { PATH: env.PATH, MEMORY_FILE_PATH: memoryFile },
          stderr: "ignore",
        }),
      );
      const { tools } = await client.listTools();
      const took = performance.now() - started;
      await client.close();
      if (tools.length === 0) throw new Error("the server listed no tools");
      return took;
    };
    // The first start of each (the files come into the page cache); the figures are of the starts after it.
    await throughToolgate();
    await direct();
    const gate: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < rounds; i++) {
      if (i % 2 === 0) {
        gate.push(await throughToolgate());
        plain.push(await direct());
      } else {
        plain.push(await direct());
        gate.push(await throughToolgate());
      }
    }
    const figures = {
      ratio_median_confined: median(gate) / median(plain),
      confined_start_ms_median: median(gate),
      direct_start_ms_median: median(plain),
      overhead_ms_median: median(gate) - median(plain),
      target_ms: TARGET_MS,
    };
    console.log(
      `  a second start to the first tools/list: ${median(gate).toFixed(0)} ms confined through toolgate, ` +
        `${median(plain).toFixed(0)} ms started directly (ratio ${
          figures.ratio_median_confined.toFixed(2)
        }); ` +
        `toolgate adds ${(median(gate) - median(plain)).toFixed(0)} ms, target at most ${TARGET_MS} ms: ${
          median(gate) - median(plain) <= TARGET_MS ? "met" : "NOT met"
        }`,
    );
    return figures;
  } finally {
    removeTree(join(dir, ".local"));
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--rounds");
  const figures = await benchPackages(at >= 0 ? Number(Deno.args[at + 1]) : ROUNDS);
  for (const [key, value] of Object.entries(figures)) console.log(`  ${key}: ${Number(value.toFixed(3))}`);
}
