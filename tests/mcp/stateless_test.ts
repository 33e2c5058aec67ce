/**
 * `toolgate serve` speaking the 2026-07-28 revision (no `initialize`, `_meta` on every request) beside the
 * 2025-11-25 sessions, on Streamable HTTP and on stdio: discovery, a deterministic cacheable tool list, calls down
 * the same path as a session's (approval, audit, envelope), the revision's errors, and the standard headers
 * checked against the body.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { scratch } from "../executor_helpers.ts";
import { REPO } from "../support.ts";
import { baseEnv, connectHttp, envelopeOf, serveArgs, startHttp, TOKEN } from "./helpers.ts";

const VERSION = "2026-07-28";
const META = {
  "io.modelcontextprotocol/protocolVersion": VERSION,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "stateless-test", version: "1" },
};

interface Posted {
  readonly status: number;
  readonly body: Record<string, unknown> & {
    result?: Record<string, unknown>;
    error?: { code: number; message: string; data?: Record<string, unknown> };
  };
}

/** A stateless POST with the standard headers made from the body, `headers` over them (null: left out). */
async function post(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  headers: Record<string, string | null> = {},
  id: number | string = 7,
): Promise<Posted> {
  const all: Record<string, string | null> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    authorization: `Bearer ${TOKEN}`,
    "mcp-protocol-version": VERSION,
    "mcp-method": method,
    ...(typeof params.name === "string" ? { "mcp-name": params.name } : {}),
    ...headers,
  };
  const sent = Object.fromEntries(
    Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== null),
  );
  const response = await fetch(url, {
    method: "POST",
    headers: sent,
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
  });
  assert.equal(response.headers.get("mcp-session-id"), null, "a stateless answer opens no session");
  return { status: response.status, body: await response.json() };
}

Deno.test("serve --http answers the 2026-07-28 revision without initialize, beside a 2025-11-25 session", async (t) => {
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN });

  await t.step("server/discover names both revisions, the tools capability and toolgate", async () => {
    const { status, body } = await post(server.url, "server/discover", { _meta: META });
    assert.equal(status, 200, JSON.stringify(body));
    const result = body.result!;
    assert.equal(result.resultType, "complete");
    assert.deepEqual((result.supportedVersions as string[]).slice(0, 2), [VERSION, "2025-11-25"]);
    assert.deepEqual(result.capabilities, {
      tools: { listChanged: true },
      extensions: { "io.modelcontextprotocol/tasks": {} },
    });
    const meta = result._meta as Record<string, { name: string }>;
    assert.equal(meta["io.modelcontextprotocol/serverInfo"].name, "toolgate");
  });

  await t.step("tools/list: the session's list, in the same order, with ttlMs and cacheScope", async () => {
    const first = await post(server.url, "tools/list", { _meta: META });
    const again = await post(server.url, "tools/list", { _meta: META });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const result = first.body.result!;
    assert.equal(result.resultType, "complete");
    assert.equal(result.cacheScope, "private");
    assert.ok(typeof result.ttlMs === "number" && result.ttlMs >= 0);
    assert.deepEqual(again.body.result!.tools, result.tools);
    await using session = await connectHttp(server.url, TOKEN);
    const { tools } = await session.client.listTools();
    assert.deepEqual(
      (result.tools as { name: string }[]).map((tool) => tool.name),
      tools.map((tool) => tool.name),
    );
  });

  await t.step("tools/call runs the tool; one that needs approval is refused as for a session", async () => {
    const echoed = await post(server.url, "tools/call", {
      name: "echo",
      arguments: { text: "stateless" },
      _meta: META,
    });
    assert.equal(echoed.status, 200, JSON.stringify(echoed.body));
    assert.equal(echoed.body.result!.resultType, "complete");
    assert.deepEqual(echoed.body.result!.structuredContent, { echo: { text: "stateless" } });
    const refused = await post(server.url, "tools/call", {
      name: "note",
      arguments: { text: "x" },
      _meta: META,
    });
    const envelope = envelopeOf(refused.body.result!);
    assert.equal(envelope.kind, "rejected", JSON.stringify(envelope));
    assert.match(String(envelope.message), /cannot be asked/);
    await assert.rejects(Deno.stat(join(dir.path, "notes")));
  });

  await t.step("an unknown tool is a JSON-RPC error, as for a session", async () => {
    const { body } = await post(server.url, "tools/call", { name: "nope", arguments: {}, _meta: META });
    assert.equal(body.error?.code, -32602);
    assert.equal(body.id, 7);
  });

  await t.step("_meta without its version or capabilities: -32602 and 400", async () => {
    const none = await post(server.url, "tools/list", {});
    assert.equal(none.status, 400);
    assert.equal(none.body.error?.code, -32602);
    const { "io.modelcontextprotocol/clientCapabilities": _, ...noCapabilities } = META;
    const partial = await post(server.url, "tools/list", { _meta: noCapabilities });
    assert.equal(partial.status, 400);
    assert.equal(partial.body.error?.code, -32602);
  });

  await t.step("an unknown version: -32022, 400, the supported versions and the one asked", async () => {
    const meta = { ...META, "io.modelcontextprotocol/protocolVersion": "v999" };
    const { status, body } = await post(server.url, "tools/list", { _meta: meta }, {
      "mcp-protocol-version": "v999",
    });
    assert.equal(status, 400);
    assert.equal(body.error?.code, -32022);
    assert.equal(body.error?.data?.requested, "v999");
    assert.ok((body.error?.data?.supported as string[]).includes(VERSION));
  });

  await t.step("methods the revision removed or never had: -32601 and 404, the id kept", async () => {
    for (const method of ["ping", "logging/setLevel", "initialize", "resources/list"]) {
      const { status, body } = await post(server.url, method, { _meta: META }, {}, `id-${method}`);
      assert.equal(status, 404, method);
      assert.equal(body.error?.code, -32601, method);
      assert.equal(body.id, `id-${method}`);
    }
  });

  await t.step("the old client's session still works on the same server", async () => {
    await using session = await connectHttp(server.url, TOKEN);
    const result = await session.client.callTool({ name: "echo", arguments: { text: "session" } });
    assert.deepEqual(result.structuredContent, { echo: { text: "session" } });
    assert.deepEqual(session.protocolErrors, []);
  });
});

