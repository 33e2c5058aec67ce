/**
 * What an upstream server offers besides its tools, to a client of the 2026-07-28 revision (no session, `_meta` on
 * every request): server-everything's resources, templates, prompts and completions through `toolgate serve
 * --http`, the same answers a 2025-11-25 session gets, the lists and reads with their caching hints, discovery
 * saying what is offered, and a resource nobody has answered as SEP-2164 has it (-32602, the URI in `data`).
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { EVERYTHING_STDIO, nodeServersMissing, project } from "./gateway_support.ts";
import { connectHttp, spawnHttp, TOKEN } from "./mcp/helpers.ts";
import { denoDir, launcherArgs } from "./support.ts";

const ignore = await nodeServersMissing("gateway_offers_stateless_test") !== undefined;

const VERSION = "2026-07-28";
const META = {
  "io.modelcontextprotocol/protocolVersion": VERSION,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "offers-stateless-test", version: "1" },
};

interface Answer {
  readonly status: number;
  readonly result?: Record<string, unknown>;
  readonly error?: { code: number; message: string; data?: Record<string, unknown> };
}

/** A stateless POST of `method` with the revision's headers (`name`: its Mcp-Name). */
async function post(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  name?: string,
): Promise<Answer> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${TOKEN}`,
      "mcp-protocol-version": VERSION,
      "mcp-method": method,
      ...(name === undefined ? {} : { "mcp-name": name }),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 3, method, params: { ...params, _meta: META } }),
  });
  const body = await response.json();
  return { status: response.status, result: body.result, error: body.error };
}

/** The result without the revision's own fields (its kind and caching hints), as a session gets it. */
function plain(result: Record<string, unknown> | undefined): Record<string, unknown> {
  const { resultType: _, ttlMs: _ttl, cacheScope: _scope, ...rest } = result ?? {};
  return rest;
}

Deno.test({
  name:
    "offers to a stateless client: the lists, reads, prompts and completions a session gets, the lists and reads with ttlMs and cacheScope",
  ignore,
  async fn() {
    await using p = await project({ ev: EVERYTHING_STDIO });
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 0, trust.stderr);
    const args = launcherArgs([
      "serve",
      "--http",
      "0",
      "--tools",
      join(p.dir.path, "tools.json"),
      "--cwd",
      p.dir.path,
    ]);
    await using serving = await spawnHttp(Deno.execPath(), args, {
      ...p.env,
      DENO_DIR: denoDir(),
      TOOLGATE_MCP_TOKEN: TOKEN,
    });
    const session = await connectHttp(serving.url, TOKEN);
    try {
      const discover = await post(serving.url, "server/discover", {});
      const capabilities = discover.result?.capabilities as Record<string, unknown>;
      assert.deepEqual(
        [capabilities.resources, capabilities.prompts, capabilities.completions],
        [{}, {}, {}],
        JSON.stringify(discover),
      );

      const hinted = (answer: Answer) => {
        assert.equal(answer.status, 200, JSON.stringify(answer));
        assert.equal(answer.result?.resultType, "complete");
        assert.ok(Number.isInteger(answer.result?.ttlMs) && Number(answer.result?.ttlMs) >= 0);
        assert.equal(answer.result?.cacheScope, "private");
        return plain(answer.result);
      };
      const resources = await session.client.listResources();
      assert.ok(resources.resources.length > 0);
      assert.deepEqual(hinted(await post(serving.url, "resources/list", {})), resources);
      assert.deepEqual(
        hinted(await post(serving.url, "resources/templates/list", {})),
        await session.client.listResourceTemplates(),
      );
      const prompts = await session.client.listPrompts();
      assert.deepEqual(hinted(await post(serving.url, "prompts/list", {})), prompts);

      const uri = resources.resources[0].uri;
      assert.match(uri, /^toolgate\+ev:/);
      assert.deepEqual(
        hinted(await post(serving.url, "resources/read", { uri }, uri)),
        await session.client.readResource({ uri }),
      );
      const simple = prompts.prompts.find((prompt) => (prompt.arguments ?? []).length === 0)!;
      const got = await post(serving.url, "prompts/get", { name: simple.name }, simple.name);
      assert.equal(got.status, 200, JSON.stringify(got));
      assert.deepEqual(plain(got.result), await session.client.getPrompt({ name: simple.name }));
      const withArgs = prompts.prompts.find((prompt) => (prompt.arguments ?? []).length > 0)!;
      const complete = {
        ref: { type: "ref/prompt", name: withArgs.name },
        argument: { name: withArgs.arguments![0].name, value: "" },
      };
      const completed = await post(serving.url, "completion/complete", complete);
      assert.equal(completed.status, 200, JSON.stringify(completed));
      // deno-lint-ignore no-explicit-any -- the request as the stateless one was sent
      assert.deepEqual(plain(completed.result), await session.client.complete(complete as any));

      // A resource of no server of the manifest: -32602, the URI asked in data (SEP-2164).
      const nowhere = "toolgate+nope:test://nonexistent";
      const missing = await post(serving.url, "resources/read", { uri: nowhere }, nowhere);
      assert.equal(missing.error?.code, -32602, JSON.stringify(missing));
      assert.deepEqual(missing.error?.data, { uri: nowhere });
    } finally {
      await session.client.close();
    }
  },
});
