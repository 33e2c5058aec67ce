/**
 * An MCP server over HTTP that cannot be reached says why (connection refused, no such host), not "fetch failed",
 * in the envelope a call of its tool answers and on stderr.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runToolgate, tempDir, writeFiles } from "./support.ts";

Deno.test("gateway: an HTTP server that cannot be reached says why: connection refused, no such host", async () => {
  await using dir = await tempDir();
  await using state = await tempDir();
  // A port that was just freed: nothing listens there.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const cases: [string, RegExp][] = [
    [`http://127.0.0.1:${port}/mcp`, /cannot be reached: connection refused/],
    [
      "http://no-such-host.invalid/mcp",
      /cannot be reached: (no such host|the host name could not be looked up)/,
    ],
  ];
  for (const [url, why] of cases) {
    await writeFiles(dir.path, { "tools.json": { tools: [], mcpServers: { web: { url } } } });
    const run = await runToolgate(
      ["call", "mcp__web__look", "{}", "--tools", join(dir.path, "tools.json"), "--sandbox", "off"],
      dir.path,
      { XDG_STATE_HOME: state.path },
    );
    assert.equal(run.code, 1, run.stderr);
    const envelope = JSON.parse(run.stdout);
    assert.equal(envelope.kind, "unavailable");
    assert.match(envelope.message, why);
    assert.doesNotMatch(envelope.message, /fetch failed/);
  }
});