Deno.test("serve --http refuses a stateless request whose standard headers disagree with its body: 400, -32020", async (t) => {
  await using dir = await scratch();
  // note may run without asking: only the header check stands between the request and its side effect.
  await using server = await startHttp(["--allow-tools", "note"], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN });
  const notes = join(dir.path, "notes");
  const call = { name: "note", arguments: { text: "written" }, _meta: META };

  const refusals: [string, Record<string, string | null>][] = [
    ["an Mcp-Name that names another tool", { "mcp-name": "echo" }],
    ["no Mcp-Name", { "mcp-name": null }],
    ["an Mcp-Method that names another method", { "mcp-method": "tools/list" }],
    ["an Mcp-Method in other case", { "mcp-method": "TOOLS/CALL" }],
    ["no Mcp-Method", { "mcp-method": null }],
    ["an MCP-Protocol-Version other than _meta's", { "mcp-protocol-version": "2025-11-25" }],
    ["no MCP-Protocol-Version", { "mcp-protocol-version": null }],
  ];
  for (const [what, headers] of refusals) {
    await t.step(`${what}: refused, and the tool does not run`, async () => {
      const { status, body } = await post(server.url, "tools/call", call, headers);
      assert.equal(status, 400, JSON.stringify(body));
      assert.equal(body.error?.code, -32020);
      assert.equal(body.id, 7);
      await assert.rejects(Deno.stat(notes));
    });
  }

  await t.step("the same call with matching headers (whitespace around a value) runs", async () => {
    const { status, body } = await post(server.url, "tools/call", call, { "mcp-name": "  note  " });
    assert.equal(status, 200, JSON.stringify(body));
    assert.deepEqual(body.result!.structuredContent, { written: true });
    assert.equal(await Deno.readTextFile(notes), '{"text":"written"}\n');
  });
});

