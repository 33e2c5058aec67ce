/**
 * What an upstream server offers besides its tools, to a client of the 2026-07-28 revision (no session, `_meta` on
 * every request): server-everything's resources, templates, prompts and completions through `toolgate serve
 * --http`, the same answers a 2025-11-25 session gets, the lists and reads with their caching hints, discovery
 * saying what is offered, and a resource nobody has answered as SEP-2164 has it (-32602, the URI in `data`); a
 * server's question while a prompt is got as an input-required round (tests/conformance/offers_server.mjs's
 * prompt that asks), its state good once and for that prompt only, and as an elicitation request to a session's
 * client.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  EVERYTHING_STDIO,
  MODULES,
  nodeServersMissing,
  project,
  serveProject,
  writeOwnServer,
} from "./gateway_support.ts";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { ElicitRequestSchema } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { connectHttp, TOKEN } from "./mcp/helpers.ts";
import { REPO } from "./support.ts";

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

/** A stateless POST of `method` with the revision's headers (`name`: its Mcp-Name; `meta` over the `_meta`). */
async function post(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  name?: string,
  meta: Record<string, unknown> = {},
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
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 3,
      method,
      params: { ...params, _meta: { ...META, ...meta } },
    }),
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
    await using serving = await serveProject(p);
    const session = await connectHttp(serving.url, TOKEN);
    try {
      const discover = await post(serving.url, "server/discover", {});
      const capabilities = discover.result?.capabilities as Record<string, unknown>;
      assert.deepEqual(
        [capabilities.resources, capabilities.prompts, capabilities.completions],
        [{ listChanged: true }, { listChanged: true }, {}],
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

/** The conformance run's upstream server: its prompt `test_input_required_result_prompt` asks the user a form. */
const ASKING_SERVER = join(REPO, "tests", "conformance", "offers_server.mjs");

Deno.test({
  name:
    "offers: a server's question while a prompt is got is an input-required round for a stateless client (its state good once, for that prompt) and an elicitation for a session's",
  ignore,
  async fn() {
    const conf = { command: "node", args: [ASKING_SERVER], permissions: { read: [MODULES, ASKING_SERVER] } };
    await using p = await project({ conf });
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 0, trust.stderr + trust.stdout);
    await using serving = await serveProject(p);
    const name = "mcp__conf__test_input_required_result_prompt";
    const forms = { "io.modelcontextprotocol/clientCapabilities": { elicitation: {} } };
    const first = await post(serving.url, "prompts/get", { name }, name, forms);
    assert.equal(first.status, 200, JSON.stringify(first));
    assert.equal(first.result?.resultType, "input_required", JSON.stringify(first));
    const requests = first.result?.inputRequests as Record<
      string,
      { method: string; params: { message: string } }
    >;
    const [key] = Object.keys(requests);
    assert.equal(requests[key].method, "elicitation/create");
    assert.match(requests[key].params.message, /asks, in its prompt .*What context should the prompt use\?/);
    const requestState = first.result?.requestState;
    assert.equal(typeof requestState, "string");

    // The state is the prompt's: it answers no other prompt (nor a call).
    const other = await post(
      serving.url,
      "prompts/get",
      {
        name: "mcp__conf__test_simple_prompt",
        requestState,
        inputResponses: { [key]: { action: "accept", content: { context: "x" } } },
      },
      "mcp__conf__test_simple_prompt",
      forms,
    );
    assert.equal(other.error?.code, -32602, JSON.stringify(other));

    const answers = { [key]: { action: "accept", content: { context: "the sea" } } };
    const second = await post(
      serving.url,
      "prompts/get",
      { name, requestState, inputResponses: answers },
      name,
      forms,
    );
    assert.equal(second.status, 200, JSON.stringify(second));
    assert.equal(second.result?.resultType, "complete");
    assert.match(JSON.stringify(second.result?.messages), /Use this context: the sea/);
    // Good once.
    const replay = await post(
      serving.url,
      "prompts/get",
      { name, requestState, inputResponses: answers },
      name,
      forms,
    );
    assert.equal(replay.error?.code, -32602, JSON.stringify(replay));

    // A 2025-11-25 session's client is sent the server's question as an elicitation request, as a call's is.
    const asked: string[] = [];
    await using session = await connectHttp(serving.url, TOKEN, {
      capabilities: { elicitation: {} },
      setup: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push(String(request.params.message));
          return { action: "accept", content: { context: "the hills" } };
        }),
    });
    const got = await session.client.getPrompt({ name });
    assert.match(JSON.stringify(got.messages), /Use this context: the hills/);
    assert.equal(asked.length, 1);
    assert.match(asked[0], /asks, in its prompt .*What context should the prompt use\?/);

    // A client that cannot show a form: the server's question is refused, and so the prompt.
    const plainClient = await post(serving.url, "prompts/get", { name }, name);
    assert.ok(plainClient.error !== undefined, JSON.stringify(plainClient));
  },
});

