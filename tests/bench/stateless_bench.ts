/**
 * Benchmarks calls per second of one `toolgate serve --http` answering the same tool (`echo`, read-only, no
 * approval) by the two revisions it speaks, in one run, interleaved: a 2026-07-28 client (the official 2.x
 * client pinned to the revision: no session, `_meta` and the standard headers on every request) against a
 * 2025-11-25 client (the 1.x client in its session). Each variant makes its calls one after the other, so the
 * figure is the round trip of one call, the tool's own process included; the ratio is what the stateless path
 * costs or saves.
 *
 * Run: `deno run -A tests/bench/stateless_bench.ts` (`--rounds N` to change the number of calls per variant).
 *
 * @module
 */
import { Client as StatelessClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { scratch } from "../executor_helpers.ts";
import { connectHttp, startHttp, TOKEN } from "../mcp/helpers.ts";

const WARMUP = 10;
const ROUNDS = 100;
/** Calls of each variant between two switches: short runs, so that the machine's load falls on both alike. */
const BATCH = 10;

/** Stateless calls/s, session calls/s, and their ratio, measured in one run against one server. */
export async function benchStateless(rounds = ROUNDS): Promise<Record<string, number>> {
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN });
  const modern = new StatelessClient({ name: "bench", version: "1" }, {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  await modern.connect(
    new StreamableHTTPClientTransport(server.url, {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  );
  await using old = await connectHttp(server.url, TOKEN);
  const call = {
    stateless: () => modern.callTool({ name: "echo", arguments: { text: "bench" } }),
    session: () => old.client.callTool({ name: "echo", arguments: { text: "bench" } }),
  };
  try {
    for (let i = 0; i < WARMUP; i++) {
      await call.stateless();
      await call.session();
    }
    const spent = { stateless: 0, session: 0 };
    for (let done = 0; done < rounds; done += BATCH) {
      for (const variant of ["stateless", "session"] as const) {
        const started = performance.now();
        for (let i = 0; i < BATCH; i++) await call[variant]();
        spent[variant] += performance.now() - started;
      }
    }
    const calls = Math.ceil(rounds / BATCH) * BATCH;
    const stateless = calls / (spent.stateless / 1000);
    const session = calls / (spent.session / 1000);
    return {
      stateless_calls_per_s: stateless,
      session_calls_per_s: session,
      stateless_over_session: stateless / session,
    };
  } finally {
    await modern.close();
  }
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--rounds");
  const rounds = at >= 0 ? Number(Deno.args[at + 1]) : ROUNDS;
  const result = await benchStateless(rounds);
  console.log("variant     calls/s");
  console.log(`stateless   ${result.stateless_calls_per_s.toFixed(1)}`);
  console.log(`session     ${result.session_calls_per_s.toFixed(1)}`);
  console.log(`ratio       ${result.stateless_over_session.toFixed(2)} (stateless / session)`);
}