Deno.test("serve --http holds a tool's Mcp-Param headers (x-mcp-header) to its arguments: a mismatch is 400, -32020", async (t) => {
  await using dir = await scratch();
  await using server = await startHttp(
    [],
    dir.path,
    { TOOLGATE_MCP_TOKEN: TOKEN },
    join(REPO, "tests", "conformance", "tools.json"),
  );
  const listed = await post(server.url, "tools/list", { _meta: META });
  // deno-lint-ignore no-explicit-any
  const tools = listed.body.result!.tools as { name: string; inputSchema: Record<string, any> }[];
  const tool = tools.find((listed) => listed.name === "test_custom_headers")!;
  assert.equal(
    tool.inputSchema.properties.region["x-mcp-header"],
    "Region",
    "the declaration reaches the client",
  );
  const call = { name: "test_custom_headers", arguments: { region: "été" }, _meta: META };
  const refusals: [string, Record<string, string | null>][] = [
    ["another region", { "mcp-param-region": "us" }],
    ["no Mcp-Param-Region", {}],
    ["Base64 that is not", { "mcp-param-region": "=?base64?w6l0w6k?=" }],
  ];
  for (const [what, headers] of refusals) {
    await t.step(`${what}: refused before the tool runs`, async () => {
      const { status, body } = await post(server.url, "tools/call", call, headers);
      assert.equal(status, 400, JSON.stringify(body));
      assert.equal(body.error?.code, -32020);
      assert.match(body.error!.message, /Mcp-Param-Region/);
    });
  }
  await t.step("the region in Base64 (it is not ASCII): the call runs", async () => {
    const { status, body } = await post(server.url, "tools/call", call, {
      "mcp-param-region": "=?base64?w6l0w6k=?=",
    });
    assert.equal(status, 200, JSON.stringify(body));
    assert.deepEqual(body.result!.structuredContent, { received: { region: "été" } });
  });
});

Deno.test("serve on stdio answers the 2026-07-28 revision and a 2025-11-25 session on one connection", async () => {
  await using dir = await scratch();
  const child = new Deno.Command(Deno.execPath(), {
    args: serveArgs([], dir.path),
    cwd: REPO,
    env: baseEnv(),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const next = async (id: number): Promise<Record<string, unknown>> => {
    for (;;) {
      const end = buffered.indexOf("\n");
      if (end >= 0) {
        const message = JSON.parse(buffered.slice(0, end));
        buffered = buffered.slice(end + 1);
        if (message.id === id) return message;
        continue;
      }
      const { value, done } = await lines.read();
      if (done) throw new Error("stdout ended");
      buffered += value;
    }
  };
  const send = (message: unknown) => writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
  try {
    // First, before any initialize: a stateless call.
    await send({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "stdio" }, _meta: META },
    });
    const called = await next(1) as { result: Record<string, unknown> };
    assert.equal(called.result.resultType, "complete");
    assert.deepEqual(called.result.structuredContent, { echo: { text: "stdio" } });
    await send({ jsonrpc: "2.0", id: 2, method: "server/discover", params: { _meta: META } });
    const discovered = await next(2) as { result: { supportedVersions: string[] } };
    assert.ok(discovered.result.supportedVersions.includes("2025-11-25"));
    // Then an old client's handshake and call on the same connection.
    await send({
      jsonrpc: "2.0",
      id: 3,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "old", version: "1" } },
    });
    const initialized = await next(3) as { result: { protocolVersion: string } };
    assert.equal(initialized.result.protocolVersion, "2025-11-25");
    await send({ jsonrpc: "2.0", method: "notifications/initialized" });
    await send({
      jsonrpc: "2.0",
      id: 4,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "old" } },
    });
    const old = await next(4) as { result: Record<string, unknown> };
    assert.deepEqual(old.result.structuredContent, { echo: { text: "old" } });
    assert.equal(old.result.resultType, undefined);
    // A stateless request without its capabilities, on the same connection: the revision's error.
    await send({
      jsonrpc: "2.0",
      id: 5,
      method: "tools/list",
      params: { _meta: { "io.modelcontextprotocol/protocolVersion": VERSION } },
    });
    const invalid = await next(5) as { error: { code: number } };
    assert.equal(invalid.error.code, -32602);
  } finally {
    await writer.close();
    await lines.cancel();
    const status = await child.status;
    assert.equal(status.code, 0);
  }
});