/** A server whose `more` tool adds a prompt and a resource (the SDK says so: prompts/ and resources/list_changed). */
function growingServer(): string {
  const sdk = join(MODULES, "@modelcontextprotocol", "sdk", "dist", "esm");
  return `
import { McpServer } from ${JSON.stringify(join(sdk, "server", "mcp.js"))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, "server", "stdio.js"))};
const server = new McpServer({ name: "own", version: "1.0.0" });
server.registerPrompt("first", { description: "The first." }, () => ({ messages: [] }));
server.registerResource("first", "own://first", { description: "The first." }, (uri) => ({ contents: [{ uri: uri.href, text: "1" }] }));
server.registerTool("more", { description: "Adds a prompt, then a resource." }, async () => {
  server.registerPrompt("added", { description: "Added later." }, () => ({ messages: [] }));
  server.registerResource("added", "own://added", { description: "Added later." }, (uri) => ({ contents: [{ uri: uri.href, text: "2" }] }));
  return { content: [{ type: "text", text: "more" }] };
});
await server.connect(new StdioServerTransport());
`;
}

Deno.test({
  name:
    "offers: a stateless listen stream hears a server's prompt and resource lists change, each stream what it asked for",
  ignore,
  async fn() {
    await using p = await project({});
    await writeOwnServer(p.dir.path, growingServer);
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 0, trust.stderr + trust.stdout);
    await using serving = await serveProject(p, ["--allow-tools", "mcp__own__*"]);
    /** A listen stream asking for `notifications`: its messages as they come, and what ends it. */
    const listen = async (id: string, notifications: Record<string, boolean>) => {
      const ended = new AbortController();
      const response = await fetch(serving.url, {
        method: "POST",
        signal: ended.signal,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${TOKEN}`,
          "mcp-protocol-version": VERSION,
          "mcp-method": "subscriptions/listen",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id,
          method: "subscriptions/listen",
          params: { notifications, _meta: META },
        }),
      });
      assert.equal(response.status, 200);
      const messages: Record<string, unknown>[] = [];
      const reading = (async () => {
        let buffered = "";
        for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) {
          buffered += chunk;
          for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
            const data = buffered.slice(0, end).split("\n").find((line) => line.startsWith("data:"));
            if (data !== undefined) messages.push(JSON.parse(data.slice(5)));
            buffered = buffered.slice(end + 2);
          }
        }
      })().catch(() => {});
      const until = async (method: string) => {
        for (let waited = 0; waited < 30_000; waited += 50) {
          const found = messages.find((m) => m.method === method);
          if (found !== undefined) return found;
          await new Promise((done) => setTimeout(done, 50));
        }
        throw new Error(`${id}: no ${method}; seen: ${JSON.stringify(messages)}`);
      };
      return {
        messages,
        until,
        async end() {
          ended.abort();
          await reading;
        },
      };
    };
    const both = await listen("both", { promptsListChanged: true, resourcesListChanged: true });
    const prompts = await listen("prompts", { promptsListChanged: true });
    try {
      const ack = await both.until("notifications/subscriptions/acknowledged");
      assert.deepEqual((ack.params as Record<string, unknown>).notifications, {
        promptsListChanged: true,
        resourcesListChanged: true,
      });
      await prompts.until("notifications/subscriptions/acknowledged");
      const more = await post(
        serving.url,
        "tools/call",
        { name: "mcp__own__more", arguments: {} },
        "mcp__own__more",
      );
      assert.equal(more.result?.resultType, "complete", JSON.stringify(more));
      for (const method of ["notifications/prompts/list_changed", "notifications/resources/list_changed"]) {
        const changed = await both.until(method);
        const meta = (changed.params as Record<string, Record<string, unknown>>)._meta;
        assert.equal(meta["io.modelcontextprotocol/subscriptionId"], "both");
      }
      await prompts.until("notifications/prompts/list_changed");
      assert.ok(
        !prompts.messages.some((m) => m.method === "notifications/resources/list_changed"),
        "a stream that did not ask for the resources' changes hears none",
      );
      // What the server added is withheld until trusted: the list a client asks again has it not.
      const listed = await post(serving.url, "prompts/list", {});
      assert.deepEqual((listed.result?.prompts as { name: string }[]).map((prompt) => prompt.name), [
        "mcp__own__first",
      ]);
    } finally {
      await both.end();
      await prompts.end();
    }
  },
});