Deno.test("serve --http asks a stateless client's user by an input-required round; its state is good once", async (t) => {
  await using dir = await scratch();
  await using server = await startHttp([], dir.path, { TOOLGATE_MCP_TOKEN: TOKEN });
  const notes = join(dir.path, "notes");
  const asking = { ...META, "io.modelcontextprotocol/clientCapabilities": { elicitation: {} } };
  const call = (text: string, extra: Record<string, unknown> = {}, meta: Record<string, unknown> = asking) =>
    post(server.url, "tools/call", { name: "note", arguments: { text }, _meta: meta, ...extra });
  const lines = async () => (await Deno.readTextFile(notes).catch(() => "")).split("\n").filter(Boolean);
  /** The first round of a call: its question and state; nothing ran. */
  const firstRound = async (text: string, meta: Record<string, unknown> = asking) => {
    const before = await lines();
    const { status, body } = await call(text, {}, meta);
    assert.equal(status, 200, JSON.stringify(body));
    const result = body.result as {
      resultType: string;
      requestState: string;
      inputRequests: Record<string, { method: string; params: { message: string } }>;
    };
    assert.equal(result.resultType, "input_required", JSON.stringify(result));
    assert.deepEqual(await lines(), before, "nothing runs before the answer");
    return result;
  };
  const accept = (always = false) => ({
    toolgate_approval: { action: "accept", content: { always } },
  });

  await t.step("a call that needs approval answers the approval form and a signed state", async () => {
    const round = await firstRound("one");
    const question = round.inputRequests.toolgate_approval;
    assert.equal(question.method, "elicitation/create");
    assert.match(question.params.message, /note/);
    assert.match(round.requestState, /^[\w-]+\.[\w-]+$/);
  });

  await t.step(
    "the retry with the answer and the state runs the call; the same state again is refused",
    async () => {
      const round = await firstRound("two");
      const retry = { inputResponses: accept(), requestState: round.requestState };
      const ran = await call("two", retry);
      assert.equal(ran.body.result?.resultType, "complete", JSON.stringify(ran.body));
      assert.deepEqual(ran.body.result?.structuredContent, { written: true });
      assert.deepEqual(await lines(), ['{"text":"two"}']);
      const replayed = await call("two", retry);
      assert.equal(replayed.status, 400);
      assert.equal(replayed.body.error?.code, -32602);
      assert.match(replayed.body.error!.message, /used already/);
      assert.deepEqual(await lines(), ['{"text":"two"}'], "a replayed state runs nothing");
    },
  );

  await t.step("a tampered state, or one for other arguments, is refused and runs nothing", async () => {
    const round = await firstRound("three");
    const [payload, mac] = round.requestState.split(".");
    const forged = `${payload.slice(0, -2)}${payload.at(-2) === "A" ? "B" : "A"}${payload.at(-1)}.${mac}`;
    const tampered = await call("three", { inputResponses: accept(), requestState: forged });
    assert.equal(tampered.body.error?.code, -32602);
    assert.match(tampered.body.error!.message, /integrity/);
    const rebound = await call("other", { inputResponses: accept(), requestState: round.requestState });
    assert.equal(rebound.body.error?.code, -32602);
    assert.match(rebound.body.error!.message, /another call/);
    assert.deepEqual(await lines(), ['{"text":"two"}']);
  });

  await t.step("an answer without a state is no answer: the user is asked", async () => {
    const { body } = await call("four", { inputResponses: accept(true) });
    assert.equal(body.result?.resultType, "input_required");
    assert.deepEqual(await lines(), ['{"text":"two"}']);
  });

  await t.step("a declined form is the user's no", async () => {
    const round = await firstRound("five");
    const { body } = await call("five", {
      inputResponses: { toolgate_approval: { action: "decline" } },
      requestState: round.requestState,
    });
    assert.equal(envelopeOf(body.result!).kind, "user_denied");
    assert.deepEqual(await lines(), ['{"text":"two"}']);
  });

  await t.step("always holds for the client that said it, not for another client name", async () => {
    const round = await firstRound("six");
    const ran = await call("six", { inputResponses: accept(true), requestState: round.requestState });
    assert.deepEqual(ran.body.result?.structuredContent, { written: true });
    const again = await call("seven");
    assert.deepEqual(again.body.result?.structuredContent, { written: true }, JSON.stringify(again.body));
    const other = {
      ...asking,
      "io.modelcontextprotocol/clientInfo": { name: "another-client", version: "1" },
    };
    await firstRound("eight", other);
    assert.deepEqual(await lines(), ['{"text":"two"}', '{"text":"six"}', '{"text":"seven"}']);
  });

  await t.step("past 256 client names, the one seen longest ago is forgotten: its always too", async () => {
    for (let i = 0; i < 256; i++) {
      const meta = { ...asking, "io.modelcontextprotocol/clientInfo": { name: `flood-${i}`, version: "1" } };
      const { body } = await post(server.url, "tools/call", { name: "nope", arguments: {}, _meta: meta });
      assert.equal(body.error?.code, -32602);
    }
    await firstRound("nine");
  });
});
